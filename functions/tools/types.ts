/** What calling a tool takes and gives: results as data, never a thrown error. */
import type { CodedError } from '../../engine/errors.ts';
import type { ToolDefinition } from '../../engine/model/schema.ts';
import type { NodeLogs } from '../../engine/thread/types.ts';
import type { Redactor } from '../redaction/redactor.ts';
import type { SandboxRequest, SandboxResult } from '../sandbox/index.ts';
import type { ResolveAll } from './egress.ts';
import type { McpConnections } from './mcp-client.ts';

/** A tool's failure. `status` is set for TOOL_HTTP_ERROR (the response's HTTP status). */
export interface ToolError extends CodedError {
  status?: number;
}

/**
 * `output` is JSON data (it lands in node results); `content` is the text the model reads. `logs`:
 * what a `code` tool printed (capped as a CODE node's output), failed or not; never sent to the model.
 */
export type ToolResult =
  | { ok: true; output: unknown; content: string; logs?: NodeLogs }
  | { ok: false; error: ToolError; logs?: NodeLogs };

export interface ToolExecutor {
  /** Checks the arguments against the tool's schema, then calls it. Never rejects. */
  execute(name: string, args: unknown): Promise<ToolResult>;
  /** Ends what the calls opened (MCP server connections, stdio servers). Never rejects. */
  close(): Promise<void>;
}

/** What an LLM provider is told about a tool. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments: always an object schema. */
  parameters: Record<string, unknown>;
}

/** Looks a secret up by name; undefined when it does not exist. */
export interface SecretResolver {
  resolve(name: string, signal?: AbortSignal): Promise<string | undefined>;
}

/** Invokes a Lambda function synchronously and returns its parsed JSON result; throws when it fails. */
export type LambdaInvoker = (request: {
  functionName: string;
  payload: unknown;
  signal: AbortSignal;
}) => Promise<unknown>;

/** Where tools run and the adapters they use; everything with I/O is injectable for tests. */
export interface ToolEnvironment {
  /**
   * `aws`: lambda tools invoke their `arn`. `local` (the embedded runtime): they call their `module`,
   * or their `arn` through `invokeLambda` when they have no module (e.g. against LocalStack).
   */
  target: 'local' | 'aws';
  /** The workflow file's folder; relative `module` paths resolve from here. */
  workflowDir?: string;
  invokeLambda?: LambdaInvoker;
  /** Runs `code` tools; default the shared CODE sandbox (runCode). */
  sandbox?: { run(request: SandboxRequest): Promise<SandboxResult> };
  /** Resolves host names for http tools (every address); default the system resolver (dns.lookup). */
  resolveAll?: ResolveAll;
  /** Largest tool output (and HTTP response body) accepted, in bytes; default 256 KiB. */
  maxOutputBytes?: number;
}

export interface ToolExecutorOptions {
  tools: Readonly<Record<string, ToolDefinition>>;
  env: ToolEnvironment;
  /** Resolves `{{secrets.NAME}}` in http tools; without it such tools fail with TOOL_FAILED. */
  secrets?: SecretResolver;
  /** Aborts calls in flight (run cancelled, join decided); they end with TOOL_FAILED. */
  signal?: AbortSignal;
  /** Connections to MCP servers shared with the caller (which closes them); default the executor's own. */
  mcp?: McpConnections;
  /** Where resolved secrets are collected for redaction, when the caller shares one; default the executor's own. */
  redactor?: Redactor;
}
