import { describe, expect, it } from 'vitest';
import {
  concatRuns,
  indexOfPosition,
  isNormalised,
  positionAt,
  runsFromPositions,
  runsProblem,
  sliceRuns,
} from '../../../engine/conversation/runs.ts';

describe('runs', () => {
  it('merges continuing runs and drops empty ones', () => {
    expect(
      concatRuns(
        [[0, 3]],
        [
          [3, 5],
          [7, 7],
          [9, 10],
        ],
        [[10, 12]],
      ),
    ).toEqual([
      [0, 5],
      [9, 12],
    ]);
  });

  it('slices by visible position across runs, clamping like Array#slice', () => {
    const runs = [
      [10, 13],
      [0, 2],
      [5, 6],
    ] as const;
    // visible: 10 11 12 0 1 5
    expect(sliceRuns(runs, 2, 5)).toEqual([
      [12, 13],
      [0, 2],
    ]);
    expect(sliceRuns(runs, 4, 100)).toEqual([
      [1, 2],
      [5, 6],
    ]);
    expect(sliceRuns(runs, 6, 9)).toEqual([]);
  });

  it('maps between visible positions and log positions', () => {
    const runs = [
      [10, 13],
      [0, 2],
    ] as const;
    expect(positionAt(runs, 3)).toBe(0);
    expect(positionAt(runs, 5)).toBeUndefined();
    expect(indexOfPosition(runs, 1)).toBe(4);
    expect(indexOfPosition(runs, 5)).toBeUndefined();
    expect(runsFromPositions([4, 5, 6, 1, 2, 9])).toEqual([
      [4, 7],
      [1, 3],
      [9, 10],
    ]);
  });

  it('reports overlaps, empty runs and runs past the log', () => {
    expect(
      runsProblem(
        [
          [0, 3],
          [5, 6],
        ],
        6,
      ),
    ).toBeUndefined();
    expect(
      runsProblem(
        [
          [5, 8],
          [0, 6],
        ],
        10,
      ),
    ).toMatch(/overlap/);
    expect(runsProblem([[2, 2]], 10)).toMatch(/non-empty/);
    expect(runsProblem([[0, 11]], 10)).toMatch(/past the log/);
    expect(
      isNormalised([
        [0, 2],
        [2, 3],
      ]),
    ).toBe(false);
    expect(
      isNormalised([
        [2, 3],
        [0, 2],
      ]),
    ).toBe(true);
  });
});
