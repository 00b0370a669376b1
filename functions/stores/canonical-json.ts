/**
 * Deterministic JSON: object keys sorted, undefined members dropped. Content hashes and
 * idempotency checks use it, because a value read back from DynamoDB (or rebuilt on a retry)
 * has the same content but not necessarily the same key order.
 */
import { createHash } from 'node:crypto';
import { checkValueDepth, MAX_VALUE_DEPTH } from '../../engine/model/json-values.ts';

export function canonicalJson(value: unknown): string {
  // canonicalize recurses: a value past the limit is refused before it could overflow the stack. Values
  // are checked against MAX_VALUE_DEPTH where they enter; this also hashes the records holding them.
  checkValueDepth(value, 'a value', undefined, 2 * MAX_VALUE_DEPTH);
  return JSON.stringify(canonicalize(value)) ?? 'null';
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Hash of a value's canonical JSON: equal for equal content, whatever the key order. */
export function contentHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

function canonicalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : canonicalize(item)));
  if (value !== null && typeof value === 'object') {
    // Respect toJSON (e.g. Date) the way JSON.stringify would.
    const jsonable = value as { toJSON?: () => unknown };
    if (typeof jsonable.toJSON === 'function') return canonicalize(jsonable.toJSON());
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      // defineProperty: a `__proto__` key stays data instead of replacing the prototype.
      if (member !== undefined) {
        Object.defineProperty(sorted, key, {
          value: canonicalize(member),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    return sorted;
  }
  return value;
}

/** 128 bits of a text's sha256 in hex: enough to name content, at half the bytes in every item. */
export function shortHash(text: string): string {
  return sha256Hex(text).slice(0, 32);
}
