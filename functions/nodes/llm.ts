/**
 * LLM: renders the prompt and appends it as a user message, then runs the tool-call loop: the model
 * is called with what it sees; while it asks for tools they run and their results go back, up to
 * `maxToolCallsPerRequest`. Every assistant reply, tool call and tool result is appended, in order;
 * the output is the final reply's text. What `code` tools print is kept on the step's result (`logs`),
 * each call's lines under a line naming the tool and the call.
 *
 * Token usage is recorded on the conversation per model call (estimated when the provider reports
 * none). Passing the profile's `tokenLimit` emits TOKEN_LIMIT_EXCEEDED and then follows
 * `onTokenLimit`: `fail` (default) stops at once, before any further tool or model call, and fails
 * the node (nothing of the request is kept, the event is); `continue` carries on.
 *
 * Retries: the step commits only at the end, so a Step Functions retry of an uncommitted step runs
 * the whole request again, tools included — a tool with side effects may see the same call twice.
 * That is accepted (tools should be idempotent, as Lambda targets already must be); the scripted
 * provider still answers the same, because its call counts come from the stored thread.
 */

import type { TokenCounts } from '../../engine/conversation/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent, type StepthreadEvent } from '../../engine/events.ts';
import { renderString } from '../../engine/expression/index.ts';
import { NodeLogicFailure } from '../../engine/lifecycle.ts';
import { llmConfigSchema, type ToolDefinition } from '../../engine/model/schema.ts';
import { type HandlerDeps, providerFactory } from '../handlers/deps.ts';
import type { NodeBehaviour, StepContext } from '../handlers/pipeline.ts';
import type { TaskNode } from '../handlers/task.ts';
import type { ToolSpecs } from '../llm/provider.ts';
import { TokenBudget } from '../llm/token-budget.ts';
import {
  ApprovalNeeded,
  DEFAULT_MAX_TOOL_CALLS,
  type ExecuteTool,
  type ReplyText,
  runToolLoop,
} from '../llm/tool-loop.ts';
import { tracedModelCalls, tracedToolCalls } from '../telemetry/index.ts';
import { createToolExecutor } from '../tools/executor.ts';
import { failsTheRequest } from '../tools/failure.ts';
import { MCP_TOOLS_KEY } from '../tools/mcp-definitions.ts';
import { openToolStep, type ToolStep } from '../tools/mcp-step.ts';
import { ToolCallLogs } from '../tools/tool-logs.ts';
import { parseConfig } from './config.ts';
import { LLM_CALLS_KEY, llmCallsOf } from './llm-calls.ts';
import { storeOutput } from './output-variable.ts';
import { runBudgetFor } from './run-budget.ts';
import { approvalResumeOf, approvalRule, holdTurn } from './tool-approval.ts';
import { toolRuntimeOf } from './tool-runtime.ts';

/** The definitions of the tools the config names, from those the compiler baked into the node. */
function toolsOf(node: TaskNode, names: readonly string[]): Record<string, ToolDefinition> {
  const tools: Record<string, ToolDefinition> = {};
  for (const name of names) {
    const definition = node.tools && Object.hasOwn(node.tools, name) ? node.tools[name] : undefined;
    if (definition === undefined) {
      throw new StepthreadError(
        'UNKNOWN_TOOL',
        `LLM node ${node.id} names tool "${name}", which it was not given`,
        {
          nodeId: node.id,
        },
      );
    }
    Object.defineProperty(tools, name, { value: definition, enumerable: true });
  }
  return tools;
}

/** What the model is told about each tool: never its handler (URLs, ARNs, code). */
function specsOf(tools: Readonly<Record<string, ToolDefinition>>): ToolSpecs {
  return Object.fromEntries(
    Object.entries(tools).map(([name, { description, parameters }]) => [
      name,
      { description: description ?? '', parameters },
    ]),
  );
}

/**
 * Runs the model's tool calls. What `code` tools print goes on the step's result (`ctx.logs`) after
 * each call, under the tool's name and call id, so a request that fails later still keeps it.
 */
function toolExecutor(ctx: StepContext, step: ToolStep): ExecuteTool {
  const { deps } = ctx;
  const runtime = toolRuntimeOf(deps);
  const executor = createToolExecutor({
    tools: step.tools,
    env: runtime.env,
    secrets: runtime.secrets,
    mcp: step.mcp,
    redactor: step.redactor,
    ...(deps.signal ? { signal: deps.signal } : {}),
  });
  const printed = new ToolCallLogs();
  return async (name, args, { callId }) => {
    const result = await executor.execute(name, args);
    if (result.logs) {
      printed.add(name, callId, result.logs);
      ctx.logs = printed.logs();
    }
    if (result.ok) return { ok: true, content: result.content };
    const { code, message } = result.error;
    // A broken definition (or argument checker) fails the node: no reply of the model mends it. The
    // loop shows any other failure to the model as `Error: <content>`.
    return failsTheRequest(result.error)
      ? {
          ok: false,
          content: `${code}: ${message}`,
          failsRequest: new StepthreadError(code, `node ${ctx.node.id}: ${message}`, { nodeId: ctx.node.id }),
        }
      : { ok: false, content: `${code}: ${message}` };
  };
}

/**
 * Where the replies' text goes as it streams, when someone watches: the watcher is told which run,
 * thread, node and step each piece belongs to. A watcher that throws never fails the step.
 */
function replyWatcher(ctx: StepContext): ((piece: ReplyText) => void) | undefined {
  const watch: HandlerDeps['onReplyText'] = ctx.deps.onReplyText;
  if (watch === undefined) return undefined;
  const where = {
    executionId: ctx.envelope.executionId,
    threadId: ctx.thread.id,
    nodeId: ctx.node.id,
    step: (ctx.thread.step ?? 0) + 1,
  };
  return (piece) => {
    try {
      watch({ ...where, ...piece });
    } catch {
      // What is shown of a reply is no part of it.
    }
  };
}

