/**
 * Item threads of a FORK over a list, at the handler level: the FORK writes its item source and no
 * thread; each item's first step creates its own thread (once, whatever retries and crashes); an item
 * that starts after its join decided is created CANCELLED.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../../engine/thread/types.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { joinKeyFor } from '../../../functions/nodes/ids.ts';
import { fullThread } from '../fixtures.ts';
import {
  crashingStores,
  failureOf,
  type Harness,
  INJECTED,
  run,
  startEvent,
  startHarness,
} from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('mapitems');
});
afterAll(() => h.close());

const DOCS = ['alpha', { nested: 'béta' }, 3];

const forkNode: TaskNode = {
  id: 'fan',
  type: 'FORK',
  config: {
    forkPathIds: ['fan/each'],
    forkStrategy: 'parallel',
    childNodeIds: ['work'],
    forEach: '{{input.docs}}',
    itemVariable: 'doc',
  },
  authorForkPathIds: ['each'],
};

const work: TaskNode = {
  id: 'work',
  type: 'VARIABLE',
  config: {
    variableName: 'seen',
    variableType: 'string',
    expression: "'#' + docIndex",
  },
};

async function forked(executionId: string): Promise<Envelope> {
  const started = (await dispatch(startEvent(executionId, { docs: DOCS }), h.deps())) as Envelope;
  return run(h.deps(), forkNode, started);
}

/** Item i's first envelope, as the Map's ItemSelector builds it. */
function itemEnvelope(forkEnv: Envelope, index: number): Envelope {
  const { executionId, workflowId, workflowVersion, rootThreadId, maxSteps, fork } = forkEnv;
  return {
    executionId,
    workflowId,
    workflowVersion,
    rootThreadId,
    threadId: `${fork!.base}-${index}`,
    step: 0,
    maxSteps,
    item: { at: fork!.items![index]!, source: fork!.source! },
  };
}

const threadsOf = async (executionId: string) =>
  (await h.stores.threads.listThreadsOfExecution(executionId)).map((entry) => entry.thread);

