/**
 * What a TOOL node does with its tool: render the arguments over the node's scope, call the tool,
 * and throw the tool's coded failure so the node ends FAILED with its message (never a crash).
 */

import { StepthreadError } from '../../engine/errors.ts';
import type { Scope } from '../../engine/expression/index.ts';
import { renderTemplate } from '../../engine/expression/index.ts';
import type { ToolDefinition, ToolNodeConfig } from '../../engine/model/schema.ts';
import type { NodeLogs } from '../../engine/thread/types.ts';
import { createToolExecutor } from './executor.ts';
import type { RecordedMcpTools } from './mcp-definitions.ts';
import { openToolStep } from './mcp-step.ts';
import type { SecretResolver, ToolEnvironment } from './types.ts';

export interface ToolNodeCall {
  nodeId: string;
  config: ToolNodeConfig;
  /** The definition the compiler baked into the node (`node.tool`). */
  tool: ToolDefinition;
  /** Variables and node results the argument templates read. */
  scope: Scope;
  env: ToolEnvironment;
  secrets?: SecretResolver;
  signal?: AbortSignal;
  /** Told what a `code` tool printed, whether the call succeeded or not (the node keeps it). */
  onLogs?: (logs: NodeLogs) => void;
  /** The thread's contextData, where the MCP tool lists the run read are recorded. */
  contextData?: Record<string, unknown>;
  /** Told the thread's new record when the call listed an MCP server's tools (mcp-definitions.ts). */
  onMcpTools?: (recorded: RecordedMcpTools) => void;
}

/**
 * The tool's output (JSON data), to record as the node's output and, when the config names an
 * `outputVariable`, to store there. Throws StepthreadError (EXPRESSION_ERROR for a failing argument
 * template, the tool's code for a failed call) carrying the node id.
 */
export async function callToolForNode(call: ToolNodeCall): Promise<unknown> {
  const { nodeId, config } = call;
  let args: unknown;
  try {
    args = renderTemplate(config.arguments ?? {}, call.scope);
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    throw new StepthreadError(error.code, `node ${nodeId}: tool arguments: ${error.message}`, {
      nodeId,
      cause: error,
    });
  }
  const step = await openToolStep({
    nodeId,
    tools: { [config.toolName]: call.tool },
    contextData: call.contextData ?? {},
    env: call.env,
    secrets: call.secrets,
    signal: call.signal,
  });
  const executor = createToolExecutor({
    tools: step.tools,
    env: call.env,
    mcp: step.mcp,
    redactor: step.redactor,
    ...(call.secrets ? { secrets: call.secrets } : {}),
    ...(call.signal ? { signal: call.signal } : {}),
  });
  let result: Awaited<ReturnType<typeof executor.execute>>;
  try {
    result = await executor.execute(config.toolName, args);
  } finally {
    await step.close();
  }
  if (step.recorded) call.onMcpTools?.(step.recorded);
  if (result.logs) call.onLogs?.(result.logs);
  if (result.ok) return result.output;
  throw new StepthreadError(result.error.code, `node ${nodeId}: ${result.error.message}`, { nodeId });
}
