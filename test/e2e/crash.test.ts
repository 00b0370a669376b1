/**
 * Crash injection at the runtime level: every Task's first attempt dies right after its handler
 * finished (its writes landed), as a Lambda.ServiceException; the definition's Retry runs it again,
 * and the final threads, conversations and join bookkeeping equal those of a fault-free run.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Thread } from '../../engine/thread/types.ts';
import type { RunOutcome } from '../../functions/local/runtime.ts';
import { joinKeyFor } from '../../functions/nodes/ids.ts';
import { fullThread } from '../functions/fixtures.ts';
import {
  crashAfterFirstAttempt,
  type E2e,
  idsByRole,
  PAYLOAD_LIMIT_BYTES,
  plain,
  startE2e,
  threadOutcome,
} from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('crash');
});
afterAll(() => e2e.close());

/** What must not depend on faults: ids and timestamps differ between executions, the rest may not. */
async function finalState(outcome: RunOutcome) {
  const listed = await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId);
  const threads = await Promise.all(
    listed.map(async (entry) => (await fullThread(e2e.runtime.stores.threads, entry.thread.id)).thread),
  );
  const describe = async (thread: Thread) => ({
    ...threadOutcome(thread),
    errors: thread.errors,
    events: (thread.events ?? []).map((event) => event.type),
    conversation: plain(await e2e.runtime.conversationOf(thread)),
    tokenUsage: thread.conversation.tokenUsage,
  });
  const described = await Promise.all(threads.map(describe));
  described.sort((a, b) => a.path.localeCompare(b.path));
  const root = threads.find((thread) => thread.id === outcome.threadId)!;
  const forkStep = root.executionHistory.find((entry) => entry.nodeId === 'split')!.step;
  const joins = await e2e.runtime.stores.joins.getBranchOutcomes(joinKeyFor(root.id, 'split', forkStep));
  const outcomes = Object.fromEntries(
    Object.entries(joins?.outcomes ?? {}).map(([path, value]) => [
      path,
      (value as { status: string }).status,
    ]),
  );
  const execution = await e2e.runtime.stores.executions.getExecution(outcome.executionId);
  const state = {
    threads: described,
    joinOutcomes: outcomes,
    execution: execution.status,
    output: outcome.output,
  };
  // Thread ids derive from the execution id: name them by role so two executions compare.
  return idsByRole(state, threads);
}

describe("a crash after every handler's writes, retried by Step Functions", () => {
  for (const strategy of ['parallel', 'serial'] as const) {
    it(`leaves the same final state as a fault-free run (${strategy} fork/join)`, async () => {
      const workflow = forkWorkflow(`crash-${strategy}`, {
        paths: ['a', 'b', 'c'],
        strategy,
        join: { mainPathId: 'b' },
      });
      const prepared = e2e.runtime.prepare(workflow);
      const clean = await prepared.run({ topic: 'x' }, { noRetryWaits: true });
      const crashed: string[] = [];
      const faulty = await prepared.run(
        { topic: 'x' },
        { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) },
      );
      expect(clean.status).toBe('COMPLETED');
      expect(faulty.status).toBe('COMPLETED');
      // Every node task crashed once.
      for (const state of [
        'start',
        'intro',
        'split',
        'a-work',
        'b-work',
        'c-work',
        'merge',
        'after',
        'end',
      ]) {
        expect(crashed).toContain(state);
      }
      expect(faulty.events.filter((event) => event.type === 'StateRetried').length).toBeGreaterThanOrEqual(9);
      expect(faulty.taskInvocations).toBeGreaterThan(clean.taskInvocations);
      expect(await finalState(faulty)).toEqual(await finalState(clean));
      expect(faulty.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
    });
  }
});
