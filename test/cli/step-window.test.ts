import { describe, expect, it } from 'vitest';
import { omittedRanges, parseSteps, rangesOf } from '../../cli/step-window.ts';
import { spansWithin } from '../../functions/stores/thread-store.ts';

describe('inspect --steps', () => {
  it('takes all, a step or a range, and refuses anything else with INVALID_STEPS_RANGE', () => {
    expect(parseSteps(undefined)).toBe('default');
    expect(parseSteps('all')).toBe('all');
    expect(parseSteps('7')).toEqual({ from: 7, to: 7 });
    expect(parseSteps('100-200')).toEqual({ from: 100, to: 200 });
    for (const bad of ['0', '5-3', 'last', '-4', '1-', '1.5']) {
      expect(() => parseSteps(bad)).toThrow(expect.objectContaining({ code: 'INVALID_STEPS_RANGE' }));
    }
  });

  it('shows a thread of up to 50 steps whole, a longer one by its first 10 and last 40', () => {
    expect(rangesOf('default', 50)).toBeUndefined();
    expect(rangesOf('default', 51)).toEqual([
      { from: 1, to: 10 },
      { from: 12, to: 51 },
    ]);
    expect(rangesOf('all', 5000)).toBeUndefined();
    expect(rangesOf({ from: 3, to: 4 }, 5000)).toEqual([{ from: 3, to: 4 }]);
    expect(omittedRanges([1, 2, 5, 6], 9)).toEqual([
      { from: 3, to: 4 },
      { from: 7, to: 9 },
    ]);
    expect(omittedRanges([1, 2, 3], 3)).toEqual([]);
  });

  it('reads a copy’s window from its source’s steps and its own, each record once', () => {
    // A copy of 30 of its source's steps, with 40 of its own: positions 1-30 and 31-70.
    const ranges = [
      { from: 1, to: 10 },
      { from: 26, to: 70 },
      { from: 60, to: 65 },
    ];
    expect(spansWithin(ranges, 0, 30)).toEqual([
      { from: 1, to: 10 },
      { from: 26, to: 30 },
    ]);
    expect(spansWithin(ranges, 30, 40)).toEqual([{ from: 1, to: 40 }]);
    expect(spansWithin([{ from: 1, to: 10 }], 30, 40)).toEqual([]);
  });
});
