/**
 * TOOL: calls one tool with the node's templated arguments. The output (JSON data) is the node's
 * result and, when the config names one, goes to `outputVariable`. A failing tool ends the node
 * FAILED with the tool's coded error naming the node; it never crashes the runtime. What a `code`
 * tool prints is kept on the step's result (`logs`), as a CODE node's is.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import { toolNodeConfigSchema } from '../../engine/model/schema.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { tracedToolNodeCall } from '../telemetry/index.ts';
import { MCP_TOOLS_KEY } from '../tools/mcp-definitions.ts';
import { callToolForNode } from '../tools/tool-node.ts';
import { parseConfig } from './config.ts';
import { storeOutput } from './output-variable.ts';
import { runBudgetFor } from './run-budget.ts';
import { toolRuntimeOf } from './tool-runtime.ts';

export const toolNode: NodeBehaviour = {
  async logic(ctx) {
    const { node, deps } = ctx;
    const config = parseConfig(toolNodeConfigSchema, node);
    if (node.tool === undefined) {
      throw new StepthreadError(
        'UNKNOWN_TOOL',
        `TOOL node ${node.id} calls "${config.toolName}" but was given no tool definition`,
        { nodeId: node.id },
      );
    }
    const runtime = toolRuntimeOf(deps);
    const { signal } = deps;
    // Counted toward the run's maxToolCalls before it runs; refused once that is spent.
    const runBudget = runBudgetFor(ctx);
    await runBudget?.beforeToolCall();
    let output: unknown;
    try {
      const tool = node.tool;
      output = await tracedToolNodeCall(deps, config.toolName, tool, () =>
        callToolForNode({
          nodeId: node.id,
          config,
          tool,
          scope: ctx.scope(),
          env: runtime.env,
          secrets: runtime.secrets,
          ...(signal ? { signal } : {}),
          // Kept on the step's result as a CODE node's output is, failed or not.
          onLogs: (logs) => {
            ctx.logs = logs;
          },
          contextData: ctx.thread.contextData,
          // The MCP tool list read for this call stays with the run, for its later steps and replays.
          onMcpTools: (recorded) => {
            ctx.thread.contextData = { ...ctx.thread.contextData, [MCP_TOOLS_KEY]: recorded };
          },
        }),
      );
    } catch (error) {
      // Cancelled because the run ended: abandon the step (a plain error), don't record a failure.
      if (signal?.aborted) throw signal.reason ?? error;
      throw error;
    }
    const events: StepthreadEvent[] = [...(runBudget?.warnings ?? [])];
    if (config.outputVariable !== undefined) events.push(storeOutput(ctx, config.outputVariable, output));
    return { output, events };
  },
};
