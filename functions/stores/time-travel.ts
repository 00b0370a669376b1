/**
 * A thread as it was before one of its steps ran, rebuilt from its step records: each record holds
 * the head fields its step changed, as it left them, so folding records 1..s-1 gives the head after
 * step s-1, and the last result of each node among them gives `nodeResults`. Reads grow with s;
 * nothing is written, so a copy from any step costs the same to store.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { closestKey } from '../../engine/model/unknown-keys.ts';
import { copyEditsOf, withCopyEdits } from '../../engine/thread/copy-edits.ts';
import type { NodeResult, Thread } from '../../engine/thread/types.ts';
import { copySourceOf, type StepRecord, type ThreadStore } from './thread-store.ts';

/** Where a copy starts: before the latest run of a node, or before a step number. */
export type CopyPoint = { readonly nodeId: string } | { readonly step: number };

export interface PastThread {
  /** The thread as step `step` found it; currentNodeId is that step's node. */
  readonly thread: Thread;
  /** The step the copy re-runs first. */
  readonly step: number;
  /** The type of that step's node. */
  readonly nodeType: NodeResult['nodeType'];
}

/** The head and results of `source` before the step `point` names. Coded errors for bad points. */
export async function threadBefore(
  store: ThreadStore,
  source: Thread,
  point: CopyPoint,
): Promise<PastThread> {
  const stepCount = source.step ?? 0;
  const records = await store.readSteps(source.id, { to: stepCount });
  const origin = copySourceOf(source);
  const target = findStep(records, point, source, origin !== undefined);
  // A copy's own records start from the state it was copied with, not from a START: rebuild that
  // first (from its source's records, recursively for a copy of a copy).
  const copied = origin === undefined ? undefined : await copiedState(store, source, origin);
  let head: Record<string, unknown> = { id: source.id, ...copied?.fields };
  const nodeResults: Record<string, NodeResult> = { ...copied?.nodeResults };
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
  return { thread, step: target.step, nodeType: target.result.nodeType };
}

/** Head fields a step may change, which a copy took from its source as the source was then. */
const COPIED_FIELDS = [
  'variables',
  'contextData',
  'conversation',
  'input',
  'output',
  'currentNodeId',
] as const;

/**
 * What `copy` had when it was made: its source's fields and node results after `origin.step` steps
 * (a record fold; the source's head and step results when it has not moved on since).
 */
async function copiedState(
  store: ThreadStore,
  copy: Thread,
  origin: { threadId: string; step: number },
): Promise<{ fields: Record<string, unknown>; nodeResults: Record<string, NodeResult> }> {
  const { thread: from } = await store.getCopySource(origin.threadId);
  const movedOn = origin.step < (from.step ?? 0);
  const then = movedOn ? (await threadBefore(store, from, { step: origin.step + 1 })).thread : from;
  const nodeResults = movedOn ? then.nodeResults : await store.readStepResults(from.id);
  const fields: Record<string, unknown> = {};
  for (const field of COPIED_FIELDS) if (then[field] !== undefined) fields[field] = then[field];
  // The conversation is the copy's own (seed 002), pointing at the same log.
  fields.conversation = { ...then.conversation, threadId: copy.id };
  // The edits the copy was made with (copy --set, --input) are in no step record: apply them again.
  const edited = withCopyEdits(then, copyEditsOf(copy));
  fields.variables = edited.variables;
  fields.input = edited.input;
  return { fields, nodeResults };
}

function findStep(
  records: readonly StepRecord[],
  point: CopyPoint,
  source: Thread,
  isCopy: boolean,
): StepRecord {
  // A thread's step 1 is its START, which a copy cannot run from; a copy's step 1 is its first node.
  const first = isCopy ? 1 : 2;
  if ('step' in point) {
    const found = records.find((record) => record.step === point.step);
    if (found && found.step >= first) return found;
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
      `node ${point.nodeId} never ran on thread ${source.id}, so there is no state before it to copy${ranHint(point.nodeId, records, first)}`,
      { nodeId: point.nodeId },
    );
  }
  if (found.step < first) {
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

/** Up to this many nodes that ran are listed when none is close to the id asked for. */
const LISTED_NODES = 12;

/**
 * What follows "never ran": the node that ran whose id is closest to `nodeId` (a typo, another
 * case), else the nodes a copy could start from, when few.
 */
function ranHint(nodeId: string, records: readonly StepRecord[], first: number): string {
  const ran = [...new Set(records.filter((r) => r.step >= first).map((r) => r.result.nodeId))];
  const meant = closestKey(nodeId, ran);
  if (meant !== undefined) return `; did you mean "${meant}"?`;
  if (ran.length === 0) return ' (no node a copy can start from ran on it)';
  if (ran.length <= LISTED_NODES) return ` (the nodes that ran: ${ran.join(', ')})`;
  return ` (${ran.length} nodes ran on it)`;
}
