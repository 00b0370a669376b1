/**
 * The tool-description system message (seed 004 §4): what `clear` re-adds when the workflow declares
 * tools, so the conversation still says which tools exist. The model is also given the tools with
 * every LLM request; this message is the seed's reminder in the conversation itself.
 */
import type { ToolDefinition } from '../model/schema.ts';

/** The first line of the message: how it is recognised (the seed's "可用工具:"). */
export const TOOL_DESCRIPTION_HEADING = 'Available tools:';

/** The message text for the declared tools, in declaration order; undefined when there is none. */
export function describeTools(
  tools: Readonly<Record<string, Pick<ToolDefinition, 'description'>>>,
): string | undefined {
  const entries = Object.entries(tools);
  if (entries.length === 0) return undefined;
  const lines = entries.map(([name, tool]) =>
    tool.description ? `- ${name}: ${tool.description}` : `- ${name}`,
  );
  return [TOOL_DESCRIPTION_HEADING, ...lines].join('\n');
}
