import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JoinConfig, JoinStrategy } from '../../../engine/model/schema.ts';
import { forkThread } from '../../../engine/thread/fork.ts';
import {
  decidesEarly,
  forEachItems,
  itemIndexOf,
  itemPathId,
  itemVariables,
  joinItems,
} from '../../../engine/thread/map.ts';
import type { Thread, ThreadStatus } from '../../../engine/thread/types.ts';
import { runningThread, testEnv } from './fixtures.ts';

const PATH = 'each/doc';

function items(statuses: readonly (ThreadStatus | undefined)[]): Thread[] {
  const parent = runningThread();
  const { children } = forkThread(
    parent,
    {
      forkPathIds: statuses.map((_, i) => itemPathId(PATH, i)),
      childThreadIds: statuses.map((_, i) => `base-${i}`),
    },
    testEnv(),
  );
  return children.flatMap((child, i) => {
    const status = statuses[i];
    if (status === undefined) return [];
    return [
      {
        ...child,
        status,
        ...(status === 'COMPLETED' ? { output: `out ${i}` } : {}),
        ...(status === 'FAILED'
          ? { errors: [{ code: 'EXPRESSION_ERROR' as const, message: `bad ${i}` }] }
          : {}),
      },
    ];
  });
}

function config(joinStrategy: JoinStrategy, extra: Partial<JoinConfig> = {}): JoinConfig {
  return { forkPathIds: [PATH], joinStrategy, ...extra };
}

describe('FORK over a list: names and scope', () => {
  it('numbers item paths and reads the index back', () => {
    expect(itemPathId(PATH, 12)).toBe('each/doc[12]');
    expect(itemIndexOf('each/doc[12]', PATH)).toBe(12);
    expect(itemIndexOf('each/doc', PATH)).toBeUndefined();
    expect(itemIndexOf('other[1]', PATH)).toBeUndefined();
    expect(itemVariables(undefined, { a: 1 }, 3)).toEqual({ item: { a: 1 }, itemIndex: 3 });
    expect(itemVariables('doc', 'x', 0)).toEqual({ doc: 'x', docIndex: 0 });
  });

  it('refuses a forEach value that is not an array with FORK_EACH_NOT_ARRAY', () => {
    expect(forEachItems([1, 2], 'fan')).toEqual([1, 2]);
    for (const value of [{ a: 1 }, 'abc', 3, null, undefined]) {
      expect(() => forEachItems(value, 'fan')).toThrowError(
        expect.objectContaining({ code: 'FORK_EACH_NOT_ARRAY', nodeId: 'fan' }),
      );
    }
  });
});

