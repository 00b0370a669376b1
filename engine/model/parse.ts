/**
 * Structural parse of a workflow file: zod issues mapped to coded errors. Never throws; rules that need
 * more than one field (graph shape, fork/join pairing, ...) are in engine/validation.
 */
import type { z } from 'zod';
import type { CodedError, ErrorCode } from '../errors.ts';
import { formatPath, isRecord } from './paths.ts';
import {
  builtinToolHandlerSchema,
  codeToolHandlerSchema,
  httpToolHandlerSchema,
  lambdaToolHandlerSchema,
  mcpToolHandlerSchema,
  NODE_TYPES,
  type Workflow,
  workflowSchema,
} from './schema.ts';
import { closestKey, synonymOf, unknownKeysByPart, unknownKeysOfWorkflow } from './unknown-keys.ts';

export interface ParseResult {
  workflow?: Workflow;
  errors: CodedError[];
}

export function parseWorkflow(data: unknown): ParseResult {
  const parsed = workflowSchema.safeParse(data);
  if (parsed.success) return { workflow: parsed.data as Workflow, errors: unknownKeysOfWorkflow(data) };
  const unknown = unknownKeysByPart(data);
  // A missing key is looked for among these only: a key the object rightly has is not a misspelling.
  const unknownPaths = new Set(unknown.flatMap((key) => (key.path === undefined ? [] : [key.path])));
  const errors = parsed.error.issues.flatMap(
    (issue) => toolHandlerErrors(issue, data) ?? [codedErrorFromIssue(issue, data, unknownPaths)],
  );
  // Unknown keys in the parts that did parse, reported with the rest rather than after it; not a key
  // an error on the same object names already ("the object has \"interactionType\": did you mean…").
  const named = (key: CodedError) =>
    errors.some(
      (error) =>
        error.path !== undefined &&
        parentOf(error.path) === parentOf(key.path!) &&
        error.message.includes(`"${lastSegment(key.path!)}"`),
    );
  return { errors: [...errors, ...unknown.filter((key) => !named(key))] };
}

/** `nodes[1].config` of `nodes[1].config.message`. */
function parentOf(path: string): string {
  return path.replace(/(\.[^.[\]]+|\[\d+\])$/, '');
}

function lastSegment(path: string): string {
  return path.slice(parentOf(path).length).replace(/^\./, '');
}

const HANDLER_SCHEMAS = {
  lambda: lambdaToolHandlerSchema,
  http: httpToolHandlerSchema,
  code: codeToolHandlerSchema,
  builtin: builtinToolHandlerSchema,
  mcp: mcpToolHandlerSchema,
} as const;

/**
 * A tool's handler object is one of five shapes, and zod's union says only "Invalid input" when it
 * matches none: check it against the shape its `kind` names instead, so a typo gets its field
 * named (an unknown key with the one it most likely meant, as everywhere else).
 */
function toolHandlerErrors(issue: z.core.$ZodIssue, data: unknown): CodedError[] | undefined {
  const { path } = issue;
  if (path.length !== 3 || path[0] !== 'tools' || path[2] !== 'handler') return undefined;
  const handler = valueAtIssue(data, path);
  if (!isRecord(handler)) return undefined;
  const at = formatPath(path);
  const kinds = Object.keys(HANDLER_SCHEMAS);
  const { kind } = handler;
  if (typeof kind !== 'string' || !Object.hasOwn(HANDLER_SCHEMAS, kind)) {
    const meant = typeof kind === 'string' ? closestKey(kind, kinds) : undefined;
    const message = `${at}.kind: must be one of ${kinds.map((k) => `"${k}"`).join(', ')}, got ${JSON.stringify(kind)}${meant ? `; did you mean "${meant}"?` : ''}`;
    return [{ code: 'SCHEMA_INVALID', message, path: `${at}.kind` }];
  }
  const checked = HANDLER_SCHEMAS[kind as keyof typeof HANDLER_SCHEMAS].safeParse(handler);
  if (checked.success) return undefined;
  return checked.error.issues.flatMap((inner): CodedError[] => {
    if (inner.code === 'unrecognized_keys') {
      const known = Object.keys(HANDLER_SCHEMAS[kind as keyof typeof HANDLER_SCHEMAS].shape);
      return inner.keys.map((key) => {
        const meant =
          closestKey(key, known) ?? known.find((k) => k.toLowerCase().startsWith(key.toLowerCase()));
        const where = `${at}.${key}`;
        return {
          code: 'UNKNOWN_KEY',
          message: `${where}: unknown key "${key}" for a ${kind} handler${meant ? `; did you mean "${meant}"?` : ''}`,
          path: where,
        };
      });
    }
    return [codedErrorFromIssue({ ...inner, path: [...path, ...inner.path] }, data)];
  });
}

