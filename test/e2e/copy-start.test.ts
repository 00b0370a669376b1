/**
 * A copied thread started through the definition's entry (issue 28, as on a deployed stack:
 * engine/asl/copy-start.ts): the state machine compiled from START, started with `{ resume: { copy } }`,
 * claims the copy in `stepthread:resume` and jumps to its node's Task. Each case runs the same copy
 * point both ways — `runThread` (compiled from the node, as `run --thread` does) and `startThread`
 * (the entry) — and expects the same run: status, output, conversation, the steps it took.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingLoop } from '../../bench/head-size.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { workflowForThread } from '../../engine/thread/copy-workflow-edits.ts';
import type { CopyOptions, RunOutcome } from '../../functions/local/runtime.ts';
import { sizeCheck as sizeCheckWorkflow } from '../support/size-check.ts';
import { type E2e, plain, startE2e, valid } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('copy-start');
});
afterAll(() => e2e.close());

/** What a run did to its thread: compared between the two ways of starting a copy. */
async function runOf(outcome: RunOutcome) {
  const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
  const journal = await e2e.runtime.stores.threads.readJournal(outcome.threadId);
  return {
    status: outcome.status,
    output: outcome.output,
    error: outcome.error?.code,
    variables: thread.variables,
    conversation: plain(await e2e.runtime.conversationOf(thread)),
    steps: journal.executionHistory.map((entry) => [entry.nodeId, entry.status, entry.step]),
  };
}

/**
 * Two copies of `threadId` made alike; the first run as `run --thread` does, the second through the
 * entry of the definition compiled from START (`workflow` as deployed: without the copy's edits).
 */
async function bothWays(
  workflow: Workflow,
  threadId: string,
  copyOptions: CopyOptions,
  continueAfterEvents?: number,
) {
  const local = await e2e.runtime.copyThread(threadId, copyOptions);
  const entry = await e2e.runtime.copyThread(threadId, copyOptions);
  const options = continueAfterEvents === undefined ? {} : { continueAfterEvents };
  const compiledFromNode = await e2e.runtime
    .prepare(workflowForThread(workflow, local), { ...options, startNodeId: local.currentNodeId! })
    .runThread(local.id, { noRetryWaits: true });
  const started = await e2e.runtime.prepare(workflow, options).startThread(entry.id, { noRetryWaits: true });
  return { local: compiledFromNode, started, entry };
}

const sizeCheck = valid(sizeCheckWorkflow);

/** LOOP_START → VARIABLE count+1 → LOOP_END, `iterations` times, then END with the count. */
const counting = (iterations: number) => valid(countingLoop(iterations, `copy-count-${iterations}`));

