/**
 * LLM: renders the prompt, appends it as a user message, calls the provider with what the model
 * sees, appends the reply. Token usage is counted on the conversation (estimated when the provider
 * reports none); going over the profile's limit fails the node, and nothing of the call is kept.
 */
import { estimateTokens, recordTokenUsage, withTokenLimit } from '../../engine/conversation/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent, type StepthreadEvent } from '../../engine/events.ts';
import { renderString } from '../../engine/expression/index.ts';
import { llmConfigSchema } from '../../engine/model/schema.ts';
import { setVariable } from '../../engine/thread/index.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { providerFactory } from '../handlers/deps.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { countCall, type LlmCallCounts, NO_CALLS } from '../llm/provider.ts';
import { parseConfig } from './config.ts';

/** Where the thread keeps its LLM call counts (see LlmCallCounts). */
export const LLM_CALLS_KEY = 'llmCalls';

export function llmCallsOf(thread: Pick<Thread, 'contextData'>): LlmCallCounts {
  const value = thread.contextData[LLM_CALLS_KEY] as LlmCallCounts | undefined;
  return value ?? NO_CALLS;
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
    const scope = ctx.scope();
    if (config.systemPrompt !== undefined) {
      const system = renderString(config.systemPrompt, scope);
      const shown = view.visibleMessages().some((m) => m.role === 'system' && m.content === system);
      if (!shown) view.append({ role: 'system', content: system });
    }
    view.append({ role: 'user', content: renderString(config.prompt, scope) });
    const messages = view.visibleMessages();
    const calls = llmCallsOf(thread);
    const provider = providerFactory(deps)(profile);
    const response = await provider.complete({
      nodeId: node.id,
      messages,
      calls,
      ...(config.parameters ? { parameters: config.parameters } : {}),
      ...(node.tools ? { tools: node.tools } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
    const reply = { ...response.message, role: 'assistant' as const };
    view.append(reply);
    thread.contextData = { ...thread.contextData, [LLM_CALLS_KEY]: countCall(calls, node.id) };

    const usage = response.usage ?? {
      promptTokens: estimateTokens(messages),
      completionTokens: estimateTokens([reply]),
    };
    const limited =
      profile.tokenLimit !== undefined && thread.conversation.tokenUsage.limit !== profile.tokenLimit
        ? withTokenLimit(thread.conversation, { tokenLimit: profile.tokenLimit })
        : thread.conversation;
    const recorded = recordTokenUsage(limited, usage);
    const { totalTokens, limit } = recorded.state.tokenUsage;
    const at = deps.env.now();
    const base = { threadId: thread.id, workflowId: thread.workflowId, at, nodeId: node.id, totalTokens };
    const events: StepthreadEvent[] = recorded.events.map((type) =>
      createEvent(type, { ...base, limit: limit ?? 0 }),
    );
    if (recorded.events.includes('TOKEN_LIMIT_EXCEEDED')) {
      throw new StepthreadError(
        'TOKEN_LIMIT_EXCEEDED',
        `node ${node.id}: ${totalTokens} tokens used, over the limit of ${limit}`,
        { nodeId: node.id },
      );
    }
    ctx.tokenUsage = recorded.state.tokenUsage;
    if (config.outputVariable !== undefined) {
      const change = setVariable(
        thread.variables,
        config.outputVariable,
        reply.content,
        undefined,
        node.variables,
        {
          nodeId: node.id,
        },
      );
      events.push(
        createEvent('VARIABLE_CHANGED', {
          threadId: thread.id,
          workflowId: thread.workflowId,
          at,
          nodeId: node.id,
          name: change.name,
          scope: change.scope,
        }),
      );
    }
    return { output: reply.content, events };
  },
};
