/** The paths a join's decision counts, from its item's report order (pure: no store). */
import { describe, expect, it } from 'vitest';
import { countedPaths, TIMER_ENTRY } from '../../../functions/nodes/branch-report.ts';
import type { BranchOutcome, JoinState } from '../../../functions/stores/join-store.ts';

const done = (status: BranchOutcome['status']): BranchOutcome => ({
  threadId: 't',
  status,
  endedAt: '2025-01-01T00:00:00.000Z',
});

function state(order: [string, BranchOutcome['status']][], decision?: string[]): JoinState {
  return {
    outcomes: Object.fromEntries(order.map(([path, status]) => [path, done(status)])),
    order: order.map(([path]) => path),
    ...(decision ? { decision } : {}),
  };
}

const paths = ['a', 'b', 'c'];

describe('countedPaths: the shortest prefix of the report order that decides', () => {
  it('counts the paths up to the report that decided; later reports (stragglers) change nothing', () => {
    const config = { joinStrategy: 'ALL_COMPLETED' as const, forkPathIds: paths, mainPathId: 'a' };
    const decided = state([
      ['a', 'COMPLETED'],
      ['b', 'FAILED'],
    ]);
    expect(countedPaths(decided, config, 3)).toEqual(['a', 'b']);
    const later = state([
      ['a', 'COMPLETED'],
      ['b', 'FAILED'],
      ['c', 'COMPLETED'],
    ]);
    expect(countedPaths(later, config, 3)).toEqual(['a', 'b']);
  });

  it('waits for the main path of a successful join', () => {
    const config = { joinStrategy: 'ANY_COMPLETED' as const, forkPathIds: paths, mainPathId: 'a' };
    const order = state([
      ['b', 'COMPLETED'],
      ['c', 'COMPLETED'],
      ['a', 'COMPLETED'],
    ]);
    expect(countedPaths(order, config, 3)).toEqual(['b', 'c', 'a']);
  });

  it('is undefined while nothing decided', () => {
    const config = { joinStrategy: 'ALL_COMPLETED' as const, forkPathIds: paths, mainPathId: 'a' };
    expect(countedPaths(state([['a', 'COMPLETED']]), config, 3)).toBeUndefined();
    expect(countedPaths(state([]), config, 3)).toBeUndefined();
  });

  it('a timeout decides with whatever reported before it', () => {
    const config = {
      joinStrategy: 'ALL_COMPLETED' as const,
      forkPathIds: paths,
      mainPathId: 'a',
      timeout: 5,
    };
    const timedOut = state([
      ['b', 'COMPLETED'],
      [TIMER_ENTRY, 'TIMEOUT'],
      ['a', 'COMPLETED'],
    ]);
    expect(countedPaths(timedOut, config, 3)).toEqual(['b']);
  });

  it("keeps an earlier layout's recorded decision", () => {
    const config = { joinStrategy: 'ANY_COMPLETED' as const, forkPathIds: paths, mainPathId: 'a' };
    const old = state(
      [
        ['a', 'COMPLETED'],
        ['b', 'COMPLETED'],
      ],
      ['a', 'b'],
    );
    expect(countedPaths(old, config, 3)).toEqual(['a', 'b']);
  });
});
