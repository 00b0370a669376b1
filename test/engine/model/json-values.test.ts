/** Finding integers JSON.parse would round, in JSON text of any size. */
import { describe, expect, it } from 'vitest';
import { inexactIntegerIn } from '../../../engine/model/json-values.ts';

describe('inexactIntegerIn', () => {
  it('finds an integer beyond 2^53 and lets exact ones, decimals and exponents pass', () => {
    expect(inexactIntegerIn('{"id": 12345678901234567891}')).toBe('12345678901234567891');
    expect(inexactIntegerIn('[1, -98765432109876543210]')).toBe('-98765432109876543210');
    expect(inexactIntegerIn('{"n": 18014398509481984}')).toBeUndefined();
    expect(
      inexactIntegerIn('{"n": 9007199254740993.5, "m": 1e400, "k": 0000000000000000001}'),
    ).toBeUndefined();
  });

  it('skips strings, escaped quotes and backslashes included', () => {
    expect(inexactIntegerIn('{"a": "12345678901234567891"}')).toBeUndefined();
    expect(inexactIntegerIn('{"a": "say \\"12345678901234567891\\""}')).toBeUndefined();
    expect(inexactIntegerIn('{"a": "ends in a backslash \\\\", "b": 12345678901234567891}')).toBe(
      '12345678901234567891',
    );
  });

  it('reads a 20 MB string and a 20 MB document of numbers without overflowing the stack', () => {
    const text = JSON.stringify({ big: 'x'.repeat(20 * 1024 * 1024), n: 12345678901234567891n.toString() });
    expect(inexactIntegerIn(text)).toBeUndefined();
    expect(inexactIntegerIn(`{"big": "${'\\"'.repeat(5_000_000)}", "n": 12345678901234567891}`)).toBe(
      '12345678901234567891',
    );
    expect(inexactIntegerIn(`[${'1,'.repeat(5_000_000)}2]`)).toBeUndefined();
  });
});