describe('joinItems', () => {
  it('merges an array in item order: outputs, {error} for failed items, null for unfinished ones', () => {
    const children = items(['COMPLETED', 'FAILED', 'CANCELLED', 'COMPLETED', undefined]).reverse();
    const joined = joinItems({
      parent: runningThread(),
      children,
      config: config('ANY_COMPLETED'),
      total: 5,
      env: testEnv(),
    });
    expect(joined.result).toEqual({
      status: 'COMPLETED',
      output: ['out 0', { error: { code: 'EXPRESSION_ERROR', message: 'bad 1' } }, null, 'out 3', null],
    });
  });

  it('keeps the parent conversation unless mainItem names a completed item', () => {
    const parent = runningThread();
    const children = items(['COMPLETED', 'COMPLETED']);
    const own = joinItems({ parent, children, config: config('ALL_COMPLETED'), total: 2, env: testEnv() });
    expect(own.parent.conversation).toEqual(parent.conversation);
    const main = joinItems({
      parent,
      children,
      config: config('ALL_COMPLETED', { mainItem: 1 }),
      total: 2,
      env: testEnv(),
    });
    expect(main.parent.conversation.log).toEqual(children[1]!.conversation.log);
    expect(main.parent.conversation.threadId).toBe(parent.id);
  });

  it("names the list in its THREAD_JOINED event, not each item thread: the event's size does not grow with the list", () => {
    const sizeFor = (n: number) => {
      const joined = joinItems({
        parent: runningThread(),
        children: items(new Array<ThreadStatus>(n).fill('COMPLETED')),
        config: config('ALL_COMPLETED'),
        total: n,
        env: testEnv(),
      });
      const [event] = joined.events;
      expect(event).toMatchObject({ type: 'THREAD_JOINED', childThreadIds: [], items: n });
      expect(event).not.toHaveProperty('mainThreadId');
      return JSON.stringify(event).length;
    };
    // 10 and 9,999 items: the count's two more digits (in `items` and the reason), nothing per item.
    expect(sizeFor(9_999) - sizeFor(10)).toBe(4);
  });

  it("names the item whose conversation it restored (mainItem), which stored bytes count as the item's", () => {
    const children = items(['COMPLETED', 'COMPLETED', 'FAILED']);
    const joined = (mainItem: number, joinStrategy: JoinStrategy = 'ANY_COMPLETED') =>
      joinItems({
        parent: runningThread(),
        children,
        config: config(joinStrategy, { mainItem }),
        total: 3,
        env: testEnv(),
      }).events[0];
    expect(joined(1)).toMatchObject({ status: 'COMPLETED', mainThreadId: 'base-1' });
    // A failed main item restores nothing: the parent keeps its own conversation.
    expect(joined(2)).not.toHaveProperty('mainThreadId');
  });

  it('completes an empty list with [] and fails a threshold above the list length', () => {
    const empty = joinItems({
      parent: runningThread(),
      children: [],
      config: config('ALL_FAILED'),
      total: 0,
      env: testEnv(),
    });
    expect(empty.result).toEqual({ status: 'COMPLETED', output: [] });
    const high = joinItems({
      parent: runningThread(),
      children: items(['COMPLETED', 'COMPLETED']),
      config: config('SUCCESS_COUNT_THRESHOLD', { threshold: 3 }),
      total: 2,
      env: testEnv(),
    });
    expect(high.result.status).toBe('FAILED');
  });
});

describe('decidesEarly never contradicts the decision over every item', () => {
  const strategies: JoinStrategy[] = [
    'ALL_COMPLETED',
    'ANY_COMPLETED',
    'ALL_FAILED',
    'ANY_FAILED',
    'SUCCESS_COUNT_THRESHOLD',
  ];

  it('an early decision is the one the JOIN reaches once all items finished, whatever the later outcomes', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...strategies),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
        fc.nat(),
        (strategy, completedFlags, seed) => {
          const total = completedFlags.length;
          const threshold = (seed % total) + 1;
          let completed = 0;
          let failed = 0;
          completedFlags.forEach((ok, i) => {
            if (ok) completed += 1;
            else failed += 1;
            const early = decidesEarly({
              strategy,
              threshold,
              total,
              status: ok ? 'COMPLETED' : 'FAILED',
              counts: { completed, failed },
            });
            if (!early) return;
            // Whatever the rest do, the join over the items finished so far plus any ending decides
            // the same: compare the two extremes for the remaining items.
            const finished = completedFlags.slice(0, i + 1);
            for (const rest of [true, false]) {
              const all = [...finished, ...Array.from({ length: total - finished.length }, () => rest)];
              const joined = joinItems({
                parent: runningThread(),
                children: items(all.map((flag) => (flag ? 'COMPLETED' : 'FAILED'))),
                config: config(strategy, strategy === 'SUCCESS_COUNT_THRESHOLD' ? { threshold } : {}),
                total,
                env: testEnv(),
              });
              const partial = joinItems({
                parent: runningThread(),
                children: items([...finished.map((flag) => (flag ? 'COMPLETED' : 'FAILED') as ThreadStatus)]),
                config: config(strategy, strategy === 'SUCCESS_COUNT_THRESHOLD' ? { threshold } : {}),
                total,
                env: testEnv(),
              });
              expect(partial.result.status).toBe(joined.result.status);
            }
          });
        },
      ),
    );
  });
});
