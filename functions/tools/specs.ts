/** Tools as an LLM provider offers them to the model. */
import type { ToolDefinition } from '../../engine/model/schema.ts';
import type { ToolSpec } from './types.ts';

/** Name, description and argument schema of each tool, in declaration order; handlers stay private. */
export function toolSpecsForModel(tools: Readonly<Record<string, ToolDefinition>>): ToolSpec[] {
  return Object.entries(tools).map(([name, definition]) => ({
    name,
    description: definition.description ?? '',
    // Providers require an object schema even for a tool without arguments.
    parameters: definition.parameters ?? { type: 'object', properties: {} },
  }));
}
