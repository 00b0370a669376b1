/**
 * Canonical JSON (functions/stores/canonical-json.ts): what content hashes and idempotency checks
 * compare, so equal content must give equal text whatever the key order, and JSON.stringify's rules
 * must hold for everything else.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_VALUE_DEPTH } from '../../engine/model/json-values.ts';
import { canonicalJson, contentHash, sameJson } from '../../functions/stores/canonical-json.ts';

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

describe('canonicalJson', () => {
  it('sorts keys at every level, so key order never changes the text or the hash', () => {
    const a = { b: 1, a: { d: [{ y: 2, x: 1 }], c: 'x' } };
    const b = { a: { c: 'x', d: [{ x: 1, y: 2 }] }, b: 1 };
    expect(canonicalJson(a)).toBe('{"a":{"c":"x","d":[{"x":1,"y":2}]},"b":1}');
    expect(canonicalJson(b)).toBe(canonicalJson(a));
    expect(contentHash(b)).toBe(contentHash(a));
  });

  it('follows JSON.stringify for undefined, functions, non-finite numbers, toJSON and strings', () => {
    const value = {
      gone: undefined,
      fn: () => 1,
      list: [undefined, () => 1, Number.NaN, Number.POSITIVE_INFINITY, -0],
      when: new Date(Date.UTC(2026, 0, 2)),
      text: 'é "quoted"\n\u2028',
    };
    expect(canonicalJson(value)).toBe(
      JSON.stringify({
        list: [null, null, null, null, 0],
        text: 'é "quoted"\n\u2028',
        when: '2026-01-02T00:00:00.000Z',
      }),
    );
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson('x')).toBe('"x"');
  });

  it('keeps a "__proto__" key as data, in its sorted place', () => {
    const value = JSON.parse('{"z":1,"__proto__":{"polluted":true},"a":2}') as unknown;
    expect(canonicalJson(value)).toBe('{"__proto__":{"polluted":true},"a":2,"z":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`takes ${2 * MAX_VALUE_DEPTH} levels of nesting and refuses more with VALUE_TOO_DEEP, even 100,000`, () => {
    expect(canonicalJson(nested(2 * MAX_VALUE_DEPTH))).toBe(JSON.stringify(nested(2 * MAX_VALUE_DEPTH)));
    for (const levels of [2 * MAX_VALUE_DEPTH + 1, 100_000]) {
      expect(() => canonicalJson(nested(levels))).toThrow(
        expect.objectContaining({
          code: 'VALUE_TOO_DEEP',
          message: `a value nests arrays and objects more than ${2 * MAX_VALUE_DEPTH} levels deep`,
        }),
      );
    }
  });
});

describe('sameJson', () => {
  /** Values as steps compare them, and the exotic ones JSON.stringify has rules for. */
  const value = fc.letrec((tie) => ({
    any: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom(
        null,
        undefined,
        true,
        false,
        0,
        -0,
        1,
        1.5,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        '',
        'a',
        'b',
      ),
      fc.array(tie('any'), { maxLength: 4 }),
      fc.dictionary(fc.constantFrom('a', 'b', 'c', '__proto__', 'toJSON'), tie('any'), { maxKeys: 4 }),
      fc.date({ noInvalidDate: true }),
    ),
  })).any;
  /** The same content with every object's keys in reverse order. */
  const reordered = (input: unknown): unknown => {
    if (Array.isArray(input)) return input.map(reordered);
    if (input === null || typeof input !== 'object' || input instanceof Date) return input;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(input).reverse()) {
      Object.defineProperty(out, key, {
        value: reordered((input as Record<string, unknown>)[key]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };

  it('agrees with comparing canonical JSON, for any two values and for reordered copies', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        expect(sameJson(a, b)).toBe(canonicalJson(a) === canonicalJson(b));
        expect(sameJson(a, reordered(a))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('drops undefined members as JSON does, and tells arrays, objects and scalars apart', () => {
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson([undefined], [null])).toBe(true);
    expect(sameJson({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson('1', 1)).toBe(false);
    expect(sameJson(0, -0)).toBe(true);
  });
});
