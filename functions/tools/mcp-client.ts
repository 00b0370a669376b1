/**
 * Connections to MCP servers for one step, through `@modelcontextprotocol/sdk`'s client: a server
 * reached over Streamable HTTP (through the egress-guarded fetch of mcp-fetch.ts) or started as a
 * process speaking over stdio (locally only). A step opens each server it uses once, however many
 * of its tools it lists or calls, and closes them all when it ends (`close`).
 *
 * Secrets (`{{secrets.NAME}}` in the url, headers and a stdio server's env) are resolved as for http
 * tools and handed to the redactor as soon as they are read, so no result, error or recorded
 * definition keeps one.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StepthreadError } from '../../engine/errors.ts';
import { hasTemplate } from '../../engine/expression/template-syntax.ts';
import type { McpToolHandler } from '../../engine/model/schema.ts';
import type { Redactor } from '../redaction/redactor.ts';
import { type ResolveAll, systemResolveAll } from './egress.ts';
import { describe, ToolFailure } from './failure.ts';
import { render, renderUrl, resolveTemplateSecrets } from './http.ts';
import { guardedFetch } from './mcp-fetch.ts';
import type { SecretResolver, ToolEnvironment } from './types.ts';

export const DEFAULT_MCP_TIMEOUT_MS = 30_000;
/** tools/list pages read at most (a server that pages forever is cut off). */
const MAX_LIST_PAGES = 20;
/** What a stdio server last wrote on stderr, kept to explain a failure. */
const STDERR_TAIL_CHARS = 2_000;
const CLIENT_INFO = { name: 'stepthread', version: '1' };

/** A tool as the server's tools/list describes it. */
export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export interface McpConnectionsOptions {
  env: ToolEnvironment;
  secrets: SecretResolver | undefined;
  signal: AbortSignal | undefined;
  /** Gets every secret as soon as it is resolved. */
  redactor: Redactor;
}

interface Connection {
  client: Client;
  /** A coded failure the transport saw (egress refused, response too large), preferred over the SDK's. */
  failure?: ToolFailure;
  /**
   * Aborted with that failure: a broken response stream is not always a failed request to the SDK
   * (it may wait for the rest of an SSE stream), so the request in flight is ended here.
   */
  failed: AbortController;
  stderr?: () => string;
}

export class McpConnections {
  private readonly open = new Map<string, Promise<Connection>>();

  constructor(private readonly options: McpConnectionsOptions) {}

