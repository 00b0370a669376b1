import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JOIN_STRATEGIES, type JoinStrategy } from '../../../engine/model/schema.ts';
import {
  type BranchOutcome,
  type BranchStatus,
  decideJoin,
  type JoinDecision,
} from '../../../engine/thread/join.ts';

/** 'CCF' → three outcomes for paths p0, p1, p2. */
function outcomes(pattern: string): BranchOutcome[] {
  return [...pattern].map((c, i) => ({ forkPathId: `p${i}`, status: c === 'C' ? 'COMPLETED' : 'FAILED' }));
}

type Expected = 'pending' | 'success' | 'failure';
const summary = (d: JoinDecision): Expected => (!d.decided ? 'pending' : d.success ? 'success' : 'failure');

// [strategy, threshold, total, outcomes so far, expected]
const table: ReadonlyArray<[JoinStrategy, number | undefined, number, string, Expected]> = [
  ['ALL_COMPLETED', undefined, 3, '', 'pending'],
  ['ALL_COMPLETED', undefined, 3, 'CC', 'pending'],
  ['ALL_COMPLETED', undefined, 3, 'CCC', 'success'],
  ['ALL_COMPLETED', undefined, 3, 'F', 'failure'],
  ['ALL_COMPLETED', undefined, 3, 'CF', 'failure'],
  ['ANY_COMPLETED', undefined, 3, '', 'pending'],
  ['ANY_COMPLETED', undefined, 3, 'FF', 'pending'],
  ['ANY_COMPLETED', undefined, 3, 'C', 'success'],
  ['ANY_COMPLETED', undefined, 3, 'FC', 'success'],
  ['ANY_COMPLETED', undefined, 3, 'FFF', 'failure'],
  ['ALL_FAILED', undefined, 3, 'FF', 'pending'],
  ['ALL_FAILED', undefined, 3, 'FFF', 'success'],
  ['ALL_FAILED', undefined, 3, 'C', 'failure'],
  ['ALL_FAILED', undefined, 3, 'FC', 'failure'],
  ['ANY_FAILED', undefined, 3, 'CC', 'pending'],
  ['ANY_FAILED', undefined, 3, 'F', 'success'],
  ['ANY_FAILED', undefined, 3, 'CF', 'success'],
  ['ANY_FAILED', undefined, 3, 'CCC', 'failure'],
  // threshold = 1: the first completion decides; only all-failed fails.
  ['SUCCESS_COUNT_THRESHOLD', 1, 3, '', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 1, 3, 'FF', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 1, 3, 'C', 'success'],
  ['SUCCESS_COUNT_THRESHOLD', 1, 3, 'FFF', 'failure'],
  // threshold = total: behaves like ALL_COMPLETED.
  ['SUCCESS_COUNT_THRESHOLD', 3, 3, 'CC', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 3, 3, 'CCC', 'success'],
  ['SUCCESS_COUNT_THRESHOLD', 3, 3, 'F', 'failure'],
  // threshold 2 of 4: success at the second completion, failure at the third failure (the point
  // where the remaining branches can no longer reach it), not before.
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'C', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'FC', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'FCC', 'success'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'FF', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'FFC', 'pending'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'FFF', 'failure'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'CFFF', 'failure'],
  ['SUCCESS_COUNT_THRESHOLD', 2, 4, 'CFFC', 'success'],
];

