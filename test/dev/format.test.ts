/** How the console writes a duration: ms, then seconds, then minutes and hours for long waits. */
import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../console/src/api.ts';

describe('formatDuration', () => {
  it('reads at a glance whatever the length', () => {
    expect(formatDuration(undefined)).toBe('');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(2_345)).toBe('2.35 s');
    expect(formatDuration(42_100)).toBe('42.1 s');
    expect(formatDuration(411_000)).toBe('6 min 51 s');
    expect(formatDuration(26 * 3_600_000 + 5 * 60_000)).toBe('26 h 5 min');
  });
});
