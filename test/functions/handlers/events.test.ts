import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StepthreadEvent } from '../../../engine/events.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import type { EventPublisher, PublishContext } from '../../../functions/events/publisher.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { type Harness, run, startEvent, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('events');
});
afterAll(() => h.close());

interface Published {
  events: readonly StepthreadEvent[];
  context: PublishContext;
  /** The thread's stored events when publish was called. */
  storedTypes: string[];
}

/** A publisher that records each call together with what the table held at that moment. */
function recordingPublisher(): EventPublisher & { calls: Published[] } {
  const calls: Published[] = [];
  return {
    calls,
    async publish(events, context) {
      const journal = await h.stores.threads.readJournal(events[0]!.threadId);
      calls.push({ events, context, storedTypes: journal.events.map((e) => e.type) });
    },
  };
}

const variable: TaskNode = {
  id: 'v',
  type: 'VARIABLE',
  config: { variableName: 'x', variableType: 'number', expression: '41 + 1' },
};

describe('event publishing', () => {
  it('publishes a VARIABLE step’s events after its commit, and again when a retry replays it', async () => {
    const publisher = recordingPublisher();
    const first = (await dispatch(startEvent('exec-events'), h.deps({ events: publisher }))) as Envelope;
    const { threadId } = first;
    expect(publisher.calls[0]!.events.map((e) => e.type)).toEqual([
      'THREAD_CREATED',
      'THREAD_STARTED',
      'NODE_STARTED',
      'NODE_COMPLETED',
    ]);

    publisher.calls.length = 0;
    const next = await run(h.deps({ events: publisher }), variable, first);
    expect(next.step).toBe(2);
    expect(publisher.calls).toHaveLength(1);
    const [call] = publisher.calls;
    expect(call!.context).toEqual({ executionId: 'exec-events' });
    expect(call!.events.map((e) => e.type)).toEqual(['NODE_STARTED', 'VARIABLE_CHANGED', 'NODE_COMPLETED']);
    expect(call!.events.every((e) => e.threadId === threadId)).toBe(true);
    // Published after the commit: the table already held exactly these events at the end of the list.
    expect(call!.storedTypes.slice(-3)).toEqual(['NODE_STARTED', 'VARIABLE_CHANGED', 'NODE_COMPLETED']);
    expect(call!.storedTypes).toHaveLength(7);

    // A retry of the committed step replays it and publishes the same events again (at least once).
    const replayed = await run(h.deps({ events: publisher }), variable, first);
    expect(replayed).toEqual(next);
    expect(publisher.calls).toHaveLength(2);
    expect(publisher.calls[1]!.events).toEqual(call!.events);
  });

  it('does not fail the step when publishing fails', async () => {
    const first = (await dispatch(startEvent('exec-events-down'), h.deps())) as Envelope;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const publish = vi.fn(async () => {
      throw new Error('EventBridge is down');
    });
    const next = await run(h.deps({ events: { publish } }), variable, first);
    warn.mockRestore();

    expect(publish).toHaveBeenCalledTimes(1);
    expect(next).toMatchObject({ step: 2, last: { nodeId: 'v', status: 'COMPLETED' } });
    const { thread } = await h.stores.threads.getThread(first.threadId);
    expect(thread.step).toBe(2);
    expect(thread.variables.thread.x ?? thread.variables.global.x).toBe(42);
  });
});
