/**
 * What a TOOL or LLM node's step does around its tools when some are MCP tools: one set of server
 * connections for the step (closed when it ends), the definitions completed from the run's recorded
 * tool lists (listing a server once, the first time the run needs it), and the new record to keep.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { ToolDefinition } from '../../engine/model/schema.ts';
import { Redactor } from '../redaction/redactor.ts';
import { McpConnections } from './mcp-client.ts';
import { type RecordedMcpTools, recordedMcpTools, resolveMcpTools } from './mcp-definitions.ts';
import type { SecretResolver, ToolEnvironment } from './types.ts';

export interface ToolStepInput {
  nodeId: string;
  /** The tools the node names, as the compiler gave them. */
  tools: Readonly<Record<string, ToolDefinition>>;
  /** The thread's contextData (where the recorded lists are). */
  contextData: Record<string, unknown>;
  env: ToolEnvironment;
  secrets: SecretResolver | undefined;
  signal: AbortSignal | undefined;
}

export interface ToolStep {
  /** Every tool the node may call, complete (server entries expanded). */
  tools: Record<string, ToolDefinition>;
  /** The thread's new record of MCP tool lists, when this step listed a server (secrets redacted). */
  recorded: RecordedMcpTools | undefined;
  /** Shared with the step's tool executor, so a server listed is not connected to twice. */
  mcp: McpConnections;
  redactor: Redactor;
  /** Closes the step's server connections. Never rejects. */
  close(): Promise<void>;
}

/** Throws the coded failure of a listing, naming the node, with any secret redacted. */
export async function openToolStep(input: ToolStepInput): Promise<ToolStep> {
  const redactor = new Redactor();
  const mcp = new McpConnections({
    env: input.env,
    secrets: input.secrets,
    signal: input.signal,
    redactor,
  });
  try {
    const resolved = await resolveMcpTools(
      input.tools,
      recordedMcpTools(input.contextData),
      (entry, handler) => mcp.listTools(entry, handler),
    );
    return {
      tools: resolved.tools,
      recorded: resolved.recorded === undefined ? undefined : redactor.value(resolved.recorded),
      mcp,
      redactor,
      close: () => mcp.close(),
    };
  } catch (error) {
    await mcp.close();
    if (!(error instanceof StepthreadError)) throw error;
    const { nodeId } = input;
    throw new StepthreadError(error.code, redactor.text(`node ${nodeId}: ${error.message}`), { nodeId });
  }
}
