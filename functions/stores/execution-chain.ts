/**
 * One run, several executions (continue-as-new): each execution record names the one it continues
 * (`continuedFrom`) and the one that continued it (`continuedAs`), so any execution id of a run leads
 * to all of them. The root thread's metadata names the first and the current one.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { ExecutionIndex, ExecutionRecord } from './execution-index.ts';
import type { ThreadStore, VersionedThread } from './thread-store.ts';

/** A run continues every few thousand steps: a longer chain means a link loop, not a run. */
const MAX_CHAIN = 100_000;

async function find(executions: ExecutionIndex, executionId: string): Promise<ExecutionRecord | undefined> {
  try {
    return await executions.getExecution(executionId);
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * The executions of the run `from` belongs to, first to last (one GetItem per execution). Links to a
 * record of another root thread (a copy keeps its source's metadata) are not followed.
 */
export async function executionChain(
  executions: ExecutionIndex,
  from: ExecutionRecord,
): Promise<ExecutionRecord[]> {
  const seen = new Set([from.executionId]);
  const follow = async (record: ExecutionRecord, link: 'continuedFrom' | 'continuedAs') => {
    const found: ExecutionRecord[] = [];
    let current = record;
    while (current[link] !== undefined && seen.size < MAX_CHAIN) {
      const next = await find(executions, current[link]!);
      if (next === undefined || next.rootThreadId !== from.rootThreadId || seen.has(next.executionId)) break;
      seen.add(next.executionId);
      found.push(next);
      current = next;
    }
    return found;
  };
  const before = await follow(from, 'continuedFrom');
  const after = await follow(from, 'continuedAs');
  return [...before.reverse(), from, ...after];
}

/** The run's executions given any of their ids; [] when the id names no execution. */
export async function executionChainOf(
  executions: ExecutionIndex,
  executionId: string,
): Promise<ExecutionRecord[]> {
  const record = await find(executions, executionId);
  return record === undefined ? [] : executionChain(executions, record);
}

/**
 * Threads of every execution of a run (each thread is listed under the execution it runs in). A copy
 * keeps its source's metadata, execution id included, until it runs as the root of an execution of
 * its own: until then the index lists it under its source's run, which it is no thread of, so it is
 * left out (`inspect <copy>` names its source instead).
 */
export async function threadsOfChain(
  threads: ThreadStore,
  chain: readonly ExecutionRecord[],
): Promise<VersionedThread[]> {
  const listed = new Map<string, VersionedThread>();
  for (const record of chain) {
    for (const entry of await threads.listThreadsOfExecution(record.executionId)) {
      if (!listed.has(entry.thread.id) && runsIn(entry.thread, chain)) listed.set(entry.thread.id, entry);
    }
  }
  return [...listed.values()];
}

/** Whether `thread` is one of the run's: any thread but a copy, which is only when the run is its own. */
export function runsIn(
  thread: { readonly id: string; readonly metadata: { readonly copiedFrom?: string } },
  chain: readonly ExecutionRecord[],
): boolean {
  return !thread.metadata.copiedFrom || chain.some((record) => record.rootThreadId === thread.id);
}
