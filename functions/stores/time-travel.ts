/**
 * A thread as it was before one of its steps ran, rebuilt from its step records: each record holds
 * the head fields its step changed, as it left them, so folding records 1..s-1 gives the head after
 * step s-1, and the last result of each node among them gives `nodeResults`. Reads grow with s;
 * nothing is written, so a copy from any step costs the same to store.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeResult, Thread } from '../../engine/thread/types.ts';
import type { StepRecord, ThreadStore } from './thread-store.ts';

/** Where a copy starts: before the latest run of a node, or before a step number. */
export type CopyPoint = { readonly nodeId: string } | { readonly step: number };

export interface PastThread {
  /** The thread as step `step` found it; currentNodeId is that step's node. */
  readonly thread: Thread;
  /** The step the copy re-runs first. */
  readonly step: number;
}

/** The head and results of `source` before the step `point` names. Coded errors for bad points. */
export async function threadBefore(
  store: ThreadStore,
  source: Thread,
  point: CopyPoint,
): Promise<PastThread> {
  const stepCount = source.step ?? 0;
  const records = await store.readSteps(source.id, { to: stepCount });
  const target = findStep(records, point, source);
  if (target.result.nodeType === 'JOIN') {
    // A JOIN merges the branches its FORK started in the same run; a copy has none to merge.
    throw new StepthreadError(
      'COPY_POINT_IN_FORK_BRANCH',
      `node ${target.result.nodeId} is a JOIN, which merges the branches its FORK started; copy from the FORK (or a node after the JOIN) instead`,
      { nodeId: target.result.nodeId },
    );
  }
  let head: Record<string, unknown> = { id: source.id };
  const nodeResults: Record<string, NodeResult> = {};
  for (const record of records) {
    if (record.step >= target.step) break;
    head = { ...head, ...record.state };
    for (const field of record.removed ?? []) delete head[field];
    Object.defineProperty(nodeResults, record.result.nodeId, {
      value: record.result,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  // The source's output is its final one, set by a later step: only the folded records give the
  // output the thread had at this point (none, unless one of them set it).
  const { output: _finalOutput, ...sourceRest } = source;
  const thread = {
    ...sourceRest,
    ...head,
    id: source.id,
    currentNodeId: target.result.nodeId,
    nodeResults,
    executionHistory: [],
    step: target.step - 1,
  } as Thread;
  return { thread, step: target.step };
}

function findStep(records: readonly StepRecord[], point: CopyPoint, source: Thread): StepRecord {
  if ('step' in point) {
    const found = records.find((record) => record.step === point.step);
    if (found && found.step > 1) return found;
    throw new StepthreadError(
      'COPY_POINT_NOT_FOUND',
      found
        ? `thread ${source.id}: step 1 is START, which a copy cannot run from; copy from step 2 or later`
        : `thread ${source.id} has no step ${point.step} (it has steps 1..${source.step ?? 0})`,
    );
  }
  if (point.nodeId.trim() === '') {
    throw new StepthreadError('COPY_POINT_NOT_FOUND', 'the node id to copy from is empty');
  }
  const found = records.findLast((record) => record.result.nodeId === point.nodeId);
  if (found === undefined) {
    throw new StepthreadError(
      'COPY_POINT_NOT_FOUND',
      `node ${point.nodeId} never ran on thread ${source.id}, so there is no state before it to copy`,
      { nodeId: point.nodeId },
    );
  }
  if (found.step === 1) {
    throw new StepthreadError(
      'COPY_POINT_NOT_FOUND',
      `node ${point.nodeId} is START, which a copy cannot run from`,
      {
        nodeId: point.nodeId,
      },
    );
  }
  return found;
}