describe('decideJoin', () => {
  it.each(table)('%s (threshold %s) of %i with "%s" → %s', (strategy, threshold, total, seen, expected) => {
    const decision = decideJoin({
      strategy,
      ...(threshold === undefined ? {} : { threshold }),
      total,
      outcomes: outcomes(seen),
    });
    expect(summary(decision)).toBe(expected);
    if (decision.decided) expect(decision.reason).not.toBe('');
  });

  it('uses the threshold (the seed SDK ignored it)', () => {
    const seen = outcomes('CF');
    expect(
      summary(decideJoin({ strategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 1, total: 3, outcomes: seen })),
    ).toBe('success');
    expect(
      summary(decideJoin({ strategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 2, total: 3, outcomes: seen })),
    ).toBe('pending');
    expect(
      summary(decideJoin({ strategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 3, total: 3, outcomes: seen })),
    ).toBe('failure');
  });

  it.each([undefined, 0, 4, 1.5])(
    'rejects threshold %s for 3 paths with INVALID_JOIN_THRESHOLD',
    (threshold) => {
      expect(() =>
        decideJoin({
          strategy: 'SUCCESS_COUNT_THRESHOLD',
          ...(threshold === undefined ? {} : { threshold }),
          total: 3,
          outcomes: [],
        }),
      ).toThrowError(expect.objectContaining({ code: 'INVALID_JOIN_THRESHOLD' }));
    },
  );

  it('counts a repeated path once, its last outcome winning (a retried branch)', () => {
    const retried: BranchOutcome[] = [
      { forkPathId: 'p0', status: 'FAILED' },
      { forkPathId: 'p0', status: 'COMPLETED' },
    ];
    expect(summary(decideJoin({ strategy: 'ANY_FAILED', total: 2, outcomes: retried }))).toBe('pending');
    expect(summary(decideJoin({ strategy: 'ANY_COMPLETED', total: 2, outcomes: retried }))).toBe('success');
  });

  it('rejects more distinct outcomes than paths, and zero paths', () => {
    expect(() => decideJoin({ strategy: 'ALL_COMPLETED', total: 1, outcomes: outcomes('CC') })).toThrowError(
      expect.objectContaining({ code: 'INVALID_FORK_PATH_IDS' }),
    );
    expect(() => decideJoin({ strategy: 'ALL_COMPLETED', total: 0, outcomes: [] })).toThrowError(
      expect.objectContaining({ code: 'INVALID_FORK_PATH_IDS' }),
    );
  });

  it('decides exactly when every way the pending branches could end gives the same result', () => {
    const scenario = fc
      .record({
        strategy: fc.constantFrom(...JOIN_STRATEGIES),
        statuses: fc.array(fc.constantFrom<BranchStatus>('COMPLETED', 'FAILED'), {
          minLength: 1,
          maxLength: 6,
        }),
        thresholdSeed: fc.nat(),
        seenCount: fc.nat(),
      })
      .map(({ strategy, statuses, thresholdSeed, seenCount }) => ({
        strategy,
        threshold: (thresholdSeed % statuses.length) + 1,
        seen: statuses.slice(0, seenCount % (statuses.length + 1)),
        total: statuses.length,
      }));
    fc.assert(
      fc.property(scenario, ({ strategy, threshold, seen, total }) => {
        const decide = (statuses: readonly BranchStatus[]) =>
          decideJoin({
            strategy,
            threshold,
            total,
            outcomes: statuses.map((status, i) => ({ forkPathId: `p${i}`, status })),
          });
        const pending = total - seen.length;
        const finals = new Set<Expected>();
        for (let mask = 0; mask < 2 ** pending; mask++) {
          const rest = Array.from(
            { length: pending },
            (_, i): BranchStatus => ((mask >> i) & 1 ? 'COMPLETED' : 'FAILED'),
          );
          const final = summary(decide([...seen, ...rest]));
          expect(final).not.toBe('pending'); // all branches finished → always decided
          finals.add(final);
        }
        const now = summary(decide(seen));
        if (finals.size === 1) expect(now).toBe([...finals][0]);
        else expect(now).toBe('pending');
      }),
      { numRuns: 300 },
    );
  });
});

describe('decideJoin with a main path', () => {
  const outcome = (forkPathId: string, status: 'COMPLETED' | 'FAILED') => ({ forkPathId, status });

  it('waits for the main path before a success, whichever branch was faster', () => {
    const input = { strategy: 'ANY_COMPLETED' as const, total: 3, mainPathId: 'a' };
    expect(decideJoin({ ...input, outcomes: [outcome('b', 'COMPLETED')] })).toEqual({ decided: false });
    expect(
      decideJoin({ ...input, outcomes: [outcome('b', 'COMPLETED'), outcome('a', 'FAILED')] }),
    ).toMatchObject({
      decided: true,
      success: true,
    });
    expect(decideJoin({ ...input, outcomes: [outcome('a', 'COMPLETED')] })).toMatchObject({
      decided: true,
      success: true,
    });
  });

  it('decides a failure at once: the main path cannot change it', () => {
    const decision = decideJoin({
      strategy: 'ALL_COMPLETED',
      total: 3,
      mainPathId: 'a',
      outcomes: [outcome('c', 'FAILED')],
    });
    expect(decision).toMatchObject({ decided: true, success: false });
  });

  it('ANY_FAILED won by a failure still waits for every path, so it merges each completed one', () => {
    const input = { strategy: 'ANY_FAILED' as const, total: 3, mainPathId: 'a' };
    const early = [outcome('a', 'COMPLETED'), outcome('b', 'FAILED')];
    expect(decideJoin({ ...input, outcomes: early })).toEqual({ decided: false });
    expect(decideJoin({ ...input, outcomes: [...early, outcome('c', 'COMPLETED')] })).toMatchObject({
      decided: true,
      success: true,
    });
    // Every path completed: the join fails, as before.
    const allDone = [outcome('a', 'COMPLETED'), outcome('b', 'COMPLETED')];
    expect(decideJoin({ ...input, total: 2, outcomes: allDone })).toMatchObject({ success: false });
  });

  it('SUCCESS_COUNT_THRESHOLD met before the main path ran still waits for it', () => {
    const input = { strategy: 'SUCCESS_COUNT_THRESHOLD' as const, threshold: 2, total: 3, mainPathId: 'c' };
    const early = [outcome('a', 'COMPLETED'), outcome('b', 'COMPLETED')];
    expect(decideJoin({ ...input, outcomes: early })).toEqual({ decided: false });
    expect(decideJoin({ ...input, outcomes: [...early, outcome('c', 'FAILED')] })).toMatchObject({
      success: true,
    });
  });
});
