import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import { transitionThread } from '../../../engine/thread/status.ts';
import { THREAD_STATUSES, type ThreadStatus } from '../../../engine/thread/types.ts';
import { runningThread, testEnv } from './fixtures.ts';

const legal: Record<string, string> = {
  'CREATED→RUNNING': 'THREAD_STARTED',
  'RUNNING→PAUSED': 'THREAD_PAUSED',
  'RUNNING→COMPLETED': 'THREAD_COMPLETED',
  'RUNNING→FAILED': 'THREAD_FAILED',
  'RUNNING→CANCELLED': 'THREAD_CANCELLED',
  'RUNNING→TIMEOUT': 'THREAD_TIMEOUT',
  'PAUSED→RUNNING': 'THREAD_RESUMED',
  'PAUSED→CANCELLED': 'THREAD_CANCELLED',
  'PAUSED→TIMEOUT': 'THREAD_TIMEOUT',
};
const terminal = new Set<ThreadStatus>(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']);

const pairs = THREAD_STATUSES.flatMap((from) => THREAD_STATUSES.map((to) => [from, to] as const));

describe('transitionThread', () => {
  it('covers all 49 pairs, 9 of them legal', () => {
    expect(pairs).toHaveLength(49);
    expect(pairs.filter(([f, t]) => `${f}→${t}` in legal)).toHaveLength(9);
  });

  it.each(pairs)('%s → %s', (from, to) => {
    const thread = { ...runningThread(), status: from, endTime: undefined };
    const expectedEvent = legal[`${from}→${to}`];
    if (expectedEvent === undefined) {
      let caught: unknown;
      try {
        transitionThread(thread, to, testEnv());
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(StepthreadError);
      expect((caught as StepthreadError).code).toBe('INVALID_STATUS_TRANSITION');
      return;
    }
    const { thread: next, event } = transitionThread(thread, to, testEnv());
    expect(next.status).toBe(to);
    expect(thread.status).toBe(from);
    expect(event).toMatchObject({
      type: expectedEvent,
      threadId: 'parent',
      workflowId: 'triage',
      from,
      to,
      at: '2024-01-01T00:00:00.000Z',
    });
    expect(next.endTime).toBe(terminal.has(to) ? '2024-01-01T00:00:00.000Z' : undefined);
  });

  it('records the failure cause on the thread and the event', () => {
    const error = { code: 'JOIN_FAILED' as const, message: 'branch b failed', nodeId: 'merge' };
    const before = runningThread();
    const { thread, event } = transitionThread(before, 'FAILED', testEnv(), { error });
    expect(thread.errors).toEqual([...before.errors, error]);
    expect(before.errors).toHaveLength(1);
    expect(event).toMatchObject({ type: 'THREAD_FAILED', error });
  });

  it('carries the reason of a pause or cancellation', () => {
    const { event } = transitionThread(runningThread(), 'PAUSED', testEnv(), { reason: 'waiting for input' });
    expect(event).toMatchObject({ type: 'THREAD_PAUSED', reason: 'waiting for input' });
  });
});
