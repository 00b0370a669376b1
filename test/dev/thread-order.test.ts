/**
 * The order the execution page lists threads in (pure: threads as the store lists them, in hashed-id
 * order): the root, then depth first, each thread's fork children in their FORK's path order, a
 * list's items by index, a FORK run again in a loop after its earlier run.
 */
import { describe, expect, it } from 'vitest';
import { inForkOrder, pathOrderOf } from '../../cli/thread-order.ts';
import type { Thread } from '../../engine/thread/types.ts';

const AT = '2026-01-01T00:00:00.000Z';

function thread(
  id: string,
  fields: { parent?: string; path?: string; forkStep?: number; item?: number; startTime?: string } = {},
): Thread {
  return {
    id,
    startTime: fields.startTime ?? AT,
    metadata: {
      ...(fields.parent
        ? { parentThreadId: fields.parent, joinKey: `${fields.parent}/f/${fields.forkStep ?? 2}` }
        : {}),
      ...(fields.path ? { forkPathId: fields.path } : {}),
    },
    contextData: fields.item === undefined ? {} : { listItem: { index: fields.item, total: 12 } },
  } as unknown as Thread;
}

/** FORK `split` over b, a, c; `inner` (on path a) over y, x; `each` over a list. */
const paths = (...pathIds: string[]) => ({ paths: pathIds.map((pathId) => ({ pathId })) });
const order = pathOrderOf([
  paths('split/b', 'split/a', 'split/c'),
  paths('inner/y', 'inner/x'),
  paths('each/doc'),
]);

const ids = (threads: Thread[]) => threads.map((t) => t.id);

describe("the execution page's thread order", () => {
  it('lists the root first, then each fork child under its parent in FORK order, nested ones depth first', () => {
    const listed = [
      thread('c', { parent: 'root', path: 'split/c' }),
      thread('a', { parent: 'root', path: 'split/a' }),
      thread('a-x', { parent: 'a', path: 'inner/x' }),
      thread('root', { startTime: '2025-12-31T23:59:59.000Z' }),
      thread('b', { parent: 'root', path: 'split/b' }),
      thread('a-y', { parent: 'a', path: 'inner/y' }),
    ];
    expect(ids(inForkOrder(listed, 'root', order))).toEqual(['root', 'b', 'a', 'a-y', 'a-x', 'c']);
  });

  it("lists a list's items by index (10 after 9), a FORK's later run after its earlier one", () => {
    const items = [10, 2, 11, 0, 9, 1].map((index) =>
      thread(`i${index}`, { parent: 'root', path: `each/doc[${index}]`, item: index, forkStep: 5 }),
    );
    const again = thread('again0', { parent: 'root', path: 'each/doc[0]', item: 0, forkStep: 9 });
    const listed = [again, ...items, thread('root')];
    expect(ids(inForkOrder(listed, 'root', order))).toEqual([
      'root',
      'i0',
      'i1',
      'i2',
      'i9',
      'i10',
      'i11',
      'again0',
    ]);
  });

  it('falls back to start times where the graph is unknown, and lists threads without a listed parent after the root', () => {
    const listed = [
      thread('copy', { startTime: '2026-01-01T00:00:05.000Z' }),
      thread('late', { parent: 'root', path: 'split/a', startTime: '2026-01-01T00:00:02.000Z' }),
      thread('early', { parent: 'root', path: 'split/b', startTime: '2026-01-01T00:00:01.000Z' }),
      thread('root'),
    ];
    expect(ids(inForkOrder(listed, 'root', new Map()))).toEqual(['root', 'early', 'late', 'copy']);
  });
});
