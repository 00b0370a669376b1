/**
 * Keys a workflow file has that the schema does not know (`outputVarible`, `mainPath`, `maxStep`):
 * zod drops them silently, so they are found by comparing the file with what parsing kept, and
 * each is reported with the closest key the schema does know.
 */
import type { z } from 'zod';
import type { CodedError } from '../errors.ts';
import { formatPath, isRecord, type Path } from './paths.ts';
import {
  edgeSchema,
  nodeSchema,
  profileSchema,
  toolSchema,
  triggerSchema,
  variableDeclarationSchema,
  workflowSchema,
} from './schema.ts';

/** Every object key anywhere in the workflow schema: the vocabulary suggestions come from. */
let vocabulary: readonly string[] | undefined;
/** Where each of those keys belongs ("in the config of a LOOP_END node", "at the top of the workflow file"). */
let places: ReadonlyMap<string, readonly string[]> | undefined;

/** Fields whose literal value tells objects of one list apart: a node's type, a profile's provider, a handler's kind. */
const DISCRIMINATORS = ['type', 'provider', 'kind'];

function literalOf(schema: unknown): string | undefined {
  const def = (schema as { _zod?: { def?: { type?: string; values?: unknown[] } } } | undefined)?._zod?.def;
  const value = def?.type === 'literal' ? def.values?.[0] : undefined;
  return typeof value === 'string' ? value : undefined;
}

const TOP = 'at the top of the workflow file';

/** The place of field `key`'s object, given where `key` itself is: `in "truncate" of the config of a …`. */
function within(key: string, place: string): string {
  if (place === TOP) return `in "${key}"`;
  return `in "${key}" ${place.replace(/^(in|on) /, 'of ')}`;
}

