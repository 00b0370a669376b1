import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Envelope } from '../../../engine/thread/types.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { joinKeyFor } from '../../../functions/nodes/ids.ts';
import { fullThread } from '../fixtures.ts';
import { branchEnvelope, forkNode, joinNode } from './fork-fixtures.ts';
import { failureOf, type Harness, run, startEvent, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('forkjoin');
});
afterAll(() => h.close());
beforeEach(() => {
  h.dynamoMeter.reset();
  h.s3Meter.reset();
});

const profile = { provider: 'scripted' as const, byNode: { a1: ['from a'], b1: ['from b'] } };
const branchLlm = (id: string): TaskNode => ({
  id,
  type: 'LLM',
  config: { prompt: `work on ${id}` },
  profile,
});

async function forked(executionId: string) {
  let env = (await dispatch(
    startEvent(executionId, { topic: 'x' }, [
      { name: 'shared', type: 'number', scope: 'global', initial: 0 },
    ]),
    h.deps(),
  )) as Envelope;
  env = await run(
    h.deps(),
    {
      id: 'hello',
      type: 'LLM',
      config: { prompt: 'shared history' },
      profile: { provider: 'scripted', responses: ['ok'] },
    },
    env,
  );
  const forkEnv = await run(h.deps(), forkNode(), env);
  return forkEnv;
}

/** Why a path's report decided its join (its result's `joinDecided`); the report succeeds either way. */
async function decisionOf(report: Promise<Envelope>): Promise<unknown> {
  return ((await report) as Envelope & { joinDecided?: unknown }).joinDecided;
}