export const llmNode: NodeBehaviour = {
  readsConversation: true,
  async logic(ctx) {
    const { node, thread, deps } = ctx;
    const view = ctx.conversation!;
    const config = parseConfig(llmConfigSchema, node);
    const profile = node.profile;
    if (profile === undefined) {
      throw new StepthreadError('UNKNOWN_PROFILE', `LLM node ${node.id} has no profile`, { nodeId: node.id });
    }
    const tools = toolsOf(node, config.tools ?? []);
    // A request held for a tool call's approval goes on from where it stopped (or asks again).
    const resumed = approvalRule(tools) === undefined ? undefined : await approvalResumeOf(ctx);
    const scope = ctx.scope();
    if (config.systemPrompt !== undefined) {
      const system = renderString(config.systemPrompt, scope);
      const shown = view.visibleMessages().some((m) => m.role === 'system' && m.content === system);
      if (!shown) view.append({ role: 'system', content: system });
    }
    view.append({ role: 'user', content: renderString(config.prompt, scope) });

    const budget = new TokenBudget(thread.conversation, {
      tokenLimit: profile.tokenLimit,
      onTokenLimit: config.onTokenLimit,
      nodeId: node.id,
    });
    const at = deps.env.now();
    const limitEvents = (): StepthreadEvent[] =>
      budget.events.map(({ type, totalTokens, limit }) =>
        createEvent(type, {
          threadId: thread.id,
          workflowId: thread.workflowId,
          at,
          nodeId: node.id,
          totalTokens,
          limit,
        }),
      );

    const runtime = toolRuntimeOf(deps);
    // MCP tools are completed from their servers' lists (read once per run) before the model sees them.
    const step = await openToolStep({
      nodeId: node.id,
      tools,
      contextData: thread.contextData,
      env: runtime.env,
      secrets: runtime.secrets,
      signal: deps.signal,
    });
    let result: Awaited<ReturnType<typeof runToolLoop>>;
    const onReplyText = replyWatcher(ctx);
    // The model calls before the question count again, as in the request that asked it.
    for (const used of resumed?.state.usages ?? []) budget.record(used);
    const needsApproval = approvalRule(step.tools);
    // The run's budget (tokens, cost, tool calls over the whole run): asked before each call, told after.
    const runBudget = runBudgetFor(ctx, profile);
    // The step's usage covers every call of its turn, those made before it asked too.
    for (const used of resumed?.state.usages ?? []) runBudget?.countEarlierCall(used);
    const onUsage = async (usage: TokenCounts) => {
      let limitError: unknown;
      try {
        budget.record(usage);
      } catch (error) {
        limitError = error;
      }
      await runBudget?.afterModelCall(usage);
      if (limitError !== undefined) throw limitError;
    };
    // Traced inside the budget's guard: a call the budget refuses never starts, so it has no span.
    const provider = tracedModelCalls(deps, providerFactory(deps)(profile), profile, node.id);
    const executeTool = tracedToolCalls(deps, toolExecutor(ctx, step), step.tools, step.redactor);
    try {
      result = await runToolLoop({
        provider: runBudget ? runBudget.guardProvider(provider) : provider,
        nodeId: node.id,
        messages: view.visibleMessages(),
        tools: specsOf(step.tools),
        executeTool: runBudget ? runBudget.guardTools(executeTool) : executeTool,
        maxToolCalls: config.maxToolCallsPerRequest ?? DEFAULT_MAX_TOOL_CALLS,
        calls: llmCallsOf(thread),
        countPerNode: profile.provider === 'scripted' && profile.byNode?.[node.id] !== undefined,
        onUsage,
        ...(onReplyText ? { onReplyText } : {}),
        ...(config.parameters ? { parameters: config.parameters } : {}),
        ...(deps.signal ? { signal: deps.signal } : {}),
        ...(needsApproval ? { needsApproval } : {}),
        ...(resumed ? { resume: { state: resumed.state, decision: resumed.decision } } : {}),
      });
    } catch (error) {
      if (error instanceof ApprovalNeeded) await holdTurn(ctx, error, (resumed?.ask ?? 0) + 1);
      // The tokens were spent and the limit events happened even though the node fails: keep them.
      if (runBudget?.usage) ctx.usage = runBudget.usage;
      const kept = [...limitEvents(), ...(runBudget?.warnings ?? [])];
      if (error instanceof StepthreadError && kept.length > 0) throw new NodeLogicFailure(error, kept);
      throw error;
    } finally {
      await step.close();
    }
    if (runBudget?.usage) ctx.usage = runBudget.usage;

    for (const message of result.appended) view.append(message);
    // A node that may ask approval keeps how many questions this run asked: each was a wait of its own.
    const asks = approvalRule(tools) !== undefined;
    if (result.toolCallCount > 0 || asks) {
      ctx.toolCalls = {
        calls: result.toolCallCount,
        failed: result.failedToolCallCount,
        ...(asks ? { approvals: resumed?.ask ?? 0 } : {}),
      };
    }
    thread.contextData = {
      ...thread.contextData,
      [LLM_CALLS_KEY]: result.calls,
      ...(step.recorded ? { [MCP_TOOLS_KEY]: step.recorded } : {}),
    };
    ctx.tokenUsage = budget.state.tokenUsage;
    const events: StepthreadEvent[] = [...limitEvents(), ...(runBudget?.warnings ?? [])];
    if (config.outputVariable !== undefined) {
      events.push(storeOutput(ctx, config.outputVariable, result.finalText));
    }
    return { output: result.finalText, events };
  },
};