/** `in "handler" of an entry of "tools"` with `"kind": "http"`: `in "handler" with "kind": "http" of …`. */
function withDiscriminator(place: string, field: string): string {
  const named = /^(in [^"]*"[^"]+")/.exec(place);
  return named ? `${named[1]} with ${field}${place.slice(named[1]!.length)}` : `${place} with ${field}`;
}

/** The article before a node type's name as it is read: an LLM, an END, a USER_INTERACTION. */
function article(nodeType: string): string {
  return /^(LLM|[AEIO])/.test(nodeType) ? 'an' : 'a';
}

function schemaKeys(): readonly string[] {
  if (vocabulary) return vocabulary;
  const keys = new Set<string>();
  const where = new Map<string, string[]>();
  const seen = new Set<unknown>();
  const visit = (schema: unknown, place: string): void => {
    if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    const def = (schema as { _zod?: { def?: Record<string, unknown> } })._zod?.def;
    if (!def) return;
    if (isRecord(def.shape)) {
      const shape = def.shape;
      const node =
        literalOf(shape.type) !== undefined && 'config' in shape ? literalOf(shape.type) : undefined;
      const discriminator = DISCRIMINATORS.find((field) => literalOf(shape[field]) !== undefined);
      const here =
        node !== undefined
          ? 'on a node, beside "id" and "type"'
          : discriminator === undefined
            ? place
            : withDiscriminator(place, `"${discriminator}": "${literalOf(shape[discriminator])}"`);
      for (const [key, value] of Object.entries(shape)) {
        keys.add(key);
        const list = where.get(key) ?? [];
        if (!list.includes(here)) list.push(here);
        where.set(key, list);
        visit(
          value,
          node !== undefined && key === 'config'
            ? `in the config of ${article(node)} ${node} node`
            : within(key, here),
        );
      }
    }
    for (const field of ['innerType', 'in', 'out', 'left', 'right']) visit(def[field], place);
    visit(def.element, place.replace(/^in "/, 'in an item of "'));
    visit(def.valueType, place.replace(/^in "/, 'in an entry of "'));
    for (const field of ['options', 'items'])
      if (Array.isArray(def[field])) for (const item of def[field]) visit(item, place);
    if (typeof def.getter === 'function') visit((def.getter as () => unknown)(), place);
  };
  visit(workflowSchema as z.ZodType, TOP);
  vocabulary = [...keys];
  places = where;
  return vocabulary;
}

/**
 * Keys of values the schema leaves open (`z.unknown()`) but that stepthread reads all the same: a
 * scripted profile's reply entries (functions/llm/scripted.ts).
 */
const OPEN_VALUE_PLACES: Readonly<Record<string, string>> = {
  byPrompt:
    'in a reply of a scripted profile, an entry of its "responses" or of a "byNode" list: "byNode": {"<node id>": [{"byPrompt": [{"contains": "…", "reply": "…"}], "otherwise": "…"}]}',
  otherwise:
    'in a reply of a scripted profile beside "byPrompt": {"byPrompt": [{"contains": "…", "reply": "…"}], "otherwise": "…"}',
};

/** Where a key of the schema (or of a value it leaves open) belongs, or undefined when it is no such key. */
function placeOf(key: string): string | undefined {
  if (Object.hasOwn(OPEN_VALUE_PLACES, key)) return OPEN_VALUE_PLACES[key];
  schemaKeys();
  const list = places?.get(key);
  if (list === undefined || list.length === 0) return undefined;
  return list.length > 3 ? `${list.slice(0, 3).join(', ')} or elsewhere` : list.join(' or ');
}

/** Edit distance (insert, delete, substitute, swap adjacent), stopping early past `limit`. */
function distance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      row.push(best);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/** The known key closest to `key`, when one is close enough to be what was meant. */
export function closestKey(key: string, candidates: readonly string[] = schemaKeys()): string | undefined {
  const limit = Math.max(1, Math.floor(key.length / 4));
  let best: { key: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase(), limit);
    if (d <= limit && (best === undefined || d < best.distance)) best = { key: candidate, distance: d };
  }
  return best?.key;
}

/** The keys a node type's `config` takes (its schema's shape), by node type. */
let configKeys: ReadonlyMap<string, readonly string[]> | undefined;

function configKeysByType(): ReadonlyMap<string, readonly string[]> {
  if (configKeys === undefined) {
    const byType = new Map<string, readonly string[]>();
    for (const option of nodeSchema.options) {
      let config: unknown = option.shape.config;
      // START's and END's config is optional: the object is inside.
      while (isRecord((config as { _zod?: { def?: unknown } })._zod?.def)) {
        const def = (config as { _zod: { def: Record<string, unknown> } })._zod.def;
        if (isRecord(def.shape)) break;
        if (def.innerType === undefined) break;
        config = def.innerType;
      }
      const shape = (config as { _zod?: { def?: { shape?: unknown } } })._zod?.def?.shape;
      if (isRecord(shape)) byType.set(option.shape.type.value, Object.keys(shape));
    }
    configKeys = byType;
  }
  return configKeys;
}

/** A known key that `key` is a part of (`message` of `showMessage`), when just one is. */
function holding(key: string, candidates: readonly string[]): string | undefined {
  if (key.length < 4) return undefined;
  const lower = key.toLowerCase();
  const found = candidates.filter((candidate) => {
    const name = candidate.toLowerCase();
    return name !== lower && (name.endsWith(lower) || name.startsWith(lower));
  });
  return found.length === 1 ? found[0] : undefined;
}

/**
 * Words users bring from other frameworks (LangGraph's `next`/`to`, Step Functions' `Next`, `Default`,
 * `Choices`, an edge's `source`/`target`, a tool's `input_schema`) for a key of ours, by the lower-cased word: the first of its keys that the object at hand
 * takes is the one meant. Kept small: only words seen in workflow files, and only where no typo match is.
 */
const SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  to: ['targetNodeId'],
  next: ['targetNodeId'],
  // An edge as React Flow and LangGraph's add_edge draw it.
  source: ['from'],
  target: ['targetNodeId', 'to'],
  goto: ['targetNodeId'],
  default: ['defaultTargetNodeId'],
  when: ['condition', 'breakCondition'],
  if: ['condition', 'breakCondition'],
  condition: ['breakCondition'],
  choices: ['routes'],
  name: ['variableName', 'toolName', 'eventName'],
  args: ['arguments'],
  // A tool's argument schema as Anthropic (input_schema), MCP (inputSchema) and others name it.
  input_schema: ['parameters'],
  inputschema: ['parameters'],
  params: ['parameters'],
  // A key is never written in a workflow file: a profile names the environment variable holding it.
  apikey: ['apiKeyEnv'],
  api_key: ['apiKeyEnv'],
};

/** The key of `candidates` that `key` is another framework's word for (`to` → `targetNodeId`). */
export function synonymOf(key: string, candidates: readonly string[]): string | undefined {
  const meant = Object.hasOwn(SYNONYMS, key.toLowerCase()) ? SYNONYMS[key.toLowerCase()] : undefined;
  return meant?.find((candidate) => candidates.includes(candidate));
}

/**
 * What follows "unknown key": the key it most likely meant among those the object takes (`localKeys`;
 * `given` are those it has): `message` → `showMessage` in a USER_INTERACTION's config, `to` →
 * `targetNodeId` in a route that has none; under a
 * node's `config`, a key of other node types' config names them; a key the schema knows elsewhere
 * (`keepLast` straight under a CONTEXT_PROCESSOR's config, not in its `truncate`) says where it belongs.
 */
function hintFor(
  key: string,
  localKeys: readonly string[],
  given: readonly string[],
  nodeConfig: boolean,
): string {
  // The seed SDK's old FORK/JOIN key (seed 001 §5: not taken, also beside forkPathIds).
  if (nodeConfig && key === 'forkId')
    return ` here: "forkId" is the seed SDK's old format, which forkPathIds replaces`;
  // Another framework's word means a key of ours only when the object lacks that key.
  const absent = localKeys.filter((local) => !given.includes(local));
  const meant = closestKey(key, localKeys) ?? holding(key, localKeys) ?? synonymOf(key, absent);
  if (meant !== undefined && meant !== key) return `; did you mean "${meant}"?`;
  if (nodeConfig) {
    // A key of other node types' config (`breakCondition` on a LOOP_START): name them.
    const types = [...configKeysByType()].filter(([, keys]) => keys.includes(key)).map(([type]) => type);
    if (types.length > 0)
      return ` here: "${key}" belongs in the config of ${article(types[0]!)} ${types.join(' or ')} node`;
  }
  const place = placeOf(key);
  if (place !== undefined) return ` here: "${key}" belongs ${place}`;
  const suggestion = closestKey(key);
  return suggestion ? `; did you mean "${suggestion}"?` : '';
}

/**
 * Keys of a workflow that only the top-level file's count: a child workflow's would be ignored, as
 * its steps and spend count on the thread and run that run it. The editor schema refuses them there
 * too (json-schema.ts).
 */
export const TOP_LEVEL_ONLY: Readonly<Record<string, string>> = {
  maxSteps:
    "the child's steps count toward the top-level workflow's maxSteps, on the thread that runs the SUBGRAPH",
  budget: "the child's model and tool calls count toward the top-level workflow's budget, over the whole run",
};

/** True when `path` in `raw` is a SUBGRAPH's `config.workflow`. */
function isChildWorkflow(raw: unknown, path: readonly (string | number)[]): boolean {
  if (path.at(-1) !== 'workflow' || path.at(-2) !== 'config' || path.at(-4) !== 'nodes') return false;
  const node = valueAt(raw, path.slice(0, -2));
  return isRecord(node) && node.type === 'SUBGRAPH';
}

/**
 * UNKNOWN_KEY for every key of `raw` that `kept` lacks (same paths): `kept` is the skeleton of `raw`
 * (skeletonOf), whose objects hold every key the schema takes there, so those keys are the first
 * suggestions. With `at`, only the part of `raw` at that path, which `kept` is the skeleton of.
 */
export function unknownKeys(raw: unknown, kept: unknown, at: Path = []): CodedError[] {
  const errors: CodedError[] = [];
  const walk = (input: unknown, kept: unknown, path: (string | number)[], nodeId: string | undefined) => {
    if (Array.isArray(input) && Array.isArray(kept)) {
      for (const [i, item] of input.entries()) walk(item, kept[i], [...path, i], nodeId);
      return;
    }
    if (!isRecord(input) || !isRecord(kept)) return;
    const inNode = path.at(-2) === 'nodes' && typeof input.id === 'string' ? input.id : nodeId;
    const nodeConfig = path.at(-1) === 'config' && path.at(-3) === 'nodes';
    const childWorkflow = isChildWorkflow(raw, path);
    for (const [key, value] of Object.entries(input)) {
      const at = [...path, key];
      if (childWorkflow && Object.hasOwn(TOP_LEVEL_ONLY, key)) {
        const where = formatPath(at);
        errors.push({
          code: 'UNKNOWN_KEY',
          message: `${where}: a SUBGRAPH's child workflow takes no "${key}" (it would be ignored: ${TOP_LEVEL_ONLY[key]}): set ${key} on the top-level workflow`,
          path: where,
          ...(inNode === undefined ? {} : { nodeId: inNode }),
        });
        continue;
      }
      if (!Object.hasOwn(kept, key)) {
        const where = formatPath(at);
        errors.push({
          code: 'UNKNOWN_KEY',
          message: `${where}: unknown key "${key}"${hintFor(key, Object.keys(kept), Object.keys(input), nodeConfig)}`,
          path: where,
          ...(inNode === undefined ? {} : { nodeId: inNode }),
        });
        continue;
      }
      walk(value, kept[key], at, inNode);
    }
  };
  walk(valueAt(raw, at), kept, [...at], nodeIdAt(raw, at));
  return errors;
}

/** UNKNOWN_KEY for every key of a workflow file that parsed, anywhere in it. */
export function unknownKeysOfWorkflow(raw: unknown): CodedError[] {
  return unknownKeys(raw, skeletonOf(workflowSchema, raw));
}

type Def = Record<string, unknown> & { type?: string };

function defOf(schema: unknown): Def | undefined {
  const def = (schema as { _zod?: { def?: unknown } } | undefined)?._zod?.def;
  return isRecord(def) ? (def as Def) : undefined;
}

/**
 * What of `value` the schema knows, whether or not `value` parses: each object the schema describes
 * becomes one holding every key the schema takes there (null where `value` lacks it), with the
 * skeletons of `value`'s own values below; anything else is null (nothing below it is checked). So
 * the keys of `value` a skeleton lacks are the unknown ones, at any depth (a ROUTE's `routes[1]`, a
 * hook, a CONTEXT_PROCESSOR's `truncate`), and an object that does not parse still has them named.
 * A strict object (a tool's handler, START's config) is left out: its unknown keys fail the parse.
 */
export function skeletonOf(schema: unknown, value: unknown): unknown {
  const def = defOf(schema);
  if (def === undefined) return null;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'readonly':
      return skeletonOf(def.innerType, value);
    case 'lazy':
      return typeof def.getter === 'function' ? skeletonOf((def.getter as () => unknown)(), value) : null;
    case 'pipe':
      return skeletonOf(def.in, value);
    case 'array':
      return Array.isArray(value) ? value.map((item) => skeletonOf(def.element, item)) : null;
    case 'record':
      return isRecord(value)
        ? Object.fromEntries(
            Object.entries(value).map(([key, item]) => [key, skeletonOf(def.valueType, item)]),
          )
        : null;
    case 'union':
      return unionSkeleton(def, value);
    case 'object': {
      if (!isRecord(value) || !isRecord(def.shape) || defOf(def.catchall)?.type === 'never') return null;
      return Object.fromEntries(
        Object.entries(def.shape).map(([key, field]) => [
          key,
          Object.hasOwn(value, key) ? skeletonOf(field, value[key]) : null,
        ]),
      );
    }
    default:
      return null;
  }
}

/**
 * The option of a union that `value` is meant as: by its discriminator (a node's `type`, a profile's
 * `provider`), else the first option it parses as, else the first that describes an object like it.
 */
function unionSkeleton(def: Def, value: unknown): unknown {
  const options = Array.isArray(def.options) ? (def.options as z.ZodType[]) : [];
  if (typeof def.discriminator === 'string') {
    if (!isRecord(value)) return null;
    const tag = value[def.discriminator];
    const option = options.find((candidate) => {
      const shape = defOf(candidate)?.shape;
      return isRecord(shape) && literalOf(shape[def.discriminator as string]) === tag;
    });
    return option === undefined ? null : skeletonOf(option, value);
  }
  const parses = options.find((option) => option.safeParse(value).success);
  if (parses !== undefined) return skeletonOf(parses, value);
  for (const option of options) {
    const skeleton = skeletonOf(option, value);
    if (skeleton !== null) return skeleton;
  }
  return null;
}

/** The value at `path` in `raw`, or undefined. */
function valueAt(raw: unknown, path: Path): unknown {
  let value: unknown = raw;
  for (const step of path) {
    if (Array.isArray(value) && typeof step === 'number') value = value[step];
    else if (isRecord(value) && typeof step === 'string') value = value[step];
    else return undefined;
  }
  return value;
}

/** The id of the innermost node `path` is inside (`nodes[2]` and below), if any. */
function nodeIdAt(raw: unknown, path: Path): string | undefined {
  for (let end = path.length; end >= 2; end -= 1) {
    if (path[end - 2] !== 'nodes' || typeof path[end - 1] !== 'number') continue;
    const node = valueAt(raw, path.slice(0, end));
    return isRecord(node) && typeof node.id === 'string' ? node.id : undefined;
  }
  return undefined;
}

const SECTIONS: ReadonlyArray<readonly [string, z.ZodType]> = [
  ['variables', variableDeclarationSchema],
  ['profiles', profileSchema],
  ['tools', toolSchema],
  ['triggers', triggerSchema],
  ['nodes', nodeSchema],
  ['edges', edgeSchema],
];

/**
 * UNKNOWN_KEY for a workflow file that failed the structural parse: the top level and each part (each
 * node, edge, variable, profile, tool, trigger) down to its nested objects (a route, a hook, a
 * CONTEXT_PROCESSOR's `truncate`) are compared with their skeletons (skeletonOf), parsed or not, so an
 * unknown key is reported beside the other errors instead of only once they are fixed. A SUBGRAPH's
 * child workflow that does not parse is read by parts in turn.
 */
export function unknownKeysByPart(raw: unknown, at: Path = []): CodedError[] {
  const workflow = valueAt(raw, at);
  if (!isRecord(workflow)) return [];
  // The top level's own keys, and its objects that are no section (`budget`); the sections by part below.
  const top = skeletonOf(workflowSchema, workflow) as Record<string, unknown>;
  for (const [section] of SECTIONS) if (Object.hasOwn(top, section)) top[section] = null;
  const errors = unknownKeys(raw, top, at);
  for (const [section, schema] of SECTIONS) {
    const value = workflow[section];
    const entries: Array<[string | number, unknown]> = Array.isArray(value)
      ? [...value.entries()]
      : isRecord(value) && (section === 'profiles' || section === 'tools')
        ? Object.entries(value)
        : [];
    for (const [key, part] of entries) {
      const path = [...at, section, key];
      const skeleton = skeletonOf(schema, part);
      if (
        section === 'nodes' &&
        isRecord(part) &&
        part.type === 'SUBGRAPH' &&
        !schema.safeParse(part).success
      ) {
        // Its child workflow does not parse either: by parts, as this one.
        const config = isRecord(skeleton) ? skeleton.config : undefined;
        if (isRecord(config)) config.workflow = null;
        errors.push(...unknownKeys(raw, skeleton, path));
        errors.push(...unknownKeysByPart(raw, [...path, 'config', 'workflow']));
      } else errors.push(...unknownKeys(raw, skeleton, path));
    }
  }
  return errors;
}
