/**
 * MCP tool definitions as a node uses them. A declaration may leave out `description` and
 * `parameters` (they come from the server's tools/list), and a server entry (no `tool`) stands for
 * every tool of its server, offered as `<entry>_<tool>` (its `tools` allow-list narrows them). What
 * the server listed is read once per run and recorded on the thread (`contextData.mcpTools`, per
 * entry, only the tools the entry uses), so a retry, a resumed run and every later step see the same
 * definitions; a FORK hands the record to its branches. Declared descriptions and parameters win.
 */
import { isRecord } from '../../engine/model/paths.ts';
import type { McpToolHandler, ToolDefinition } from '../../engine/model/schema.ts';
import { canonicalJson } from '../stores/canonical-json.ts';
import { MCP_TOOLS_SLOT } from '../stores/value-refs.ts';
import { ToolFailure } from './failure.ts';
import type { McpToolInfo } from './mcp-client.ts';

/**
 * Where a thread keeps the tool lists it read from MCP servers (entry name → tools); each list is a
 * value slot, stored by reference when large, so a thread's head stays small.
 */
export const MCP_TOOLS_KEY = MCP_TOOLS_SLOT;

export type RecordedMcpTools = Record<string, McpToolInfo[]>;

/** A server entry offers at most this many tools (an allow-list picks among more). */
export const MAX_MCP_TOOLS_PER_ENTRY = 128;
/** The largest recorded list of one entry, as JSON: what one server adds to a run's state. */
export const MAX_RECORDED_MCP_BYTES = 256 * 1024;
/** What LLM APIs accept in a tool name (OpenAI's rule, the strictest), for the server's part of one. */
const TOOL_NAME_PART = /^[A-Za-z0-9_-]{1,64}$/;

export type ListMcpTools = (entry: string, handler: McpToolHandler) => Promise<McpToolInfo[]>;

export interface ResolvedTools {
  /** Every tool the node may call, server entries expanded, each with its description and parameters. */
  tools: Record<string, ToolDefinition>;
  /** The thread's record with what this resolution listed; undefined when nothing new was listed. */
  recorded: RecordedMcpTools | undefined;
}

/** The recorded lists of a thread (an absent or malformed record is none). */
export function recordedMcpTools(contextData: Record<string, unknown>): RecordedMcpTools {
  const value = contextData[MCP_TOOLS_KEY];
  return isRecord(value) ? (value as RecordedMcpTools) : {};
}

/** Whether the definition needs its server's tool list. */
export function needsMcpList(definition: ToolDefinition): boolean {
  const { handler } = definition;
  if (typeof handler === 'string' || handler.kind !== 'mcp') return false;
  return (
    handler.tool === undefined || definition.description === undefined || definition.parameters === undefined
  );
}

/**
 * The definitions with every MCP gap filled from the recorded lists, listing (and recording) the
 * servers not listed yet in this run. Throws a coded StepthreadError naming the tool.
 */
