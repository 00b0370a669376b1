/**
 * Thread copy (seed 002): an independent replica that can run on its own — replay, parallel tests,
 * A/B runs, debugging. Unlike a fork nothing is shared, not even the global scope; only the
 * conversation's message log is, because it is immutable.
 */
import { withThreadId } from '../conversation/index.ts';
import { createEvent, type ThreadCopiedEvent } from '../events.ts';
import { deepCopy } from './clone.ts';
import type { EngineEnv, Thread } from './types.ts';

export interface CopyResult {
  thread: Thread;
  event: ThreadCopiedEvent;
}

export interface CopyOptions {
  /** The copy's id; default env.newId() (pass a derived one to make a retried copy idempotent). */
  id?: string;
}

export function copyThread(source: Thread, env: EngineEnv, options: CopyOptions = {}): CopyResult {
  const id = options.id ?? env.newId();
  const at = env.now();
  const { endTime: _endTime, ...rest } = deepCopy(source);
  const thread: Thread = {
    ...rest,
    id,
    status: 'CREATED',
    errors: [],
    metadata: { ...rest.metadata, parentThreadId: source.id, copiedFrom: source.id },
    // Pointer only: the copy shares the immutable log, and `rest` is already a private deep copy.
    conversation: withThreadId(rest.conversation, id),
    startTime: at,
  };
  const event = createEvent('THREAD_COPIED', {
    threadId: id,
    workflowId: source.workflowId,
    at,
    sourceThreadId: source.id,
    copyThreadId: id,
  });
  return { thread, event };
}
