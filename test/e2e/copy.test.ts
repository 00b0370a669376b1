/** Copy (seed 002): a copied thread runs to completion on its own; its source does not change. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistant, type E2e, plain, startE2e, user, valid } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('copy');
});
afterAll(() => e2e.close());

describe('copy, then run the copy', () => {
  it('time travel: replays from before a chosen node to the same result and leaves the source as it was', async () => {
    const workflow = forkWorkflow('copyable', {
      paths: ['a', 'b'],
      join: { mainPathId: 'a' },
      fallback: ['again'],
    });
    const source = await e2e.runtime.prepare(workflow).run();
    expect(source.status).toBe('COMPLETED');
    const before = await e2e.runtime.stores.threads.getThread(source.threadId);
    const sourceConversation = plain(await e2e.conversation(source.threadId));

    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'after' });
    expect(copy.id).not.toBe(source.threadId);
    expect(copy.status).toBe('CREATED');
    expect(copy.step).toBe(0);
    expect(copy.lastEnvelope).toBeUndefined();
    expect(copy.metadata).toMatchObject({ parentThreadId: source.threadId, copiedFrom: source.threadId });
    expect(copy.events?.at(-1)?.type).toBe('THREAD_COPIED');

    const rerun = await e2e.runtime.prepare(workflow, { startNodeId: 'after' }).runThread(copy.id);
    expect(rerun.status).toBe('COMPLETED');
    expect(rerun.threadId).toBe(copy.id);
    // The copy is the thread as it was before `after` ran (its conversation, its scripted-call
    // counts), so running it again gives what the original run gave.
    expect(rerun.output).toEqual(source.output);
    expect(rerun.output).toEqual({ merged: { a: 'a reply', b: 'b reply' }, after: 'after reply' });
    expect(plain(await e2e.conversation(copy.id))).toEqual(sourceConversation);
    expect(sourceConversation.slice(-2)).toEqual([user('after prompt'), assistant('after reply')]);
    // The START task is not part of a copy's run: it begins at the chosen node.
    expect(rerun.events.find((event) => event.type === 'StateEntered')?.stateName).toBe('after');
    // The copy's journal: the source's events up to the copy, THREAD_COPIED, then the copy's own run.
    const { events } = await e2e.runtime.stores.threads.readJournal(copy.id);
    const copied = events.findIndex((event) => event.type === 'THREAD_COPIED');
    expect(copied).toBeGreaterThan(0);
    expect(events.slice(copied + 1, copied + 3).map((event) => event.type)).toEqual([
      'THREAD_STARTED',
      'NODE_STARTED',
    ]);
    expect(events.slice(copied).map((event) => event.at)).toEqual(
      events
        .slice(copied)
        .map((event) => event.at)
        .sort(),
    );
    expect(await e2e.runtime.stores.executions.getExecution(rerun.executionId)).toMatchObject({
      rootThreadId: copy.id,
      status: 'COMPLETED',
    });

    // Time travel on the copy itself: its step 1 is its first node (not a START), and the state
    // before it is the one it was copied with (the scripted model's call counts included), so a
    // copy of the copy from there replays to the same result.
    const copyOfCopy = await e2e.runtime.copyThread(copy.id, { fromStep: 1 });
    expect(copyOfCopy.currentNodeId).toBe('after');
    expect(copyOfCopy.contextData).toEqual(copy.contextData);
    const replayed = await e2e.runtime.prepare(workflow, { startNodeId: 'after' }).runThread(copyOfCopy.id);
    expect(replayed.error).toBeUndefined();
    expect(replayed.output).toEqual(source.output);
    expect(plain(await e2e.conversation(copyOfCopy.id))).toEqual(sourceConversation);

    const after = await e2e.runtime.stores.threads.getThread(source.threadId);
    expect(after).toEqual(before);
    expect(plain(await e2e.conversation(source.threadId))).toEqual(sourceConversation);
  });

  it('runs a copy once: a second start, at once or later, is refused and leaves the first run alone', async () => {
    const workflow = forkWorkflow('copy-twice', { paths: ['a'] });
    const source = await e2e.runtime.prepare(workflow).run();
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'after' });
    const prepared = e2e.runtime.prepare(workflow, { startNodeId: 'after' });
    const [first, second] = await Promise.allSettled([
      prepared.runThread(copy.id),
      prepared.runThread(copy.id),
    ]);
    const outcomes = [first, second].filter((settled) => settled.status === 'fulfilled');
    const refusals = [first, second].filter((settled) => settled.status === 'rejected');
    expect(outcomes.map((settled) => settled.value.status)).toEqual(['COMPLETED']);
    expect(refusals.map((settled) => (settled.reason as { code: string }).code)).toEqual([
      expect.stringMatching(/^(INVALID_STATUS_TRANSITION|VERSION_CONFLICT)$/),
    ]);
    // A copy of the copy starts afresh (it does not inherit the copy's run).
    const again = await e2e.runtime.copyThread(copy.id);
    expect(again.metadata).not.toHaveProperty('runFrom');
  });

  it('refuses to run a finished thread in place', async () => {
    const workflow = forkWorkflow('finished', { paths: ['a'] });
    const done = await e2e.runtime.prepare(workflow).run();
    await expect(
      e2e.runtime.prepare(workflow, { startNodeId: 'end' }).runThread(done.threadId),
    ).rejects.toMatchObject({
      code: 'INVALID_STATUS_TRANSITION',
    });
  });

  it('runs only from top-level nodes', () => {
    const workflow = forkWorkflow('nested', { paths: ['a', 'b'] });
    expect(() => e2e.runtime.prepare(workflow, { startNodeId: 'a-work' })).toThrow(
      expect.objectContaining({ code: 'NODE_NOT_FOUND' }),
    );
  });
});

describe('time travel (copy --from a step)', () => {
  const loopWorkflow = valid({
    id: 'travel-loop',
    version: 1,
    variables: [
      { name: 'count', type: 'number', scope: 'thread', initial: 0 },
      { name: 'seen', type: 'array', scope: 'thread', initial: [] },
    ],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'ls',
        type: 'LOOP_START',
        config: { loopId: 'L', dataSource: '{{input.items}}', maxIterations: 10 },
      },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'count', variableType: 'number', expression: 'count + item' },
      },
      {
        id: 'note',
        type: 'VARIABLE',
        config: { variableName: 'seen', variableType: 'array', expression: 'concat(seen, [index])' },
      },
      { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
      { id: 'end', type: 'END', config: { output: { count: '{{count}}', seen: '{{seen}}' } } },
    ],
    edges: [
      { from: 'start', to: 'ls' },
      { from: 'ls', to: 'inc' },
      { from: 'inc', to: 'note' },
      { from: 'note', to: 'le' },
      { from: 'le', to: 'end' },
    ],
  });

  async function stepsOf(threadId: string, nodeId: string): Promise<number[]> {
    const { executionHistory } = await e2e.runtime.stores.threads.readJournal(threadId);
    return executionHistory.filter((entry) => entry.nodeId === nodeId).map((entry) => entry.step);
  }

  it('a node that never ran is refused with the one that ran it likely meant, or the nodes that ran', async () => {
    const source = await e2e.runtime.prepare(loopWorkflow).run({ items: [1] });
    const refused = (fromNodeId: string) => e2e.runtime.copyThread(source.threadId, { fromNodeId });
    const never = `never ran on thread ${source.threadId}, so there is no state before it to copy`;
    await expect(refused('Note')).rejects.toMatchObject({
      code: 'COPY_POINT_NOT_FOUND',
      message: `node Note ${never}; did you mean "note"?`,
    });
    await expect(refused('incc')).rejects.toMatchObject({
      message: `node incc ${never}; did you mean "inc"?`,
    });
    // Nothing close: the nodes a copy could start from (START is none of them), each once.
    await expect(refused('summarize')).rejects.toMatchObject({
      code: 'COPY_POINT_NOT_FOUND',
      message: `node summarize ${never} (the nodes that ran: ls, inc, note, le, end)`,
    });
  });

  it('from before a VARIABLE increment: the increment applies once, as in the original run', async () => {
    const source = await e2e.runtime.prepare(loopWorkflow).run({ items: [1, 10, 100] });
    expect(source.output).toEqual({ count: 111, seen: [0, 1, 2] });
    const lastInc = (await stepsOf(source.threadId, 'inc')).at(-1)!;
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'inc' });
    expect(copy.currentNodeId).toBe('inc');
    expect(copy.variables.thread.count).toBe(11);
    expect(copy.metadata.copiedAtStep).toBe(lastInc - 1);
    const rerun = await e2e.runtime.prepare(loopWorkflow, { startNodeId: 'inc' }).runThread(copy.id);
    expect(rerun.output).toEqual(source.output);
  });

  it('from a step inside a loop: the iterator state comes back, the loop finishes the same', async () => {
    const source = await e2e.runtime.prepare(loopWorkflow).run({ items: [1, 10, 100] });
    const secondNote = (await stepsOf(source.threadId, 'note'))[1]!;
    const copy = await e2e.runtime.copyThread(source.threadId, { fromStep: secondNote });
    expect(copy.currentNodeId).toBe('note');
    expect(copy.variables.loop.at(-1)).toMatchObject({ item: 10, index: 1 });
    expect(copy.variables.thread).toEqual({ count: 11, seen: [0] });
    const rerun = await e2e.runtime.prepare(loopWorkflow, { startNodeId: 'note' }).runThread(copy.id);
    expect(rerun.status).toBe('COMPLETED');
    expect(rerun.output).toEqual(source.output);
    // Its history is the source's up to the copy point, then its own steps.
    const journal = await e2e.runtime.stores.threads.readJournal(copy.id);
    const sourceJournal = await e2e.runtime.stores.threads.readJournal(source.threadId);
    expect(journal.executionHistory.slice(0, secondNote - 1)).toEqual(
      sourceJournal.executionHistory.slice(0, secondNote - 1),
    );
    expect(journal.executionHistory.map((entry) => entry.nodeId)).toEqual(
      sourceJournal.executionHistory.map((entry) => entry.nodeId),
    );
  });

  it('from before a FORK: the branches run again and join to the same result', async () => {
    const workflow = forkWorkflow('travel-fork', { paths: ['a', 'b'], join: { mainPathId: 'a' } });
    const source = await e2e.runtime.prepare(workflow).run();
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'split' });
    const rerun = await e2e.runtime.prepare(workflow, { startNodeId: 'split' }).runThread(copy.id);
    expect(rerun.status).toBe('COMPLETED');
    expect(rerun.output).toEqual(source.output);
    expect(plain(await e2e.conversation(copy.id))).toEqual(plain(await e2e.conversation(source.threadId)));
  });

  it('refuses, at copy time, a node that never ran, an empty id, a fork-branch node, a JOIN and a bad step', async () => {
    const workflow = forkWorkflow('travel-refused', { paths: ['a', 'b'] });
    const source = await e2e.runtime.prepare(workflow).run();
    const refused = (options: Parameters<typeof e2e.runtime.copyThread>[1]) =>
      e2e.runtime.copyThread(source.threadId, options);
    await expect(refused({ fromNodeId: 'nowhere' })).rejects.toMatchObject({ code: 'COPY_POINT_NOT_FOUND' });
    await expect(refused({ fromNodeId: '' })).rejects.toMatchObject({ code: 'COPY_POINT_NOT_FOUND' });
    await expect(refused({ fromNodeId: 'a-work' })).rejects.toMatchObject({
      code: 'COPY_POINT_IN_FORK_BRANCH',
    });
    await expect(refused({ fromStep: 999 })).rejects.toMatchObject({ code: 'COPY_POINT_NOT_FOUND' });
    await expect(refused({ fromStep: 1 })).rejects.toMatchObject({ code: 'COPY_POINT_NOT_FOUND' });
    // A JOIN merges branches its FORK started in that run; a copy from it would have none.
    await expect(refused({ fromNodeId: 'merge' })).rejects.toMatchObject({
      code: 'COPY_POINT_IN_FORK_BRANCH',
      message: expect.stringContaining('node merge is a JOIN'),
    });
  });
});