describe('FORK / JOIN (parallel)', () => {
  it("a path's last node reports the path in its own step: one commit completes the child, a retry reports again", async () => {
    const forkEnv = await forked('fj-self-report');
    const [a, b] = [branchEnvelope(forkEnv, 0), branchEnvelope(forkEnv, 1)];
    const done = joinNode('ALL_COMPLETED');
    // What the compiler puts in a path's last node's Task (engine/asl/compile.ts): the path's report.
    const reported = (node: TaskNode, envelope: Envelope, i: number) =>
      dispatch(
        {
          node,
          envelope,
          report: { ...done, path: { index: i, pathId: `split/${'ab'[i]}`, authorPathId: 'ab'[i] } },
        },
        h.deps(),
      ) as Promise<Envelope & { joinDecided?: string }>;
    h.dynamoMeter.reset();
    const a1 = await reported(branchLlm('a1'), a, 0);
    expect(a1.joinDecided).toBeUndefined();
    expect(a1).toMatchObject({ threadId: a.threadId, step: 1, last: { nodeId: 'a1', status: 'COMPLETED' } });
    // The node's step: child and root read together, the spend's ADD, its record, the commit that
    // also completes the child and its latest result (the JOIN merges it); then the outcome in the
    // join item. No events batch, no second head write.
    expect(h.dynamoMeter.snapshot()).toMatchObject({
      BatchGetItemCommand: { requests: 1 },
      PutItemCommand: { requests: 2 },
      UpdateItemCommand: { requests: 3 },
    });
    const { thread: childA } = await h.stores.threads.getThread(a.threadId);
    expect(childA).toMatchObject({ status: 'COMPLETED', output: 'from a', step: 1 });
    expect((await h.stores.threads.readJournal(a.threadId)).events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['THREAD_STARTED', 'NODE_COMPLETED', 'THREAD_COMPLETED']),
    );
    // b's step decides; a retry of it (its result lost) replays the step and reports again, deciding alike.
    const b1 = await reported(branchLlm('b1'), b, 1);
    expect(b1.joinDecided).toBe('all 2 branches completed');
    const again = await reported(branchLlm('b1'), b, 1);
    expect(again).toEqual(b1);
    const outcomes = await h.stores.joins.getBranchOutcomes(
      joinKeyFor(forkEnv.threadId, 'split', forkEnv.step),
    );
    expect(Object.keys(outcomes).sort()).toEqual(['split/a', 'split/b']);
    const merged = await run(h.deps(), done, {
      ...forkEnv,
      joinEnd: { Error: 'stepthread.JoinDecided' },
    } as Envelope);
    expect(merged.last).toEqual({ nodeId: 'merge', status: 'COMPLETED' });
    const { thread: root } = await fullThread(h.stores.threads, forkEnv.threadId);
    expect(root.nodeResults.merge?.output).toEqual({ a: 'from a', b: 'from b' });
  });

  it('merges exactly the branches its decision counted: a straggler finishing later changes nothing', async () => {
    const forkEnv = await forked('fj-straggler');
    const [a, b] = [branchEnvelope(forkEnv, 0), branchEnvelope(forkEnv, 1)];
    const done = joinNode('ANY_COMPLETED', { mainPathId: 'split/a' });
    // a completes and decides the join (its main path finished): the Parallel stops.
    const a1 = await run(h.deps(), branchLlm('a1'), a);
    expect(await decisionOf(run(h.deps(), done, a1, 'branch-done'))).toBe('1 of 2 branches completed');
    // b was already running (Step Functions does not stop a Lambda in flight) and reports afterwards;
    // a global write it attempts after the decision is dropped.
    const late = await failureOf(
      run(
        h.deps(),
        {
          id: 'b0',
          type: 'VARIABLE',
          config: { variableName: 'shared', variableType: 'number', expression: 'shared + 100' },
        },
        b,
      ),
    );
    expect(late.message).toContain('JOIN_ALREADY_DECIDED');
    const b1 = await run(h.deps(), branchLlm('b1'), b);
    await run(h.deps(), done, b1, 'branch-done');

    await run(h.deps(), done, { ...forkEnv, joinEnd: { Error: 'stepthread.JoinDecided' } } as Envelope);
    const { thread: root } = await fullThread(h.stores.threads, forkEnv.threadId);
    expect(root.nodeResults.merge?.output).toBe('from a');
    expect(root.nodeResults.b1).toBeUndefined();
    expect(root.variables.global).toEqual({ shared: 0 });
  });

  it('runs branches on child threads and joins: outputs merged, main path conversation restored', async () => {
    const forkEnv = await forked('fj-all');
    expect(forkEnv.fork?.children).toHaveLength(2);
    const [a, b] = [branchEnvelope(forkEnv, 0), branchEnvelope(forkEnv, 1)];
    const a1 = await run(h.deps(), branchLlm('a1'), a);
    // A global write in a branch reaches the root, which owns the global scope.
    h.dynamoMeter.reset();
    const a2 = await run(
      h.deps(),
      {
        id: 'a2',
        type: 'VARIABLE',
        config: { variableName: 'shared', variableType: 'number', expression: 'shared + 5' },
      },
      a1,
    );
    const b1 = await run(h.deps(), branchLlm('b1'), b);

    const done = joinNode('ALL_COMPLETED');
    const first = await run(h.deps(), done, a2, 'branch-done');
    expect(first.threadId).toBe(a.threadId);
    // The report that decides says so in its result: the path's Fail state raises JoinDecided.
    expect(await decisionOf(run(h.deps(), done, b1, 'branch-done'))).toBeTypeOf('string');

    const joined = await run(h.deps(), done, {
      ...forkEnv,
      joinEnd: { Error: 'stepthread.JoinDecided' },
    } as Envelope);
    expect(joined.fork).toBeUndefined();
    expect(joined.step).toBe(forkEnv.step + 1);
    const { thread: root } = await fullThread(h.stores.threads, forkEnv.threadId);
    expect(root.variables.global).toEqual({ shared: 5 });
    // A branch's output is its last node's: a2 set the number.
    expect(root.nodeResults.merge?.output).toEqual({ a: 5, b: 'from b' });
    expect(root.nodeResults.a1?.output).toBe('from a');
    expect((await h.readMessages(root)).map((m) => m.content)).toEqual([
      'shared history',
      'ok',
      'work on b1',
      'from b',
    ]);
    const children = await h.stores.threads.getThreads(forkEnv.fork!.children);
    expect(children.map((c) => c.thread.status)).toEqual(['COMPLETED', 'COMPLETED']);
    expect(children[0]!.thread.variables.global).toEqual({});
  });

  it('lets the first completed branch decide ANY_COMPLETED and cancels the rest at the JOIN', async () => {
    const forkEnv = await forked('fj-any');
    const a1 = await run(h.deps(), branchLlm('a1'), branchEnvelope(forkEnv, 0));
    const join = joinNode('ANY_COMPLETED', { mainPathId: undefined });
    expect(await decisionOf(run(h.deps(), join, a1, 'branch-done'))).toBeTypeOf('string');
    await run(h.deps(), join, { ...forkEnv, joinEnd: { Error: 'stepthread.JoinDecided' } } as Envelope);
    const children = await h.stores.threads.getThreads(forkEnv.fork!.children);
    expect(children.map((c) => c.thread.status)).toEqual(['COMPLETED', 'CANCELLED']);
    const { thread: root } = await fullThread(h.stores.threads, forkEnv.threadId);
    expect(root.nodeResults.merge?.output).toBe('from a');
  });

  it('fails the JOIN when a failed branch decides ALL_COMPLETED', async () => {
    const forkEnv = await forked('fj-fail');
    const error = {
      Error: 'stepthread.NodeFailed',
      Cause: JSON.stringify({ code: 'NOT_IMPLEMENTED', message: 'x', nodeId: 'a1' }),
    };
    const decided = await decisionOf(
      run(
        h.deps(),
        joinNode('ALL_COMPLETED'),
        { ...branchEnvelope(forkEnv, 0), error } as Envelope,
        'branch-failed',
      ),
    );
    expect(decided).toBeTypeOf('string');
    const failed = await failureOf(run(h.deps(), joinNode('ALL_COMPLETED'), forkEnv));
    expect(failed.name).toBe('stepthread.NodeFailed');
    expect(JSON.parse(failed.message)).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'merge' });
    const children = await h.stores.threads.getThreads(forkEnv.fork!.children);
    expect(children.map((c) => c.thread.status)).toEqual(['FAILED', 'CANCELLED']);
  });

  it('times out: the timer records the timeout, the JOIN fails with JOIN_TIMEOUT', async () => {
    const forkEnv = await forked('fj-timeout');
    const join = joinNode('ALL_COMPLETED', { timeout: 5 });
    const a1 = await run(h.deps(), branchLlm('a1'), branchEnvelope(forkEnv, 0));
    await run(h.deps(), join, a1, 'branch-done');
    // The timer's record returns; its Fail state raises JoinTimeout (not the function).
    const timer = (await dispatch(
      { action: 'timeout', node: join, envelope: forkEnv },
      h.deps(),
    )) as Envelope;
    expect(timer.threadId).toBe(forkEnv.threadId);
    const failed = await failureOf(
      run(h.deps(), join, { ...forkEnv, joinEnd: { Error: 'stepthread.JoinTimeout' } } as Envelope),
    );
    expect(JSON.parse(failed.message)).toMatchObject({ code: 'JOIN_TIMEOUT' });
  });

  it('with a timer branch, the last branch to report ends the Parallel even when the join succeeds', async () => {
    const forkEnv = await forked('fj-timer-last');
    const join = joinNode('ALL_COMPLETED', { timeout: 60 });
    await run(
      h.deps(),
      join,
      await run(h.deps(), branchLlm('a1'), branchEnvelope(forkEnv, 0)),
      'branch-done',
    );
    const last = await decisionOf(
      run(h.deps(), join, await run(h.deps(), branchLlm('b1'), branchEnvelope(forkEnv, 1)), 'branch-done'),
    );
    expect(last).toBe('all 2 branches completed');
  });

  it('a branch node on a child thread costs one BatchGetItem, its step record and one UpdateItem', async () => {
    const forkEnv = await forked('fj-meter');
    h.dynamoMeter.reset();
    await run(
      h.deps(),
      {
        id: 'v',
        type: 'VARIABLE',
        config: { variableName: 't', variableType: 'number', expression: '1' },
        resultUnread: true,
      },
      branchEnvelope(forkEnv, 0),
    );
    expect(h.dynamoMeter.snapshot()).toEqual({
      BatchGetItemCommand: expect.objectContaining({ requests: 1 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 1 }),
    });
  });
});