export async function resolveMcpTools(
  tools: Readonly<Record<string, ToolDefinition>>,
  recorded: RecordedMcpTools,
  list: ListMcpTools,
): Promise<ResolvedTools> {
  const resolved: Record<string, ToolDefinition> = {};
  let added: RecordedMcpTools | undefined;
  const put = (name: string, definition: ToolDefinition) => {
    if (Object.hasOwn(resolved, name)) {
      throw new ToolFailure(
        'INVALID_TOOL_DEFINITION',
        `tool "${name}" is offered twice (a server entry's <entry>_<tool> name is also declared); rename one`,
      );
    }
    Object.defineProperty(resolved, name, { value: definition, enumerable: true });
  };
  for (const [entry, definition] of Object.entries(tools)) {
    const { handler } = definition;
    if (typeof handler === 'string' || handler.kind !== 'mcp' || !needsMcpList(definition)) {
      put(entry, definition);
      continue;
    }
    let listed = Object.hasOwn(recorded, entry) ? recorded[entry] : undefined;
    // A record without a tool the entry now names (the workflow changed, then the run resumed): list again.
    if (listed === undefined || !covers(listed, handler)) {
      listed = kept(entry, handler, await list(entry, handler));
      added = { ...(added ?? {}), [entry]: listed };
    }
    if (handler.tool !== undefined) {
      const info = find(entry, handler, listed, handler.tool);
      put(entry, {
        ...definition,
        description: definition.description ?? info.description ?? '',
        parameters: definition.parameters ?? info.inputSchema,
      });
      continue;
    }
    const names = handler.tools ?? listed.map((info) => info.name);
    for (const toolName of names) {
      const info = find(entry, handler, listed, toolName);
      const name = `${entry}_${toolName}`;
      if (!TOOL_NAME_PART.test(toolName)) {
        throw new ToolFailure(
          'INVALID_TOOL_DEFINITION',
          `tool "${entry}": the server's tool "${toolName}" would be offered as "${name}", which is not a tool name models accept (letters, digits, _ and -); leave it out with "tools", or declare it as an entry of its own with "tool"`,
        );
      }
      const { tools: _narrowed, ...server } = handler;
      put(name, {
        description: info.description ?? '',
        parameters: info.inputSchema,
        handler: { ...server, tool: toolName },
        // The entry's approval rule holds for each tool it offers.
        ...(definition.requiresApproval === undefined
          ? {}
          : { requiresApproval: definition.requiresApproval }),
      });
    }
  }
  return { tools: resolved, recorded: added === undefined ? undefined : { ...recorded, ...added } };
}

function covers(listed: readonly McpToolInfo[], handler: McpToolHandler): boolean {
  const wanted = handler.tool !== undefined ? [handler.tool] : (handler.tools ?? []);
  return wanted.every((name) => listed.some((info) => info.name === name));
}

/** What is recorded of a server's list: the tools the entry uses, each schema as an argument check can read. */
function kept(entry: string, handler: McpToolHandler, listed: readonly McpToolInfo[]): McpToolInfo[] {
  const wanted = handler.tool !== undefined ? [handler.tool] : handler.tools;
  const tools = listed
    .filter((info) => wanted === undefined || wanted.includes(info.name))
    .map((info) => ({ ...info, inputSchema: argumentSchema(info.inputSchema) }));
  if (tools.length > MAX_MCP_TOOLS_PER_ENTRY) {
    throw new ToolFailure(
      'INVALID_TOOL_DEFINITION',
      `tool "${entry}": the MCP server offers ${tools.length} tools, more than the ${MAX_MCP_TOOLS_PER_ENTRY} one entry may; list the ones to offer in "tools"`,
    );
  }
  const bytes = Buffer.byteLength(canonicalJson(tools));
  if (bytes > MAX_RECORDED_MCP_BYTES) {
    throw new ToolFailure(
      'TOOL_RESPONSE_TOO_LARGE',
      `tool "${entry}": the MCP server's definitions of the tools used take ${bytes} bytes, more than the ${MAX_RECORDED_MCP_BYTES} recorded per entry; list fewer in "tools", or declare "description" and "parameters"`,
    );
  }
  return tools;
}

/**
 * The input schema as arguments are checked against it: an object schema, without the `$schema` a
 * server may name (its dialect; the checker reads the common keywords of every draft).
 */
function argumentSchema(schema: unknown): Record<string, unknown> {
  if (!isRecord(schema)) return { type: 'object', properties: {} };
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function find(
  entry: string,
  handler: McpToolHandler,
  listed: readonly McpToolInfo[],
  name: string,
): McpToolInfo {
  const info = listed.find((candidate) => candidate.name === name);
  if (info) return info;
  const where = handler.url === undefined ? `"${handler.command?.[0]}"` : 'at its url';
  throw new ToolFailure(
    'TOOL_NOT_FOUND',
    `tool "${entry}": the MCP server ${where} offers no tool "${name}" (it offers: ${listed.map((i) => i.name).join(', ') || 'none'})`,
  );
}