describe('item threads created by the items themselves', () => {
  it('the FORK writes the item source and no item thread; an item’s first step creates its thread with its item', async () => {
    const forkEnv = await forked('items-lazy');
    expect(forkEnv.fork).toMatchObject({
      children: [],
      items: [expect.any(Array), expect.any(Array), expect.any(Array)],
    });
    expect(forkEnv.fork?.source?.key).toBe(`map/sources/${forkEnv.fork!.base}.json`);
    expect((await threadsOf('items-lazy')).map((t) => t.id)).toEqual([forkEnv.threadId]);

    const first = itemEnvelope(forkEnv, 1);
    const next = await run(h.deps(), work, first);
    // The next envelope carries no item: the thread exists from now on.
    expect(next).not.toHaveProperty('item');
    expect(next).toMatchObject({ threadId: first.threadId, step: 1 });
    const { thread } = await fullThread(h.stores.threads, first.threadId);
    expect(thread).toMatchObject({
      status: 'RUNNING',
      step: 1,
      currentNodeId: 'work',
      metadata: {
        parentThreadId: forkEnv.threadId,
        forkPathId: 'fan/each[1]',
        joinKey: joinKeyFor(forkEnv.threadId, 'fan', forkEnv.step),
      },
      contextData: {
        forkPathId: 'fan/each[1]',
        authorForkPathId: 'each[1]',
        listItem: { index: 1, total: 3 },
      },
      variables: {
        thread: { doc: { nested: 'béta' }, docIndex: 1, seen: '#1' },
        global: {},
      },
    });
    expect(thread.conversation.threadId).toBe(first.threadId);
    // Listed under the run, as the console and inspect find it; the items that did not start are not.
    expect((await threadsOf('items-lazy')).map((t) => t.id).sort()).toEqual(
      [forkEnv.threadId, first.threadId].sort(),
    );

    // A retry of the first step replays it: the same envelope, still one thread.
    expect(await run(h.deps(), work, first)).toEqual(next);
    expect(await threadsOf('items-lazy')).toHaveLength(2);
  });

  it('an item’s first step crashing after any of its writes, retried, leaves what a clean step leaves', async () => {
    const cleanFork = await forked('items-clean');
    const cleanItem = itemEnvelope(cleanFork, 2);
    await run(h.deps(), work, cleanItem);
    const clean = (await fullThread(h.stores.threads, cleanItem.threadId)).thread;

    const sweep = crashingStores(h.stores, Number.POSITIVE_INFINITY);
    await run(
      h.deps({ ...sweep, itemLists: h.stores.itemLists }),
      work,
      itemEnvelope(await forked('items-count'), 2),
    );
    const writes = sweep.writes();
    expect(writes).toBeGreaterThanOrEqual(2); // the create, then the step's commit

    for (let crashAt = 1; crashAt <= writes; crashAt += 1) {
      const executionId = `items-crash-${crashAt}`;
      const forkEnv = await forked(executionId);
      const item = itemEnvelope(forkEnv, 2);
      const crashing = { ...crashingStores(h.stores, crashAt), itemLists: h.stores.itemLists };
      expect((await failureOf(run(h.deps(crashing), work, item))).message, `crash at ${crashAt}`).toBe(
        INJECTED,
      );
      await run(h.deps(), work, item);
      const { thread } = await fullThread(h.stores.threads, item.threadId);
      const comparable = (t: typeof thread) => ({
        status: t.status,
        step: t.step,
        variables: t.variables,
        contextData: t.contextData,
        forkPathId: t.metadata.forkPathId,
      });
      expect(comparable(thread), `crash at ${crashAt}`).toEqual(comparable(clean));
      // Listed under its run whichever write the crash followed.
      expect(
        (await threadsOf(executionId)).map((t) => t.id),
        `crash at ${crashAt}`,
      ).toContain(item.threadId);
    }
  });

  it('an item that starts after its join decided is created CANCELLED and runs nothing', async () => {
    const forkEnv = await forked('items-closed');
    const joinKey = joinKeyFor(forkEnv.threadId, 'fan', forkEnv.step);
    const root = await h.stores.threads.getThread(forkEnv.threadId);
    await h.stores.threads.updateThread(forkEnv.threadId, root.version, { set: { closedJoins: [joinKey] } });
    const late = itemEnvelope(forkEnv, 0);
    const failure = await failureOf(run(h.deps(), work, late));
    expect(failure.message).toContain('INVALID_STATUS_TRANSITION');
    const { thread } = await fullThread(h.stores.threads, late.threadId);
    expect(thread.status).toBe('CANCELLED');
    expect(thread.step ?? 0).toBe(0);
    expect(thread.variables.thread.seen).toBeUndefined();
  });

  it('an item whose first step failed before its thread existed reports FAILED: its report creates the thread', async () => {
    const forkEnv = await forked('items-failed-first');
    const join: TaskNode = {
      id: 'merge',
      type: 'JOIN',
      config: { joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      paths: 1,
      overList: true,
      path: { index: 0, pathId: 'fan/each', authorPathId: 'each' },
    };
    const failed = {
      ...itemEnvelope(forkEnv, 1),
      error: { Error: 'Lambda.AccessDeniedException', Cause: 'the function could not start' },
    } as Envelope;
    // The report decides the join (ALL_COMPLETED with a failed item): a result, not an error.
    const decided = (await run(h.deps(), join, failed, 'branch-failed')) as Envelope & {
      joinDecided?: unknown;
    };
    expect(decided.joinDecided).toBeDefined();
    const { thread } = await fullThread(h.stores.threads, failed.threadId);
    expect(thread).toMatchObject({
      status: 'FAILED',
      contextData: { listItem: { index: 1, total: 3 } },
      variables: { thread: { doc: { nested: 'béta' }, docIndex: 1 } },
    });
    expect(thread.errors.at(-1)?.message).toContain('Lambda.AccessDeniedException');
  });
});
