/** Finding integers JSON.parse would round, in JSON text of any size. */
import { describe, expect, it } from 'vitest';
import { inexactNumberIn } from '../../../engine/model/json-values.ts';

describe('inexactNumberIn', () => {
  it('finds an integer beyond 2^53 and lets exact ones, decimals and exponents pass', () => {
    expect(inexactNumberIn('{"id": 12345678901234567891}')).toBe('12345678901234567891');
    expect(inexactNumberIn('[1, -98765432109876543210]')).toBe('-98765432109876543210');
    expect(inexactNumberIn('{"n": 18014398509481984}')).toBeUndefined();
    expect(
      inexactNumberIn('{"n": 9007199254740993.5, "m": 1e300, "k": 0000000000000000001, "t": 5e-324}'),
    ).toBeUndefined();
  });

  it('finds a non-zero number below the smallest double, which would become 0, and lets zeros pass', () => {
    expect(inexactNumberIn('{"z": 1e-400}')).toBe('1e-400');
    expect(inexactNumberIn('[-2.5E-330]')).toBe('-2.5E-330');
    expect(inexactNumberIn(`[0.${'0'.repeat(400)}1]`)).toBe(`0.${'0'.repeat(400)}1`);
    expect(inexactNumberIn('[0, 0.0, -0.0, 0e-400, 0.000e5, 1e-323]')).toBeUndefined();
  });

  it('finds a number beyond the range of a double, which would become Infinity and then null', () => {
    expect(inexactNumberIn('{"n": 1e400}')).toBe('1e400');
    expect(inexactNumberIn('[-2.5E+309]')).toBe('-2.5E+309');
    expect(inexactNumberIn(`[${'9'.repeat(400)}.5]`)).toBe(`${'9'.repeat(400)}.5`);
  });

  it('skips strings, escaped quotes and backslashes included', () => {
    expect(inexactNumberIn('{"a": "12345678901234567891"}')).toBeUndefined();
    expect(inexactNumberIn('{"a": "say \\"12345678901234567891\\""}')).toBeUndefined();
    expect(inexactNumberIn('{"a": "ends in a backslash \\\\", "b": 12345678901234567891}')).toBe(
      '12345678901234567891',
    );
  });

  it('reads a 20 MB string and a 20 MB document of numbers without overflowing the stack', () => {
    const text = JSON.stringify({ big: 'x'.repeat(20 * 1024 * 1024), n: 12345678901234567891n.toString() });
    expect(inexactNumberIn(text)).toBeUndefined();
    expect(inexactNumberIn(`{"big": "${'\\"'.repeat(5_000_000)}", "n": 12345678901234567891}`)).toBe(
      '12345678901234567891',
    );
    expect(inexactNumberIn(`[${'1,'.repeat(5_000_000)}2]`)).toBeUndefined();
  });
});
