/** Copy (seed 002): a copied thread runs to completion on its own; its source does not change. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistant, type E2e, plain, startE2e, user } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('copy');
});
afterAll(() => e2e.close());

describe('copy, then run the copy', () => {
  it('replays from a chosen node to completion and leaves the source as it was', async () => {
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
    expect(rerun.output).toEqual({ merged: { a: 'a reply', b: 'b reply' }, after: 'again' });
    expect(plain(await e2e.conversation(copy.id))).toEqual([
      ...sourceConversation,
      user('after prompt'),
      assistant('again'),
    ]);
    // The START task is not part of a copy's run: it begins at the chosen node.
    expect(rerun.events.find((event) => event.type === 'StateEntered')?.stateName).toBe('after');
    expect(await e2e.runtime.stores.executions.getExecution(rerun.executionId)).toMatchObject({
      rootThreadId: copy.id,
      status: 'COMPLETED',
    });

    const after = await e2e.runtime.stores.threads.getThread(source.threadId);
    expect(after).toEqual(before);
    expect(plain(await e2e.conversation(source.threadId))).toEqual(sourceConversation);
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
