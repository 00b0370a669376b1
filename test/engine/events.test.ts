import { describe, expect, it } from 'vitest';
import { createEvent, EVENT_TYPES, isStepthreadEvent, type StepthreadEvent } from '../../engine/events.ts';

describe('events', () => {
  it('lists every event type of the brief exactly once', () => {
    const expected = [
      'THREAD_CREATED',
      'THREAD_STARTED',
      'THREAD_PAUSED',
      'THREAD_RESUMED',
      'THREAD_COMPLETED',
      'THREAD_FAILED',
      'THREAD_CANCELLED',
      'THREAD_TIMEOUT',
      'THREAD_FORKED',
      'THREAD_JOINED',
      'THREAD_COPIED',
      'THREAD_CONTINUED',
      'NODE_STARTED',
      'NODE_COMPLETED',
      'NODE_FAILED',
      'USER_INTERACTION_REQUESTED',
      'USER_INTERACTION_RESPONDED',
      'TOKEN_LIMIT_WARNING',
      'TOKEN_LIMIT_EXCEEDED',
      'BUDGET_WARNING',
      'CONTEXT_PROCESSED',
      'VARIABLE_CHANGED',
      'HOOK_TRIGGERED',
      'HOOK_FAILED',
    ];
    expect([...EVENT_TYPES].sort()).toEqual([...expected].sort());
  });

  it('builds typed events that survive a JSON round trip and are recognised when read back', () => {
    const base = { threadId: 't', workflowId: 'w', at: '2024-01-01T00:00:00.000Z' };
    const events: StepthreadEvent[] = [
      createEvent('TOKEN_LIMIT_WARNING', { ...base, totalTokens: 850, limit: 1000 }),
      createEvent('CONTEXT_PROCESSED', { ...base, nodeId: 'trim', operation: 'truncate', visibleCount: 4 }),
      createEvent('USER_INTERACTION_REQUESTED', {
        ...base,
        nodeId: 'ask',
        interactionType: 'ask_for_selection',
        optionCount: 3,
      }),
      createEvent('NODE_FAILED', {
        ...base,
        nodeId: 'n',
        nodeType: 'LLM',
        error: { code: 'TOKEN_LIMIT_EXCEEDED', message: 'over' },
      }),
    ];
    expect(events[1]).toEqual({
      type: 'CONTEXT_PROCESSED',
      ...base,
      nodeId: 'trim',
      operation: 'truncate',
      visibleCount: 4,
    });
    const readBack: unknown[] = JSON.parse(JSON.stringify(events));
    expect(readBack).toEqual(events);
    expect(readBack.every(isStepthreadEvent)).toBe(true);
  });

  it('rejects data that is not an event', () => {
    expect(isStepthreadEvent(null)).toBe(false);
    expect(isStepthreadEvent({ type: 'THREAD_EXPLODED', threadId: 't', workflowId: 'w', at: 'x' })).toBe(
      false,
    );
    expect(isStepthreadEvent({ type: 'THREAD_STARTED', threadId: 't', workflowId: 'w' })).toBe(false);
    expect(isStepthreadEvent({ type: 'THREAD_STARTED', threadId: 't', workflowId: 'w', at: 'x' })).toBe(true);
  });
});
