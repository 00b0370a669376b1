/**
 * An MCP tool's CallToolResult as a tool result: `output` is the JSON data a node keeps (its
 * `structuredContent` when it sent one, the text when it sent only text, else the content blocks),
 * `content` the text the model reads (tool messages are text: images, audio and binary resources are
 * described, not inlined). `isError: true` is the tool's own failure: TOOL_FAILED with its text, which
 * the model reads as an error result and which fails a TOOL node.
 */
import { isRecord } from '../../engine/model/paths.ts';
import { ToolFailure } from './failure.ts';

/** How much of an error result's text is kept in the failure's message. */
const ERROR_TEXT_CHARS = 4_000;

/** A tool's output and the text the model reads, when they differ from output's JSON (executor.ts). */
export class McpToolOutput {
  constructor(
    readonly output: unknown,
    readonly content: string,
  ) {}
}

export function mcpToolOutput(toolName: string, result: unknown): McpToolOutput {
  if (!isRecord(result))
    throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": the MCP server sent no result`);
  // Servers of protocol version 2024-10-07 answered with `toolResult` instead.
  if (!Array.isArray(result.content) && 'toolResult' in result)
    return plain(toolName, result.toolResult, result.isError === true);
  const blocks = Array.isArray(result.content) ? result.content.filter(isRecord) : [];
  const structured = isRecord(result.structuredContent) ? result.structuredContent : undefined;
  const described = blocks.map(describeBlock);
  const text =
    described.length > 0 ? described.join('\n') : structured !== undefined ? JSON.stringify(structured) : '';
  if (result.isError === true) throw errorResult(toolName, text);
  if (structured !== undefined) return new McpToolOutput(structured, text);
  const allText = blocks.every((block) => block.type === 'text');
  return new McpToolOutput(allText ? text : { content: blocks }, text);
}

function plain(toolName: string, value: unknown, isError: boolean): McpToolOutput {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  if (isError) throw errorResult(toolName, text);
  return new McpToolOutput(value ?? null, text);
}

function errorResult(toolName: string, text: string): ToolFailure {
  const said = text.trim() === '' ? 'no details' : text.trim().slice(0, ERROR_TEXT_CHARS);
  return new ToolFailure('TOOL_FAILED', `tool "${toolName}" reported an error: ${said}`);
}

/** One content block as the model reads it. */
function describeBlock(block: Record<string, unknown>): string {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio':
      return `[${block.type}: ${mimeOf(block)}, ${base64Bytes(block.data)} bytes]`;
    case 'resource_link': {
      const name = typeof block.name === 'string' ? ` (${block.name})` : '';
      return `[resource link: ${String(block.uri)}${name}]`;
    }
    case 'resource': {
      const resource = isRecord(block.resource) ? block.resource : {};
      const uri = String(resource.uri);
      if (typeof resource.text === 'string') return `[resource ${uri}]\n${resource.text}`;
      return `[resource ${uri}: ${mimeOf(resource)}, ${base64Bytes(resource.blob)} bytes]`;
    }
    default:
      return `[${String(block.type)} content]`;
  }
}

function mimeOf(block: Record<string, unknown>): string {
  return typeof block.mimeType === 'string' ? block.mimeType : 'unknown type';
}

/** The size of base64 data once decoded. */
function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
