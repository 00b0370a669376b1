/**
 * Keys a workflow file has that the schema does not know (`outputVarible`, `mainPath`, `maxStep`):
 * zod drops them silently, so they are found by comparing the file with what parsing kept, and
 * each is reported with the closest key the schema does know.
 */
import type { z } from 'zod';
import type { CodedError } from '../errors.ts';
import { formatPath, isRecord } from './paths.ts';
import { nodeSchema, workflowSchema } from './schema.ts';

/** Every object key anywhere in the workflow schema: the vocabulary suggestions come from. */
let vocabulary: readonly string[] | undefined;

function schemaKeys(): readonly string[] {
  if (vocabulary) return vocabulary;
  const keys = new Set<string>();
  const seen = new Set<unknown>();
  const visit = (schema: unknown): void => {
    if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    const def = (schema as { _zod?: { def?: Record<string, unknown> } })._zod?.def;
    if (!def) return;
    if (isRecord(def.shape)) {
      for (const [key, value] of Object.entries(def.shape)) {
        keys.add(key);
        visit(value);
      }
    }
    for (const field of ['innerType', 'element', 'valueType', 'in', 'out', 'left', 'right'])
      visit(def[field]);
    for (const field of ['options', 'items'])
      if (Array.isArray(def[field])) for (const item of def[field]) visit(item);
    if (typeof def.getter === 'function') visit((def.getter as () => unknown)());
  };
  visit(workflowSchema as z.ZodType);
  vocabulary = [...keys];
  return vocabulary;
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

function configKeysOf(nodeType: unknown): readonly string[] | undefined {
  return typeof nodeType === 'string' ? configKeysByType().get(nodeType) : undefined;
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
 * What follows "unknown key": the key it most likely meant — under a node's `config`, first among
 * the keys that node type's config takes (`message` → `showMessage` on a USER_INTERACTION); or, for a
 * key the schema knows elsewhere (`keepLast` straight under a CONTEXT_PROCESSOR's config, not in its
 * `truncate`), that it is misplaced: the closest key would be itself.
 */
function hintFor(key: string, nodeConfigKeys: readonly string[] | undefined): string {
  const meant =
    nodeConfigKeys === undefined
      ? undefined
      : (closestKey(key, nodeConfigKeys) ?? holding(key, nodeConfigKeys));
  if (meant !== undefined && meant !== key) return `; did you mean "${meant}"?`;
  if (nodeConfigKeys !== undefined) {
    // A key of other node types' config (`breakCondition` on a LOOP_START): name them.
    const types = [...configKeysByType()].filter(([, keys]) => keys.includes(key)).map(([type]) => type);
    if (types.length > 0) return ` here: "${key}" belongs in the config of a ${types.join(' or ')} node`;
  }
  if (schemaKeys().includes(key)) return ` here: "${key}" belongs in another object (misplaced?)`;
  const suggestion = closestKey(key);
  return suggestion ? `; did you mean "${suggestion}"?` : '';
}

/** UNKNOWN_KEY for every key of `raw` that parsing dropped from `parsed` (same paths). */
export function unknownKeys(raw: unknown, parsed: unknown): CodedError[] {
  const errors: CodedError[] = [];
  const walk = (input: unknown, kept: unknown, path: (string | number)[], nodeId: string | undefined) => {
    if (Array.isArray(input) && Array.isArray(kept)) {
      for (const [i, item] of input.entries()) walk(item, kept[i], [...path, i], nodeId);
      return;
    }
    if (!isRecord(input) || !isRecord(kept)) return;
    const inNode = path.at(-2) === 'nodes' && typeof input.id === 'string' ? input.id : nodeId;
    // Straight under a node's config: that node type's config keys are the likeliest meaning.
    const nodeConfigKeys =
      path.at(-1) === 'config' && path.at(-3) === 'nodes' ? configKeysOf(nodeTypeAt(raw, path)) : undefined;
    for (const [key, value] of Object.entries(input)) {
      const at = [...path, key];
      if (!Object.hasOwn(kept, key)) {
        const where = formatPath(at);
        errors.push({
          code: 'UNKNOWN_KEY',
          message: `${where}: unknown key "${key}"${hintFor(key, nodeConfigKeys)}`,
          path: where,
          ...(inNode === undefined ? {} : { nodeId: inNode }),
        });
        continue;
      }
      walk(value, kept[key], at, inNode);
    }
  };
  walk(raw, parsed, [], undefined);
  return errors;
}

/** The `type` of the node whose config is at `configPath` (`[…, 'nodes', i, 'config']`) in `raw`. */
function nodeTypeAt(raw: unknown, configPath: readonly (string | number)[]): unknown {
  let value: unknown = raw;
  for (const step of configPath.slice(0, -1)) {
    if (Array.isArray(value) && typeof step === 'number') value = value[step];
    else if (isRecord(value) && typeof step === 'string') value = value[step];
    else return undefined;
  }
  return isRecord(value) ? value.type : undefined;
}
