/**
 * Large values by reference (claim check). A value whose JSON is over INLINE_VALUE_BYTES is not
 * stored in a DynamoDB item: the item holds a small reference instead, and the value lives in S3,
 * immutable and content-addressed, so a value that does not change is never written again:
 *
 *   `{"$stepthread:ref": "v:<object id>/<value hash>", "bytes": n}` → values/<object id>.json, a
 *       JSON object of the values one step wrote, by their hashes (one PUT per step at most);
 *   `{"$stepthread:ref": "m:<segment id>/<position>", "bytes": n}` → the content of a message the
 *       same step appended to the conversation (an LLM reply as the node's output), so it is stored
 *       once, in its segment.
 *
 * References sit only in the slots a thread's values live in (input, output, each variable, each
 * loop's items, each MCP tool list a run recorded, a node result's output and its console output,
 * `logs`), so the rest of an item is
 * never scanned. `$stepthread:ref` is reserved: a value that is an object with that key is stored
 * by reference whatever its size, so it never reads back as someone else's reference.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { checkValueDepth } from '../../engine/model/json-values.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { canonicalJson, shortHash } from './canonical-json.ts';

export const REF_KEY = '$stepthread:ref';
/** The contextData key whose entries are value slots (the MCP tool lists of a run). */
export const MCP_TOOLS_SLOT = 'mcpTools';
/** Values whose canonical JSON is longer go by reference. */
export const INLINE_VALUE_BYTES = 256;

/** The largest value a step may store: `STEPTHREAD_MAX_VALUE_BYTES`, default 50 MB. */
export function maxValueBytes(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const configured = Number(env.STEPTHREAD_MAX_VALUE_BYTES);
  return Number.isSafeInteger(configured) && configured > 0 ? configured : 50 * 1024 * 1024;
}

export interface ValueRef {
  readonly [REF_KEY]: string;
  readonly bytes: number;
}

export function isValueRef(value: unknown): value is ValueRef {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof (value as Record<string, unknown>)[REF_KEY] === 'string'
  );
}

/**
 * Head-shaped data whose slots may hold references: a thread head, a step's changed fields, a node
 * result (its output and its `logs`).
 */
export type Slotted = Partial<Pick<Thread, 'input' | 'output' | 'variables' | 'contextData'>> & {
  logs?: unknown;
};

/** A copy of `data` with `fn` applied to every value slot (other fields are kept as they are). */
export function mapSlots<T extends Slotted>(data: T, fn: (value: unknown) => unknown): T {
  const out: Record<string, unknown> = { ...data };
  if ('input' in data && data.input !== undefined) out.input = fn(data.input);
  if ('output' in data && data.output !== undefined) out.output = fn(data.output);
  if ('logs' in data && data.logs !== undefined) out.logs = fn(data.logs);
  if (data.variables) {
    const v = data.variables;
    out.variables = {
      ...v,
      global: mapRecord(v.global, fn),
      thread: mapRecord(v.thread, fn),
      subgraph: v.subgraph.map((frame) => mapRecord(frame, fn)),
      loop: v.loop.map((frame) => mapRecord(frame, fn)),
    };
  }
  const loops = data.contextData?.loops;
  if (Array.isArray(loops)) {
    out.contextData = {
      ...data.contextData,
      loops: loops.map((loop: Record<string, unknown>) =>
        loop.items === undefined ? loop : { ...loop, items: fn(loop.items) },
      ),
    };
  }
  // The MCP tool lists a run recorded (functions/tools/mcp-definitions.ts), one slot per server entry.
  const mcpTools = data.contextData?.[MCP_TOOLS_SLOT];
  if (mcpTools !== null && typeof mcpTools === 'object' && !Array.isArray(mcpTools)) {
    out.contextData = {
      ...(out.contextData as Record<string, unknown>),
      [MCP_TOOLS_SLOT]: mapRecord(mcpTools as Record<string, unknown>, fn),
    };
  }
  return out as T;
}

