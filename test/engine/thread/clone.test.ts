import { describe, expect, it } from 'vitest';
import { deepCopy } from '../../../engine/thread/clone.ts';

describe('deepCopy', () => {
  it('copies plain data as structuredClone does: undefined kept, nothing shared with the original', () => {
    const value = {
      a: 1,
      gone: undefined,
      nested: { list: [1, 'two', { three: 3 }, null], empty: {} },
      text: 'x'.repeat(2000),
    };
    const copy = deepCopy(value);
    expect(copy).toStrictEqual(structuredClone(value));
    expect(Object.hasOwn(copy, 'gone')).toBe(true);
    copy.nested.list.push(5);
    (copy.nested.list[2] as { three: number }).three = 4;
    expect(value.nested.list).toEqual([1, 'two', { three: 3 }, null]);
  });

  it('keeps a `__proto__` key as data and copies a null-prototype object to a plain one', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as Record<string, unknown>;
    const copy = deepCopy(parsed);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'k']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    expect(Object.getPrototypeOf(deepCopy(bare))).toBe(Object.getPrototypeOf(structuredClone(bare)));
  });

  it('keeps shared sub-objects shared and cycles as cycles, sparse arrays sparse', () => {
    const shared = { n: 1 };
    const holes: unknown[] = [1];
    holes[2] = 3;
    const value: Record<string, unknown> = { left: shared, right: shared, holes };
    value.self = value;
    const copy = deepCopy(value);
    expect(copy.left).toBe(copy.right);
    expect(copy.left).not.toBe(shared);
    expect(copy.self).toBe(copy);
    expect(1 in (copy.holes as unknown[])).toBe(false);
  });

  it('hands anything but plain objects and arrays to structuredClone: a Date copied, a function refused', () => {
    const at = new Date('2025-01-01T00:00:00.000Z');
    const copy = deepCopy({ at, map: new Map([['k', { v: 1 }]]) });
    expect(copy.at).toEqual(at);
    expect(copy.at).not.toBe(at);
    expect(copy.map.get('k')).toEqual({ v: 1 });
    expect(() => deepCopy({ f: () => 1 })).toThrow();
  });
});