/** The innermost node an issue sits in (nested SUBGRAPH workflows included), and the path below it. */
interface NodeContext {
  node: Record<string, unknown>;
  rest: readonly PropertyKey[];
}

function innermostNode(data: unknown, path: readonly PropertyKey[]): NodeContext | undefined {
  let current: unknown = data;
  let found: NodeContext | undefined;
  for (const [i, segment] of path.entries()) {
    if (current === null || typeof current !== 'object' || typeof segment === 'symbol') break;
    current = (current as Record<PropertyKey, unknown>)[segment];
    if (path[i - 1] === 'nodes' && typeof segment === 'number' && isRecord(current)) {
      found = { node: current, rest: path.slice(i + 1) };
    }
  }
  return found;
}

/** `unknownPaths`: where the file has keys the schema does not know (formatPath), when known. */
export function codedErrorFromIssue(
  issue: z.core.$ZodIssue,
  data: unknown,
  unknownPaths?: ReadonlySet<string>,
): CodedError {
  const context = innermostNode(data, issue.path);
  const path = formatPath(issue.path);
  const nodeId = context && typeof context.node.id === 'string' ? context.node.id : undefined;
  const code = context ? codeForNodeIssue(context, valueAtIssue(data, issue.path)) : 'SCHEMA_INVALID';
  const message =
    code === 'UNKNOWN_NODE_TYPE'
      ? unknownTypeMessage(context?.node.type)
      : (missingPathIdsMessage(context, valueAtIssue(data, issue.path)) ??
        missingFieldMessage(issue, data, unknownPaths) ??
        withSuggestion(issue, data));
  return {
    code,
    message: path ? `${path}: ${message}` : message,
    ...(nodeId !== undefined ? { nodeId } : {}),
    ...(path ? { path } : {}),
  };
}

/**
 * A required field left out: zod says "Invalid option: expected one of …" or "Invalid input: expected
 * number, received undefined", which reads like a wrong value; say it is missing and what it takes.
 */
function missingFieldMessage(
  issue: z.core.$ZodIssue,
  data: unknown,
  unknownPaths?: ReadonlySet<string>,
): string | undefined {
  if (issue.code !== 'invalid_type' && issue.code !== 'invalid_value' && issue.code !== 'invalid_union')
    return undefined;
  const parent = valueAtIssue(data, issue.path.slice(0, -1));
  const key = issue.path.at(-1);
  if (!isRecord(parent) || typeof key !== 'string' || Object.hasOwn(parent, key)) return undefined;
  const expected =
    issue.code === 'invalid_union'
      ? unionExpectation(issue)
      : issue.message.replace(/^Invalid (input|option): /, '').replace(/, received undefined$/, '');
  const parentPath = issue.path.slice(0, -1);
  const keys = Object.keys(parent).filter(
    (given) => unknownPaths === undefined || unknownPaths.has(formatPath([...parentPath, given])),
  );
  const given = misnamed(keys, key);
  const found = given === undefined ? '' : `; the object has "${given}": did you mean "${key}"?`;
  return `required but missing (${expected})${found}${Object.hasOwn(REQUIRED_EXAMPLES, key) ? REQUIRED_EXAMPLES[key] : ''}`;
}

/**
 * A key of the object that looks like the missing `key`: a typo of it, a part of it
 * (`interactionType` for `userInteractionType`, `type` for `variableType`), or another framework's
 * word for it (`to` for a route's `targetNodeId`, `when` for its `condition`: unknown-keys.ts SYNONYMS).
 */
function misnamed(keys: readonly string[], key: string): string | undefined {
  const lower = key.toLowerCase();
  const partOf = (given: string) =>
    given.length >= 4 && (lower.endsWith(given.toLowerCase()) || lower.startsWith(given.toLowerCase()));
  return keys.find(
    (given) =>
      given !== key &&
      (closestKey(given, [key]) !== undefined || partOf(given) || synonymOf(given, [key]) !== undefined),
  );
}

/** What to write for a required field whose type alone says little. */
const REQUIRED_EXAMPLES: Readonly<Record<string, string>> = {
  handler:
    ': what runs the tool, such as {"kind": "code", "code": "return { … }"}, {"kind": "http", "url": "https://…"} or "builtin:echo"',
};

/** The fields of a union issue zod adds when the union has a discriminator (`provider`, a node's `type`). */
type DiscriminatedUnionIssue = z.core.$ZodIssue & { code: 'invalid_union'; options?: unknown[] };

