/**
 * Deterministic JSON: object keys sorted, undefined members dropped. Content hashes and
 * idempotency checks use it, because a value read back from DynamoDB (or rebuilt on a retry)
 * has the same content but not necessarily the same key order.
 */
import { createHash } from 'node:crypto';
import { MAX_VALUE_DEPTH, valueTooDeep } from '../../engine/model/json-values.ts';

export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value, 0)) ?? 'null';
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Hash of a value's canonical JSON: equal for equal content, whatever the key order. */
export function contentHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * Values are checked against MAX_VALUE_DEPTH where they enter; this also hashes the records that hold
 * them, so it allows twice that, and refuses anything deeper before the recursion could overflow.
 */
const DEPTH_LIMIT = 2 * MAX_VALUE_DEPTH;

/** `value` with every object's keys in sorted order; `depth` is how many containers hold it. */
function canonicalize(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= DEPTH_LIMIT) throw valueTooDeep('a value', DEPTH_LIMIT);
  if (Array.isArray(value)) {
    return value.map((item) => (item === undefined ? null : canonicalize(item, depth + 1)));
  }
  // Respect toJSON (e.g. Date) the way JSON.stringify would.
  const jsonable = value as { toJSON?: () => unknown };
  if (typeof jsonable.toJSON === 'function') return canonicalize(jsonable.toJSON(), depth);
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined) continue;
    if (key === '__proto__') {
      // Assigned, it would replace the prototype; defined, it stays data.
      Object.defineProperty(sorted, key, {
        value: canonicalize(member, depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      sorted[key] = canonicalize(member, depth + 1);
    }
  }
  return sorted;
}

/** 128 bits of a text's sha256 in hex: enough to name content, at half the bytes in every item. */
export function shortHash(text: string): string {
  return sha256Hex(text).slice(0, 32);
}