  /** Every tool the server offers (all pages of tools/list). */
  async listTools(toolName: string, handler: McpToolHandler): Promise<McpToolInfo[]> {
    return this.request(toolName, handler, 'listing its tools', async (client, requestOptions) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await client.listTools(cursor === undefined ? {} : { cursor }, requestOptions);
        for (const tool of result.tools) {
          tools.push({
            name: tool.name,
            ...(tool.description === undefined ? {} : { description: tool.description }),
            inputSchema: tool.inputSchema as Record<string, unknown>,
          });
        }
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
      return tools;
    });
  }

  /** The server's CallToolResult for `handler.tool`, as it sent it. */
  async callTool(toolName: string, handler: McpToolHandler, args: unknown): Promise<unknown> {
    const name = handler.tool;
    if (name === undefined)
      throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${toolName}": the entry names no "tool"`);
    return this.request(toolName, handler, `calling "${name}"`, (client, requestOptions) =>
      client.callTool(
        { name, arguments: (args ?? {}) as Record<string, unknown> },
        undefined,
        requestOptions,
      ),
    );
  }

  /** Closes every connection the step opened (stdio servers are stopped). */
  async close(): Promise<void> {
    const open = [...this.open.values()];
    this.open.clear();
    await Promise.all(
      open.map(async (pending) => {
        try {
          const { client } = await pending;
          await client.close();
        } catch {
          // Closing is best effort: the step's outcome is already decided.
        }
      }),
    );
  }

  private async request<T>(
    toolName: string,
    handler: McpToolHandler,
    what: string,
    run: (client: Client, options: { signal: AbortSignal; timeout: number }) => Promise<T>,
  ): Promise<T> {
    const timeoutMs = handler.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const { signal: cancel } = this.options;
    const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout;
    if (cancel?.aborted) throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": the call was cancelled`);
    let connection: Connection | undefined;
    const key = connectionKey(handler);
    try {
      connection = await this.connection(key, toolName, handler, signal, timeoutMs);
      const live = AbortSignal.any([signal, connection.failed.signal]);
      return await run(connection.client, { signal: live, timeout: timeoutMs });
    } catch (error) {
      const failure = await this.failure(error, { toolName, handler, what, connection, timeout, timeoutMs });
      // A connection whose transport failed is not used again: the next request connects afresh.
      if (connection?.failure) this.evict(key, connection);
      throw failure;
    }
  }

  private evict(key: string, connection: Connection): void {
    const pending = this.open.get(key);
    if (pending === undefined) return;
    void pending.then(
      (open) => {
        if (open !== connection) return;
        if (this.open.get(key) === pending) this.open.delete(key);
        return connection.client.close().catch(() => {});
      },
      () => {},
    );
  }

  private connection(
    key: string,
    toolName: string,
    handler: McpToolHandler,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<Connection> {
    let pending = this.open.get(key);
    if (pending === undefined) {
      pending = this.connect(toolName, handler, signal, timeoutMs);
      this.open.set(key, pending);
      // A failed connection is not reused: the next request tries again.
      pending.catch(() => {
        if (this.open.get(key) === pending) this.open.delete(key);
      });
    }
    return pending;
  }

  private async connect(
    toolName: string,
    handler: McpToolHandler,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<Connection> {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const connection: Connection = { client, failed: new AbortController() };
    const transport =
      handler.url !== undefined
        ? await this.httpTransport(toolName, handler.url, handler, connection)
        : await this.stdioTransport(toolName, handler, connection);
    try {
      await client.connect(transport, {
        signal: AbortSignal.any([signal, connection.failed.signal]),
        timeout: timeoutMs,
      });
    } catch (error) {
      await client.close().catch(() => {});
      throw new ConnectFailed(error, connection);
    }
    return connection;
  }

  private async httpTransport(
    toolName: string,
    urlTemplate: string,
    handler: McpToolHandler,
    connection: Connection,
  ) {
    const call = { toolName, ...this.options };
    const secrets = await resolveTemplateSecrets(call, [
      urlTemplate,
      ...Object.values(handler.headers ?? {}),
    ]);
    const { url, origin } = renderUrl(toolName, urlTemplate, undefined, secrets);
    const headers: Record<string, string> = {};
    for (const [name, template] of Object.entries(handler.headers ?? {})) {
      if (name.toLowerCase() === 'host' && hasTemplate(template))
        throw new ToolFailure(
          'INVALID_TOOL_DEFINITION',
          `tool "${toolName}": the Host header must be literal`,
        );
      headers[name] = render(toolName, template, { secrets });
    }
    const resolveAll: ResolveAll = this.options.env.resolveAll ?? systemResolveAll;
    const fetch = guardedFetch({
      policy: { toolName, allowPrivateNetwork: handler.allowPrivateNetwork === true, resolveAll },
      origin,
      maxResponseBytes: this.options.env.maxOutputBytes ?? Number.POSITIVE_INFINITY,
      onFailure: (failure) => {
        connection.failure ??= failure;
        connection.failed.abort(failure);
      },
    });
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    // No reconnection: a step that lost its server fails, and Step Functions retries the step.
    return new StreamableHTTPClientTransport(url, {
      fetch,
      requestInit: { headers },
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 1_000,
        maxReconnectionDelay: 1_000,
        reconnectionDelayGrowFactor: 1,
      },
    });
  }

  private async stdioTransport(toolName: string, handler: McpToolHandler, connection: Connection) {
    const [command, ...args] = handler.command ?? [];
    if (command === undefined)
      throw new ToolFailure(
        'INVALID_TOOL_DEFINITION',
        `tool "${toolName}": give the server a "url" or a "command"`,
      );
    const { env: where } = this.options;
    if (where.target === 'aws') {
      throw new ToolFailure(
        'MCP_STDIO_NOT_DEPLOYABLE',
        `tool "${toolName}": a stdio MCP server ("command") runs only locally (run, dev); give it a "url" to use it on AWS`,
      );
    }
    const call = { toolName, ...this.options };
    const secrets = await resolveTemplateSecrets(call, Object.values(handler.env ?? {}));
    const env: Record<string, string> = {};
    for (const [name, template] of Object.entries(handler.env ?? {}))
      env[name] = render(toolName, template, { secrets });
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const transport = new StdioClientTransport({
      command,
      args,
      env,
      stderr: 'pipe',
      ...(where.workflowDir ? { cwd: where.workflowDir } : {}),
    });
    let tail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    connection.stderr = () => tail.trim();
    return transport;
  }

  /** Any failure of a request as a coded ToolFailure naming the server and what was being done. */
  private async failure(
    error: unknown,
    context: {
      toolName: string;
      handler: McpToolHandler;
      what: string;
      connection: Connection | undefined;
      timeout: AbortSignal;
      timeoutMs: number;
    },
  ): Promise<StepthreadError> {
    const { toolName, handler, what, timeout, timeoutMs } = context;
    const connection = context.connection ?? (error instanceof ConnectFailed ? error.connection : undefined);
    const cause = error instanceof ConnectFailed ? error.cause : error;
    if (connection?.failure) return connection.failure;
    if (cause instanceof StepthreadError) return cause;
    const server = serverName(handler);
    if (timeout.aborted || isRequestTimeout(cause)) {
      return new ToolFailure(
        'TOOL_TIMEOUT',
        `tool "${toolName}": the MCP server ${server} did not answer within ${timeoutMs} ms (${what})`,
      );
    }
    if (this.options.signal?.aborted)
      return new ToolFailure('TOOL_FAILED', `tool "${toolName}": the call was cancelled`);
    const status = httpStatusOf(cause);
    const stderr = connection?.stderr?.();
    const detail = `${describe(cause)}${stderr ? ` (its stderr: ${stderr})` : ''}`;
    const message = `tool "${toolName}": the MCP server ${server} failed ${what}: ${detail}`;
    return status === undefined
      ? new ToolFailure('TOOL_FAILED', message, { cause })
      : new ToolFailure('TOOL_HTTP_ERROR', message, { status, cause });
  }
}