/**
 * What a union takes, for a field left out: its discriminator's values (a profile's `provider`), else
 * the types its options take (a tool's `handler`: a string or an object).
 */
function unionExpectation(issue: z.core.$ZodIssue & { code: 'invalid_union' }): string {
  const { options } = issue as DiscriminatedUnionIssue;
  if (Array.isArray(options) && options.length > 0)
    return `expected one of ${options.map((option) => JSON.stringify(option)).join(', ')}`;
  const types = new Set(
    issue.errors.flatMap((branch) =>
      branch.flatMap((inner) =>
        inner.code === 'invalid_type' && inner.path.length === 0 ? [inner.expected] : [],
      ),
    ),
  );
  return types.size > 0 ? `expected ${[...types].join(' or ')}` : 'expected a value';
}

/** Other products' names for a profile's provider: each is served by the one named. */
const PROVIDER_SYNONYMS: Readonly<Record<string, string>> = {
  gpt: 'openai',
  chatgpt: 'openai',
  azure: 'openai',
  ollama: 'openai',
  vllm: 'openai',
  lmstudio: 'openai',
  anthropic: 'bedrock',
  claude: 'bedrock',
  aws: 'bedrock',
};

/**
 * A discriminator value that names no option (a profile's `provider`): the value given, and the option
 * it most likely meant (its case, a typo, or the provider that serves that product).
 */
function discriminatorMessage(issue: DiscriminatedUnionIssue, data: unknown): string | undefined {
  if (!Array.isArray(issue.options) || issue.options.length === 0) return undefined;
  const given = valueAtIssue(data, issue.path);
  if (given === undefined) return undefined;
  const options = issue.options.filter((value): value is string => typeof value === 'string');
  const key = issue.path.at(-1);
  const synonym =
    key === 'provider' && typeof given === 'string' && Object.hasOwn(PROVIDER_SYNONYMS, given.toLowerCase())
      ? PROVIDER_SYNONYMS[given.toLowerCase()]
      : undefined;
  const meant = typeof given === 'string' ? (closestKey(given, options) ?? synonym) : undefined;
  // Ollama, vLLM, LM Studio and Azure serve OpenAI's API at their own address.
  const why =
    meant === 'openai' && synonym !== undefined && !/^(chat)?gpt$/i.test(String(given))
      ? ' (any OpenAI-compatible server, at its "baseUrl")'
      : '';
  return `${issue.message}, got ${clipped(JSON.stringify(given))}${meant ? `; did you mean "${meant}"${why}?` : ''}`;
}

/** A string that is not one of the allowed values, with the one it most likely meant ("get" → "GET"). */
function withSuggestion(issue: z.core.$ZodIssue, data: unknown): string {
  if (issue.code === 'invalid_type') return issue.message + quotedScalar(issue, data);
  if (issue.code === 'invalid_union') return discriminatorMessage(issue, data) ?? issue.message;
  if (issue.code !== 'invalid_value') return issue.message;
  const given = valueAtIssue(data, issue.path);
  const options = issue.values.filter((value): value is string => typeof value === 'string');
  const meant = typeof given === 'string' ? closestKey(given, options) : undefined;
  const got = given === undefined ? '' : `, got ${clipped(JSON.stringify(given))}`;
  return `${issue.message}${got}${meant ? `; did you mean "${meant}"?` : ''}`;
}

/** A number or boolean written as a string (`"1"` for 1, as YAML's quotes or a form would give it). */
function quotedScalar(issue: z.core.$ZodIssue & { code: 'invalid_type' }, data: unknown): string {
  const given = valueAtIssue(data, issue.path);
  if (typeof given !== 'string') return '';
  const text = given.trim();
  if (
    (issue.expected === 'number' || issue.expected === 'int') &&
    text !== '' &&
    Number.isFinite(Number(text))
  )
    return `; write ${Number(text)}, a number, without quotes`;
  if (issue.expected === 'boolean' && (text === 'true' || text === 'false'))
    return `; write ${text}, a boolean, without quotes`;
  return '';
}

