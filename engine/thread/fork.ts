/**
 * FORK (seeds 000 and 001): one child thread per fork path.
 *
 * A child starts from its parent's conversation (same immutable log, the child's own thread id),
 * a deep copy of the thread scope, the very same global scope object (shared, as in the seed), and
 * empty subgraph and loop stacks.
 */
import { withThreadId } from '../conversation/index.ts';
import { StepthreadError } from '../errors.ts';
import { createEvent, type ThreadForkedEvent } from '../events.ts';
import { deepCopy } from './clone.ts';
import type { EngineEnv, Thread, ThreadMetadata } from './types.ts';

export interface ForkOptions {
  /** Path ids as the runtime knows them (graph build may have made them globally unique). */
  forkPathIds: readonly string[];
  /** The author's path ids, parallel to forkPathIds; join output is keyed by these. Default: forkPathIds. */
  authorForkPathIds?: readonly string[];
  /** First node of each path, parallel to forkPathIds; becomes the child's currentNodeId. */
  childNodeIds?: readonly string[];
  /** The FORK node (for the event); default: the parent's currentNodeId. */
  nodeId?: string;
  /**
   * Child ids, parallel to forkPathIds; default env.newId() each. A retried handler passes ids
   * derived from the parent and path so the retry recreates the same children.
   */
  childThreadIds?: readonly string[];
}

export interface ForkResult {
  /** In forkPathIds order. */
  children: Thread[];
  event: ThreadForkedEvent;
}

function assertForkPathIds(options: ForkOptions): void {
  const { forkPathIds, authorForkPathIds, childNodeIds, childThreadIds } = options;
  const problem =
    forkPathIds.length === 0
      ? 'forkPathIds is empty'
      : new Set(forkPathIds).size !== forkPathIds.length
        ? 'forkPathIds has duplicates'
        : authorForkPathIds !== undefined && authorForkPathIds.length !== forkPathIds.length
          ? 'authorForkPathIds and forkPathIds differ in length'
          : childNodeIds !== undefined && childNodeIds.length !== forkPathIds.length
            ? 'childNodeIds and forkPathIds differ in length'
            : childThreadIds !== undefined &&
                (childThreadIds.length !== forkPathIds.length ||
                  new Set(childThreadIds).size !== childThreadIds.length)
              ? 'childThreadIds must be distinct, one per fork path'
              : undefined;
  if (problem) throw new StepthreadError('INVALID_FORK_PATH_IDS', problem, forkNodeOption(options));
}

function forkNodeOption(options: ForkOptions): { nodeId?: string } {
  return options.nodeId ? { nodeId: options.nodeId } : {};
}

export function forkThread(parent: Thread, options: ForkOptions, env: EngineEnv): ForkResult {
  assertForkPathIds(options);
  const nodeId = options.nodeId ?? parent.currentNodeId;
  const at = env.now();
  const children = options.forkPathIds.map((forkPathId, i): Thread => {
    const id = options.childThreadIds?.[i] ?? env.newId();
    const authorForkPathId = options.authorForkPathIds?.[i] ?? forkPathId;
    const currentNodeId = options.childNodeIds?.[i];
    // Nearest first: where the child's `{{nodes.x}}` lookups go after its own results.
    const metadata: ThreadMetadata = { parentThreadId: parent.id, forkPathId, lineage: lineageOf(parent) };
    if (parent.metadata.executionId !== undefined) metadata.executionId = parent.metadata.executionId;
    const marks = parent.variables.readonlyMarks;
    return {
      id,
      workflowId: parent.workflowId,
      workflowVersion: parent.workflowVersion,
      status: 'CREATED',
      ...(currentNodeId === undefined ? {} : { currentNodeId }),
      input: deepCopy(parent.input),
      variables: {
        global: parent.variables.global,
        thread: deepCopy(parent.variables.thread),
        subgraph: [],
        loop: [],
        ...(marks
          ? { readonlyMarks: { global: marks.global, thread: [...marks.thread], subgraph: [], loop: [] } }
          : {}),
      },
      // Earlier nodes' results stay readable from the branch through `lineage`, without a copy.
      nodeResults: {},
      executionHistory: [],
      errors: [],
      metadata,
      contextData: { forkPathId, authorForkPathId },
      conversation: withThreadId(parent.conversation, id),
      startTime: at,
    };
  });
  const event = createEvent('THREAD_FORKED', {
    threadId: parent.id,
    workflowId: parent.workflowId,
    at,
    ...(nodeId === undefined ? {} : { nodeId }),
    forkPathIds: [...options.forkPathIds],
    childThreadIds: children.map((c) => c.id),
  });
  return { children, event };
}

/** The threads a thread reads node results from after its own, nearest first (see ThreadMetadata). */
export function lineageOf(thread: Pick<Thread, 'id' | 'metadata'>): string[] {
  return [thread.id, ...(thread.metadata.lineage ?? [])];
}
