/**
 * Calls declared tools by name: look up, check the arguments against the tool's JSON Schema, run
 * by kind, normalise the output to JSON (with what a `code` tool printed). Every failure is a
 * ToolResult with a code, never a thrown error, and no secret value survives into a result or message.
 */
import type { ToolDefinition } from '../../engine/model/schema.ts';
import { parseToolHandler, type ToolHandler } from '../../engine/model/tool-handler.ts';
import type { NodeLogs } from '../../engine/thread/types.ts';
import { Redactor } from '../redaction/redactor.ts';
import { checkArguments } from './arguments.ts';
import { callCodeTool } from './code.ts';
import { systemResolveAll } from './egress.ts';
import { ToolFailure, toToolError } from './failure.ts';
import { callHttpTool } from './http.ts';
import { callLambdaTool } from './lambda.ts';
import { McpConnections } from './mcp-client.ts';
import { McpToolOutput, mcpToolOutput } from './mcp-result.ts';
import { contentOf, DEFAULT_MAX_OUTPUT_BYTES, toJsonOutput } from './output.ts';
import type { ToolExecutor, ToolExecutorOptions, ToolResult } from './types.ts';

export function createToolExecutor(options: ToolExecutorOptions): ToolExecutor {
  const { tools, env, secrets, signal } = options;
  const maxOutputBytes = env.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  // Every secret any call of this executor resolved is redacted from every later result too.
  const redactor = options.redactor ?? new Redactor();
  // MCP servers are connected on first use and stay open until close().
  let mcp = options.mcp;
  const servers = () => {
    mcp ??= new McpConnections({ env, secrets, signal, redactor });
    return mcp;
  };
  return {
    async close() {
      // Only what this executor opened: connections it was given are their owner's to close.
      if (options.mcp === undefined) await mcp?.close();
    },
    async execute(name, args) {
      let result: ToolResult;
      let logs: NodeLogs | undefined;
      const printed = (captured: NodeLogs) => {
        logs = captured;
      };
      try {
        const definition = lookup(tools, name);
        const handler = handlerOf(name, definition);
        const checked = await checkArguments(name, definition, args ?? {});
        const raw = await run(name, handler, checked, redactor, printed);
        if (raw instanceof McpToolOutput) {
          result = { ok: true, output: toJsonOutput(name, raw.output, maxOutputBytes), content: raw.content };
        } else {
          const output = toJsonOutput(name, raw, maxOutputBytes);
          result = { ok: true, output, content: contentOf(output) };
        }
      } catch (error) {
        result = { ok: false, error: toToolError(error, name) };
      }
      return redactor.value(logs ? { ...result, logs } : result);
    },
  };

  function run(
    name: string,
    handler: ToolHandler,
    args: unknown,
    redactor: Redactor,
    onLogs: (logs: NodeLogs) => void,
  ): Promise<unknown> {
    if (signal?.aborted) throw new ToolFailure('TOOL_FAILED', `tool "${name}": the call was cancelled`);
    switch (handler.kind) {
      case 'lambda':
        return callLambdaTool({
          toolName: name,
          target: handler,
          timeoutMs: handler.timeoutMs,
          args,
          env,
          signal,
        });
      case 'http':
        return callHttpTool({
          toolName: name,
          handler,
          args,
          secrets,
          signal,
          resolveAll: env.resolveAll ?? systemResolveAll,
          maxResponseBytes: maxOutputBytes,
          redactor,
        });
      case 'code':
        return callCodeTool(name, handler, args, env, maxOutputBytes, onLogs);
      case 'builtin':
        return Promise.resolve(args);
      case 'mcp':
        return servers()
          .callTool(name, handler, args)
          .then((result) => mcpToolOutput(name, result));
    }
  }
}

function lookup(tools: Readonly<Record<string, ToolDefinition>>, name: string): ToolDefinition {
  const definition = Object.hasOwn(tools, name) ? tools[name] : undefined;
  if (definition) return definition;
  const known = Object.keys(tools);
  throw new ToolFailure(
    'TOOL_NOT_FOUND',
    `tool "${name}" is not available here${known.length > 0 ? ` (available: ${known.join(', ')})` : ''}`,
  );
}

function handlerOf(name: string, definition: ToolDefinition): ToolHandler {
  const parsed = parseToolHandler(definition.handler);
  if (parsed.ok) return parsed.handler;
  throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${name}": ${parsed.message}`);
}

/** The text an LLM node gives the model for a tool call's result, failures included. */
export function toolResultText(result: ToolResult): string {
  return result.ok ? result.content : `Error (${result.error.code}): ${result.error.message}`;
}