function valueAtIssue(data: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = data;
  for (const segment of path) {
    if (current === null || typeof current !== 'object' || typeof segment === 'symbol') return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

/**
 * A FORK or JOIN without `forkPathIds` most likely follows the seed SDK's old format (`forkId`),
 * which this product does not take (seed 001 §5: no backward compatibility): say what to write.
 */
function missingPathIdsMessage(context: NodeContext | undefined, value: unknown): string | undefined {
  if (context === undefined || value !== undefined) return undefined;
  const { node, rest } = context;
  if ((node.type !== 'FORK' && node.type !== 'JOIN') || rest[0] !== 'config' || rest[1] !== 'forkPathIds') {
    return undefined;
  }
  const config = node.config;
  const old =
    typeof config === 'object' && config !== null && 'forkId' in config
      ? '; "forkId" (the old format) is not supported'
      : '';
  return node.type === 'FORK'
    ? `forkPathIds is required: one path id per childNodeIds entry${old}`
    : `forkPathIds is required: the path ids of its FORK, in the same order${old}`;
}

/** Other frameworks' words for a node type (lower case). */
const NODE_TYPE_SYNONYMS: ReadonlyMap<string, (typeof NODE_TYPES)[number]> = new Map(
  Object.entries({
    agent: 'LLM',
    model: 'LLM',
    chat: 'LLM',
    function: 'CODE',
    script: 'CODE',
    python: 'CODE',
    javascript: 'CODE',
    condition: 'ROUTE',
    conditional: 'ROUTE',
    router: 'ROUTE',
    branch: 'ROUTE',
    switch: 'ROUTE',
    if: 'ROUTE',
    parallel: 'FORK',
    split: 'FORK',
    merge: 'JOIN',
    gather: 'JOIN',
    loop: 'LOOP_START',
    human: 'USER_INTERACTION',
    interrupt: 'USER_INTERACTION',
    approval: 'USER_INTERACTION',
    subworkflow: 'SUBGRAPH',
    subflow: 'SUBGRAPH',
  } as const),
);

function unknownTypeMessage(type: unknown): string {
  const meant =
    typeof type === 'string'
      ? (closestKey(type, NODE_TYPES) ?? NODE_TYPE_SYNONYMS.get(type.toLowerCase().replace(/[\s_-]/g, '')))
      : undefined;
  const hint = meant === undefined ? '' : `; did you mean "${meant}"?`;
  return `unknown node type ${JSON.stringify(type)}${hint} (the types: ${NODE_TYPES.join(', ')})`;
}

/** Picks the most specific code the seeds define for a problem inside a node. */
function codeForNodeIssue({ node, rest }: NodeContext, value: unknown): ErrorCode {
  const [first, field, sub] = rest;
  if (first === 'type') {
    return typeof node.type === 'string' &&
      node.type !== '' &&
      !(NODE_TYPES as readonly string[]).includes(node.type)
      ? 'UNKNOWN_NODE_TYPE'
      : 'SCHEMA_INVALID';
  }
  if (first !== 'config') return 'SCHEMA_INVALID';
  // A problem at the top level of a SUBGRAPH's child workflow is a workflow-shape problem, not a config one.
  if (node.type === 'SUBGRAPH' && field === 'workflow') return 'SCHEMA_INVALID';
  const missing = value === undefined;
  switch (node.type) {
    case 'FORK':
      if (field === 'forkPathIds' || field === 'childNodeIds') return 'INVALID_FORK_PATH_IDS';
      break;
    case 'JOIN':
      if (field === 'forkPathIds') return 'INVALID_FORK_PATH_IDS';
      if (field === 'threshold') return 'INVALID_JOIN_THRESHOLD';
      if (field === 'timeout') return 'INVALID_JOIN_TIMEOUT';
      if (field === 'mainPathId') return 'MAIN_PATH_ID_NOT_FOUND';
      break;
    case 'LOOP_START':
      if (field === 'maxIterations') return 'INVALID_MAX_ITERATIONS';
      break;
    case 'USER_INTERACTION':
      if (field === 'userInteractionType') return 'INVALID_USER_INTERACTION_TYPE';
      if (field === 'options') return 'INVALID_SELECTION_OPTIONS';
      if (field === 'timeoutSeconds') return 'INVALID_INTERACTION_TIMEOUT';
      break;
    case 'CONTEXT_PROCESSOR':
      if (field === 'operation') return 'INVALID_CONTEXT_OPERATION';
      if ((field === 'insert' && sub === 'messages') || (field === 'replace' && sub === 'message')) {
        return missing && rest.length === 3 ? 'MISSING_OPERATION_CONFIG' : 'INVALID_MESSAGE';
      }
      if ((field === 'insert' || field === 'replace') && missing && rest.length === 3) {
        return 'MISSING_OPERATION_CONFIG';
      }
      break;
  }
  return 'INVALID_NODE_CONFIG';
}

/** A value quoted in a message, cut to a line's worth. */
function clipped(json: string): string {
  return json.length <= 60 ? json : `${json.slice(0, 57)}...`;
}