describe('FORK / JOIN bookkeeping: requests', () => {
  /** A fork of two branches, each one LLM step, both reported: the envelope the JOIN runs on. */
  async function reported(executionId: string, reads: { a1?: boolean } = {}) {
    const forkEnv = await forked(executionId);
    const done = joinNode('ALL_COMPLETED');
    const a1 = await run(
      h.deps(),
      { ...branchLlm('a1'), ...(reads.a1 ? {} : { resultUnread: true }) },
      branchEnvelope(forkEnv, 0),
    );
    const b1 = await run(h.deps(), { ...branchLlm('b1'), resultUnread: true }, branchEnvelope(forkEnv, 1));
    h.dynamoMeter.reset();
    await run(h.deps(), done, a1, 'branch-done');
    const first = h.dynamoMeter.snapshot();
    h.dynamoMeter.reset();
    await run(h.deps(), done, b1, 'branch-done');
    const deciding = h.dynamoMeter.snapshot();
    return {
      forkEnv,
      first,
      deciding,
      joinEnv: { ...forkEnv, joinEnd: { Error: 'stepthread.JoinDecided' } } as Envelope,
    };
  }

  it('a FORK creates its children with their listings in one request', async () => {
    let env = (await dispatch(startEvent('fj-fork-meter'), h.deps())) as Envelope;
    env = await run(
      h.deps(),
      {
        id: 'v',
        type: 'VARIABLE',
        config: { variableName: 'x', variableType: 'number', expression: '1' },
        resultUnread: true,
      },
      env,
    );
    h.dynamoMeter.reset();
    h.s3Meter.reset();
    const forkEnv = await run(h.deps(), { ...forkNode(), resultUnread: true }, env);
    // The head read, the two children's heads and listings (one BatchWriteItem), the record, the commit.
    expect(h.dynamoMeter.snapshot()).toEqual({
      GetItemCommand: expect.objectContaining({ requests: 1 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      BatchWriteItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 1 }),
    });
    expect(h.s3Meter.requests()).toBe(0);
    const listed = await h.stores.threads.listThreadsOfExecution('fj-fork-meter');
    expect(listed.map(({ thread }) => thread.id).sort()).toEqual(
      [forkEnv.threadId, ...forkEnv.fork!.children].sort(),
    );
  });

  it('a branch report reads the child, the root and its last step record in one request, and no head again', async () => {
    const { first, deciding } = await reported('fj-report-meter');
    // The child, the root and the branch's last record (its output) in one BatchGetItem; then the
    // completion's events in their own item, the child's head, and the path's outcome (with its place
    // in the report order) in the join item.
    const report = {
      BatchGetItemCommand: expect.objectContaining({ requests: 1 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 2 }),
    };
    expect(first).toEqual(report);
    // The last path to report decides with every path reported: the decision is the report order's,
    // recorded by nothing more, and with no branch left running the join needs no closing on the root.
    expect(deciding).toEqual(report);
  });

  it('a report that decides while a branch still runs closes the join on the root as it read it, and no more', async () => {
    const forkEnv = await forked('fj-report-early');
    const a1 = await run(h.deps(), { ...branchLlm('a1'), resultUnread: true }, branchEnvelope(forkEnv, 0));
    h.dynamoMeter.reset();
    const decided = run(h.deps(), joinNode('ANY_COMPLETED', { mainPathId: 'split/a' }), a1, 'branch-done');
    expect(await decisionOf(decided)).toBe('1 of 2 branches completed');
    expect(h.dynamoMeter.snapshot()).toEqual({
      BatchGetItemCommand: expect.objectContaining({ requests: 1 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 3 }),
    });
    const { thread: root } = await h.stores.threads.getThread(forkEnv.threadId);
    expect(root.closedJoins).toEqual([joinKeyFor(forkEnv.threadId, 'split', forkEnv.step)]);
  });

  it('a JOIN loads only the branch results an expression reads: none, no Query, when none is read', async () => {
    const { forkEnv, joinEnv } = await reported('fj-join-unread');
    h.dynamoMeter.reset();
    h.s3Meter.reset();
    await run(h.deps(), { ...joinNode('ALL_COMPLETED'), branchResults: [], resultUnread: true }, joinEnv);
    // Its threads and the join item (what decided it) in one BatchGetItem, its record and the commit; no S3.
    expect(h.dynamoMeter.snapshot()).toEqual({
      BatchGetItemCommand: expect.objectContaining({ requests: 1 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 1 }),
    });
    expect(h.s3Meter.requests()).toBe(0);
    // Its record holds the merged outputs, each branch's last node's.
    const record = await h.stores.threads.getStep(forkEnv.threadId, forkEnv.step + 1);
    expect(record?.result).toMatchObject({ nodeId: 'merge', output: { a: 'from a', b: 'from b' } });
  });

  it('a JOIN merges the branch results an expression reads, fetched by key', async () => {
    const { forkEnv, joinEnv } = await reported('fj-join-read', { a1: true });
    h.dynamoMeter.reset();
    await run(h.deps(), { ...joinNode('ALL_COMPLETED'), branchResults: ['a1'], resultUnread: true }, joinEnv);
    expect(h.dynamoMeter.requests('QueryCommand')).toBe(0);
    // The threads, then the named result of each branch.
    expect(h.dynamoMeter.requests('BatchGetItemCommand')).toBe(3);
    const { thread: root } = await fullThread(h.stores.threads, forkEnv.threadId);
    expect(root.nodeResults.a1?.output).toBe('from a');
  });
});

describe('FORK / JOIN (serial)', () => {
  it('says the join decided like a parallel fork once decided, and returns the plain envelope before that', async () => {
    let env = (await dispatch(startEvent('fj-serial'), h.deps())) as Envelope;
    env = await run(h.deps(), forkNode('serial'), env);
    const join = joinNode('ALL_COMPLETED', {}, true);
    const a1 = await run(h.deps(), branchLlm('a1'), branchEnvelope(env, 0));
    const first = await run(h.deps(), join, a1, 'branch-done');
    expect(first).not.toHaveProperty('joinDecided');
    expect(first.threadId).toBe(a1.threadId);
    const b1 = await run(h.deps(), branchLlm('b1'), branchEnvelope(env, 1));
    expect(await decisionOf(run(h.deps(), join, b1, 'branch-done'))).toBeTypeOf('string');
  });
});
