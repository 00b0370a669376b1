/**
 * When an interrupted local run last did anything. Its process is gone, so nothing records its end:
 * `runs` shows its duration up to here instead of up to now, which would grow with the clock while
 * nothing runs.
 */
import type { TableRef } from '../stores/dynamo-items.ts';
import type { ExecutionRecord } from '../stores/execution-index.ts';
import type { Interaction } from '../stores/interaction-store.ts';
import { createThreadStore } from '../stores/thread-store.ts';

/**
 * The latest of: the execution's start, when a process last took the run (`claimedAt`, a resume
 * included), the end of the last step each of its threads committed (one GetItem per thread), a
 * thread's end, and when it asked the questions it stopped at. ISO.
 */
export async function lastActivityOf(
  table: TableRef,
  execution: ExecutionRecord,
  facts: { claimedAt?: string; waiting: readonly Pick<Interaction, 'requestedAt'>[] },
): Promise<string> {
  const threads = createThreadStore(table);
  const times = [execution.startTime, ...facts.waiting.map((interaction) => interaction.requestedAt)];
  if (facts.claimedAt !== undefined) times.push(facts.claimedAt);
  const listed = await threads.listThreadsOfExecution(execution.executionId);
  // The record of the head's step is the last committed one; a later one never committed.
  const lastSteps = await Promise.all(
    listed.map(({ thread }) => (thread.step ? threads.getStep(thread.id, thread.step) : undefined)),
  );
  for (const [i, { thread }] of listed.entries()) {
    if (thread.endTime !== undefined) times.push(thread.endTime);
    const last = lastSteps[i];
    if (last !== undefined) times.push(last.result.endedAt ?? last.result.startedAt);
  }
  return times.reduce((latest, at) => (Date.parse(at) > Date.parse(latest) ? at : latest));
}
