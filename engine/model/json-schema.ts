/**
 * The JSON Schema of the workflow file, generated from the zod schemas so there is one source of truth.
 * engine/model/workflow.schema.json is the committed output (`npm run schema` rewrites it).
 */
import * as z from 'zod';
import { workflowSchema } from './schema.ts';
import { TOP_LEVEL_ONLY } from './unknown-keys.ts';

/** Where the committed schema lives, relative to the repository root. */
export const WORKFLOW_SCHEMA_PATH = 'engine/model/workflow.schema.json';

export function buildWorkflowJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(workflowSchema, { io: 'input', unrepresentable: 'any', cycles: 'ref' });
  const described = {
    ...withChildWorkflowLimits(generated),
    title: 'stepthread workflow',
    description: 'A stepthread workflow graph: typed nodes, edges, profiles, tools and variables.',
  };
  return sortKeys(described) as Record<string, unknown>;
}

/**
 * A SUBGRAPH's child workflow is the same schema (`$ref: "#"`) without the keys validation refuses
 * there (TOP_LEVEL_ONLY), so an editor flags them where validate would.
 */
function withChildWorkflowLimits(schema: Record<string, unknown>): Record<string, unknown> {
  type Branch = {
    properties?: { type?: { const?: unknown }; config?: { properties?: Record<string, unknown> } };
  };
  const branches = (schema as { properties?: { nodes?: { items?: { oneOf?: Branch[] } } } }).properties?.nodes
    ?.items?.oneOf;
  const config = branches?.find((branch) => branch.properties?.type?.const === 'SUBGRAPH')?.properties
    ?.config;
  if (!config?.properties?.workflow) throw new Error('the generated schema has no SUBGRAPH config.workflow');
  config.properties.workflow = {
    ...(config.properties.workflow as object),
    description: `The child workflow, inlined into the parent; ${Object.keys(TOP_LEVEL_ONLY).join(' and ')} belong on the top-level workflow.`,
    properties: Object.fromEntries(Object.keys(TOP_LEVEL_ONLY).map((key) => [key, false])),
  };
  return schema;
}

/** The exact text of workflow.schema.json: keys sorted, two-space indent, trailing newline. */
export function renderWorkflowJsonSchema(): string {
  return `${JSON.stringify(buildWorkflowJsonSchema(), null, 2)}\n`;
}

/**
 * The `$schema` value for a workflow file in `fileDir` (a directory relative to the repository root),
 * e.g. `schemaReference('examples')` → `../engine/model/workflow.schema.json`.
 */
export function schemaReference(fileDir: string): string {
  const depth = fileDir.split('/').filter((part) => part !== '' && part !== '.').length;
  return `${'../'.repeat(depth)}${WORKFLOW_SCHEMA_PATH}`;
}

// Sorting makes the committed file independent of property insertion order in the zod schemas.
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort())
    sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}