/** Requests with the same server settings share a connection. */
function connectionKey(handler: McpToolHandler): string {
  return JSON.stringify([
    handler.url,
    handler.command,
    handler.headers,
    handler.env,
    handler.allowPrivateNetwork,
  ]);
}

/** A failed connect, carrying the connection so its coded failure (if any) is not lost. */
class ConnectFailed extends Error {
  constructor(
    cause: unknown,
    readonly connection: Connection,
  ) {
    super('connect failed', { cause });
  }
}

/** How errors name a server: its origin (the path may hold a secret) or its program. */
function serverName(handler: McpToolHandler): string {
  if (handler.command !== undefined) return `"${handler.command[0]}"`;
  try {
    return new URL(handler.url ?? '').origin;
  } catch {
    return 'at its url';
  }
}

function isRequestTimeout(error: unknown): boolean {
  // The SDK's McpError for a request it gave up waiting on (ErrorCode.RequestTimeout).
  return (error as { code?: unknown } | null)?.code === -32001;
}

/** The HTTP status of the SDK's StreamableHTTPError (its `code`), when it is one. */
function httpStatusOf(error: unknown): number | undefined {
  if (!(error instanceof Error) || !error.message.startsWith('Streamable HTTP error')) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' && code >= 100 && code <= 599 ? code : undefined;
}
