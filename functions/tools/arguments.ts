/**
 * Tool arguments checked against the tool's JSON Schema with ajv. Validators are compiled once per
 * distinct schema and cached for the life of the process, so a warm Lambda compiles each schema once
 * even though every invocation receives the definitions afresh.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { CodedError } from '../../engine/errors.ts';
import { formatPath } from '../../engine/model/paths.ts';
import type { ToolDefinition } from '../../engine/model/schema.ts';
import { ToolFailure } from './failure.ts';

const CACHE_LIMIT = 256;
const cache = new Map<string, ValidateFunction | string>();
// Loaded on first use: ajv's code generator is a noticeable share of a cold start.
let ajvModule: Promise<typeof import('./ajv.ts')> | undefined;

/**
 * A fresh Ajv. One that cannot be made is stepthread's own install failing, not the workflow's
 * schema (the installed package's split bundle once gave `import('ajv')` no `Ajv`: "r is not a
 * constructor"): NODE_EXECUTION_FAILED, which fails the node rather than reaching the model as a
 * failed call, so no run completes with every argument check failing.
 */
async function newAjv(toolName: string): Promise<InstanceType<typeof import('./ajv.ts').Ajv>> {
  try {
    ajvModule ??= import('./ajv.ts');
    const { Ajv } = await ajvModule;
    return new Ajv({ strict: false, allErrors: true, useDefaults: true, logger: false });
  } catch (error) {
    throw new ToolFailure(
      'NODE_EXECUTION_FAILED',
      `tool "${toolName}": its arguments cannot be checked: the JSON Schema validator (ajv) did not load: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** The compiled validator, or why the schema does not compile. */
async function compiled(
  toolName: string,
  parameters: Record<string, unknown>,
): Promise<ValidateFunction | string> {
  const key = JSON.stringify(parameters);
  const hit = cache.get(key);
  if (hit !== undefined) {
    // Re-inserting keeps the map in least-recently-used order for eviction.
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  // One Ajv per schema: an instance keeps every schema it compiled (and rejects a repeated $id),
  // so sharing one would grow without bound as definitions vary. Outside the try: only what
  // compile throws says the schema is wrong.
  const ajv = await newAjv(toolName);
  let entry: ValidateFunction | string;
  try {
    entry = ajv.compile(parameters);
  } catch (error) {
    entry = error instanceof Error ? error.message : String(error);
  }
  cache.set(key, entry);
  if (cache.size > CACHE_LIMIT) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  return entry;
}

/**
 * The arguments to call the tool with: a copy of `args` with schema defaults filled in. Throws
 * INVALID_TOOL_DEFINITION for a schema that does not compile, TOOL_ARGUMENTS_INVALID with ajv's
 * messages for arguments that do not match, NODE_EXECUTION_FAILED when ajv itself does not load. A
 * tool without `parameters` takes anything.
 */
export async function checkArguments(
  toolName: string,
  definition: ToolDefinition,
  args: unknown,
): Promise<unknown> {
  if (definition.parameters === undefined) return args;
  const validate = await compiled(toolName, definition.parameters);
  if (typeof validate === 'string') {
    throw new ToolFailure(
      'INVALID_TOOL_DEFINITION',
      `tool "${toolName}": its parameters are not a valid JSON Schema: ${validate}`,
    );
  }
  const copy = structuredClone(args);
  if (validate(copy)) return copy;
  throw new ToolFailure(
    'TOOL_ARGUMENTS_INVALID',
    `tool "${toolName}": invalid arguments: ${formatErrors(validate.errors ?? [])}`,
  );
}

function formatErrors(errors: readonly ErrorObject[]): string {
  return errors
    .map((error) => {
      const where = error.instancePath === '' ? 'arguments' : `arguments${error.instancePath}`;
      const extra =
        error.keyword === 'additionalProperties'
          ? ` ("${String(error.params.additionalProperty)}")`
          : error.keyword === 'enum'
            ? ` (${JSON.stringify(error.params.allowedValues)})`
            : '';
      return `${where} ${error.message ?? 'is invalid'}${extra}`;
    })
    .join('; ');
}

/**
 * Compiles every tool's parameters: INVALID_TOOL_DEFINITION for each that is not a valid JSON Schema.
 * The engine checks structure only (it has no JSON Schema library); run this too before a run or deploy.
 */
export async function checkToolParameters(
  tools: Readonly<Record<string, ToolDefinition>>,
): Promise<CodedError[]> {
  const errors: CodedError[] = [];
  for (const [name, definition] of Object.entries(tools)) {
    if (definition.parameters === undefined) continue;
    const validate = await compiled(name, definition.parameters);
    if (typeof validate === 'string') {
      errors.push({
        code: 'INVALID_TOOL_DEFINITION',
        message: `tool "${name}": its parameters are not a valid JSON Schema: ${validate}`,
        // The engine's path style (`tools["look-up"]`), so a schema both refuse is reported once.
        path: formatPath(['tools', name, 'parameters']),
      });
    }
  }
  return errors;
}
