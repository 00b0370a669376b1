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
 * Whether two values have the same canonical JSON (`canonicalJson(a) === canonicalJson(b)`), by a walk
 * that builds no text: what a step compares its thread's fields with, on every step. Plain JSON data
 * (strings, finite numbers, booleans, null, arrays, plain objects) is compared in place; anything else
 * (undefined, a non-finite number, a function, an object with toJSON) by its canonical JSON.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  return same(a, b, 0);
}

function plainScalar(value: unknown): boolean {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

/** A member JSON.stringify leaves out of an object. */
function absent(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

function same(a: unknown, b: unknown, depth: number): boolean {
  if (a === b && plainScalar(a)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    if (plainScalar(a) && plainScalar(b)) return false;
    return canonicalJson(a) === canonicalJson(b);
  }
  const exotic = (value: object) => typeof (value as { toJSON?: unknown }).toJSON === 'function';
  if (depth >= DEPTH_LIMIT || exotic(a) || exotic(b)) return canonicalJson(a) === canonicalJson(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i += 1) if (!same(a[i], b[i], depth + 1)) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const key of Object.keys(x)) {
    const member = x[key];
    if (absent(member)) continue;
    count += 1;
    if (!Object.hasOwn(y, key) || absent(y[key]) || !same(member, y[key], depth + 1)) return false;
  }
  for (const key of Object.keys(y)) if (!absent(y[key])) count -= 1;
  return count === 0;
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