describe('a copy started through the definition’s entry (as on a deployed stack)', () => {
  it('enters at the node through dispatch, resume and resume-at, and runs as run --thread does', async () => {
    const workflow = forkWorkflow('entry-fork', { paths: ['a', 'b'], join: { mainPathId: 'a' } });
    const source = await e2e.runtime.prepare(workflow).run();
    for (const fromNodeId of ['after', 'split']) {
      const { local, started, entry } = await bothWays(workflow, source.threadId, { fromNodeId });
      expect(started.status, fromNodeId).toBe('COMPLETED');
      expect(await runOf(started), fromNodeId).toEqual(await runOf(local));
      expect(started.output).toEqual(source.output);
      const entered = started.events.filter((event) => event.type === 'StateEntered');
      expect(entered.slice(0, 4).map((event) => event.stateName)).toEqual([
        'stepthread:dispatch',
        'stepthread:resume',
        'stepthread:resume-at',
        fromNodeId,
      ]);
      // The copy is this execution's root, started at its node, as runThread leaves it.
      const { thread } = await e2e.runtime.stores.threads.getThread(entry.id);
      expect(thread.metadata).toMatchObject({
        executionId: started.executionId,
        runFrom: { executionId: started.executionId, nodeId: fromNodeId, step: 0 },
      });
      expect(await e2e.runtime.stores.executions.getExecution(started.executionId)).toMatchObject({
        rootThreadId: entry.id,
        workflowId: workflow.id,
        status: 'COMPLETED',
      });
    }
  });

  it('a run that failed, copied from the failed node with a --set fix, completes as the local copy does', async () => {
    const failed = await e2e.runtime.prepare(sizeCheck).run({ size: 5 });
    expect(failed.error).toMatchObject({ code: 'CODE_ERROR', nodeId: 'check' });
    const { local, started } = await bothWays(sizeCheck, failed.threadId, {
      fromNodeId: 'check',
      edits: [{ kind: 'variable', name: 'limit', value: 100 }],
    });
    expect(started.status).toBe('COMPLETED');
    expect(started.output).toEqual({ accepted: 5 });
    expect(await runOf(started)).toEqual(await runOf(local));
  });

  it('from a step inside a loop: the loop state comes from the thread, the run ends the same', async () => {
    const workflow = counting(5);
    const source = await e2e.runtime.prepare(workflow).run();
    const { executionHistory } = await e2e.runtime.stores.threads.readJournal(source.threadId);
    const thirdInc = executionHistory.filter((entry) => entry.nodeId === 'inc')[2]!.step;
    const { local, started, entry } = await bothWays(workflow, source.threadId, { fromStep: thirdInc });
    expect(entry.currentNodeId).toBe('inc');
    expect(started.output).toEqual({ count: 5 });
    expect(await runOf(started)).toEqual(await runOf(local));
  });

  it('continues across executions (continue-as-new) the same way', async () => {
    const workflow = counting(30);
    const source = await e2e.runtime.prepare(workflow).run();
    const { executionHistory } = await e2e.runtime.stores.threads.readJournal(source.threadId);
    const firstInc = executionHistory.find((entry) => entry.nodeId === 'inc')!.step;
    const { local, started } = await bothWays(workflow, source.threadId, { fromStep: firstInc }, 100);
    expect(started.status).toBe('COMPLETED');
    // Each way continues (where exactly differs: the entry counts its own states into the estimate).
    expect(started.executions.length).toBeGreaterThan(1);
    expect(local.executions.length).toBeGreaterThan(1);
    expect(await runOf(started)).toEqual(await runOf(local));
  });

  it('node config and profile edits take effect in the handlers, on the definition as it was compiled', async () => {
    const workflow = forkWorkflow('entry-edits', { paths: ['a'] });
    const source = await e2e.runtime.prepare(workflow).run();
    const { local, started } = await bothWays(workflow, source.threadId, {
      fromNodeId: 'after',
      workflow,
      edits: [
        { kind: 'nodeConfig', nodeId: 'end', key: 'output', value: { edited: '{{nodes.after}}' } },
        {
          kind: 'profile',
          profileId: 'default',
          value: { provider: 'scripted', responses: ['edited reply'] },
        },
      ],
    });
    expect(started.status).toBe('COMPLETED');
    expect(started.output).toEqual({ edited: 'edited reply' });
    expect(await runOf(started)).toEqual(await runOf(local));
  });

  it('starts a copy once: a second start fails its execution (CONTINUATION_CONFLICT) and leaves the copy alone', async () => {
    const workflow = forkWorkflow('entry-twice', { paths: ['a'] });
    const source = await e2e.runtime.prepare(workflow).run();
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'after' });
    const prepared = e2e.runtime.prepare(workflow);
    const first = await prepared.startThread(copy.id);
    expect(first.status).toBe('COMPLETED');
    const before = await e2e.runtime.stores.threads.getThread(copy.id);
    const second = await prepared.startThread(copy.id);
    if (second.execution.status !== 'FAILED') throw new Error(`the second start ${second.execution.status}`);
    expect(second.execution.cause).toContain('CONTINUATION_CONFLICT');
    expect(second.execution.cause).toContain(`started already, by execution ${first.executionId}`);
    expect(await e2e.runtime.stores.threads.getThread(copy.id)).toEqual(before);
    // Nor does run --thread start it again.
    await expect(
      e2e.runtime.prepare(workflow, { startNodeId: 'end' }).runThread(copy.id),
    ).rejects.toMatchObject({ code: 'INVALID_STATUS_TRANSITION' });
  });
});