/** A copy of `record` with `fn` applied to each value. */
export function mapRecord(
  record: Record<string, unknown>,
  fn: (value: unknown) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(record)) {
    // defineProperty: a variable named `__proto__` stays plain data.
    Object.defineProperty(out, name, {
      value: fn(value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Every reference in the slots of `data`. */
export function refsIn(data: Slotted): ValueRef[] {
  const refs: ValueRef[] = [];
  mapSlots(data, (value) => {
    if (isValueRef(value)) refs.push(value);
    return value;
  });
  return refs;
}

/** Where a new large value goes: a message the step appended with that content, or the step's object. */
export interface Spiller {
  /** The slot value to store: the value itself when small, else a reference. */
  spill(value: unknown): unknown;
  /** Values this step must write (hash → value); empty when every large value was known. */
  readonly pending: ReadonlyMap<string, unknown>;
  /** Points the pending references at the object that now holds them. */
  resolve(objectId: string): void;
}

/**
 * A spiller that reuses `known` references (hash of a value → its reference, from the values the
 * step loaded), turns values equal to an appended message's content into message references, and
 * collects the rest. References to pending values are completed by `resolve` (they are the same
 * objects as those placed in the data, so the data need not be walked again).
 */
export function createSpiller(
  known: ReadonlyMap<string, ValueRef>,
  messages: ReadonlyMap<string, string> = new Map(),
  options: { nodeId?: string; maxBytes?: number } = {},
): Spiller {
  const maxBytes = options.maxBytes ?? maxValueBytes();
  const pending = new Map<string, unknown>();
  const unresolved: { ref: Record<string, unknown>; hash: string }[] = [];
  return {
    pending,
    spill(value) {
      if (value === undefined) return value;
      checkValueDepth(value, 'a value it stores', options.nodeId);
      const json = canonicalJson(value);
      const reserved =
        value !== null && typeof value === 'object' && !Array.isArray(value) && REF_KEY in value;
      if (json.length <= INLINE_VALUE_BYTES && !reserved && fitsDynamoDb(value)) return value;
      const bytes = Buffer.byteLength(json);
      if (bytes > maxBytes) {
        throw new StepthreadError(
          'VALUE_TOO_LARGE',
          `a value of ${bytes} bytes is over the ${maxBytes}-byte limit on stored values (STEPTHREAD_MAX_VALUE_BYTES)`,
          options.nodeId === undefined ? {} : { nodeId: options.nodeId },
        );
      }
      const hash = shortHash(json);
      const existing = known.get(hash);
      if (existing) return existing;
      const message = typeof value === 'string' ? messages.get(value) : undefined;
      if (message !== undefined) return { [REF_KEY]: message, bytes };
      pending.set(hash, value);
      const ref: Record<string, unknown> = { [REF_KEY]: '', bytes };
      unresolved.push({ ref, hash });
      return ref;
    },
    resolve(objectId) {
      for (const { ref, hash } of unresolved) ref[REF_KEY] = `v:${objectId}/${hash}`;
      unresolved.length = 0;
    },
  };
}

/**
 * Whether DynamoDB (through the document client) holds `value` exactly. It does not hold keys the
 * marshaller treats specially (`__proto__`, `constructor`), integers beyond 2^53, numbers outside its
 * range (1e-130 to 1e126), or more than 32 levels of nesting; such a value, however small, is stored
 * by reference, as JSON in S3, which holds any of them.
 */
export function fitsDynamoDb(value: unknown): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item === 'number') {
      if (!numberFits(item)) return false;
      continue;
    }
    if (typeof item !== 'object' || item === null) continue;
    if (depth >= DYNAMODB_SAFE_DEPTH) return false;
    if (Array.isArray(item)) {
      for (const inner of item) stack.push([inner, depth + 1]);
      continue;
    }
    for (const key of Object.keys(item)) {
      if (UNSAFE_KEYS.has(key) || key === '') return false;
      stack.push([(item as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return true;
}

/** DynamoDB nests 32 levels; the slot itself sits a few levels down in an item. */
const DYNAMODB_SAFE_DEPTH = 24;
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype', 'toJSON']);

function numberFits(n: number): boolean {
  if (!Number.isFinite(n)) return false;
  if (Number.isInteger(n)) return Number.isSafeInteger(n);
  const magnitude = Math.abs(n);
  return magnitude >= 1e-129 && magnitude < 1e125;
}

/** The parts of a reference string. */
export function parseRef(ref: ValueRef): { kind: 'v' | 'm'; object: string; key: string } {
  const text = ref[REF_KEY];
  const slash = text.lastIndexOf('/');
  const kind = text.slice(0, 2);
  if ((kind !== 'v:' && kind !== 'm:') || slash < 3) throw new TypeError(`not a value reference: ${text}`);
  return { kind: kind === 'v:' ? 'v' : 'm', object: text.slice(2, slash), key: text.slice(slash + 1) };
}
