import { describe, expect, it } from 'vitest';
import { runHooks, selectHooks } from '../../engine/hooks.ts';
import type { Hook } from '../../engine/model/schema.ts';
import { testEnv } from './thread/fixtures.ts';

const ctx = () => ({ threadId: 't1', workflowId: 'wf', nodeId: 'n1', env: testEnv() });

describe('selectHooks', () => {
  it('keeps enabled hooks of the type, highest weight first, ties in declaration order', () => {
    const hooks: Hook[] = [
      { hookType: 'BEFORE_EXECUTE', eventName: 'low', weight: -1 },
      { hookType: 'BEFORE_EXECUTE', eventName: 'tie-1' },
      { hookType: 'AFTER_EXECUTE', eventName: 'after', weight: 100 },
      { hookType: 'BEFORE_EXECUTE', eventName: 'high', weight: 10 },
      { hookType: 'BEFORE_EXECUTE', eventName: 'off', weight: 50, enabled: false },
      { hookType: 'BEFORE_EXECUTE', eventName: 'tie-2', weight: 0 },
      { hookType: 'BEFORE_EXECUTE', eventName: 'on', enabled: true },
    ];
    expect(selectHooks(hooks, 'BEFORE_EXECUTE').map((h) => h.eventName)).toEqual([
      'high',
      'tie-1',
      'tie-2',
      'on',
      'low',
    ]);
    expect(selectHooks(hooks, 'AFTER_EXECUTE').map((h) => h.eventName)).toEqual(['after']);
    expect(selectHooks(undefined, 'AFTER_EXECUTE')).toEqual([]);
  });
});

describe('runHooks', () => {
  it('fires hooks whose condition holds, with the payload rendered against the scope', () => {
    const hooks: Hook[] = [
      {
        hookType: 'BEFORE_EXECUTE',
        eventName: 'ticket.seen',
        condition: 'priority > 2',
        eventPayload: {
          id: '{{ticket.id}}',
          tags: '{{ticket.tags}}',
          text: 'P{{priority}}',
          nested: ['{{priority}}'],
        },
      },
      { hookType: 'BEFORE_EXECUTE', eventName: 'never', condition: 'priority > 10' },
      { hookType: 'BEFORE_EXECUTE', eventName: 'bare' },
    ];
    const scope = { priority: 3, ticket: { id: 'T-1', tags: ['x', 'y'] } };
    expect(runHooks(hooks, 'BEFORE_EXECUTE', scope, ctx())).toEqual([
      {
        type: 'HOOK_TRIGGERED',
        threadId: 't1',
        workflowId: 'wf',
        nodeId: 'n1',
        hookType: 'BEFORE_EXECUTE',
        at: '2024-01-01T00:00:00.000Z',
        eventName: 'ticket.seen',
        payload: { id: 'T-1', tags: ['x', 'y'], text: 'P3', nested: [3] },
      },
      {
        type: 'HOOK_TRIGGERED',
        threadId: 't1',
        workflowId: 'wf',
        nodeId: 'n1',
        hookType: 'BEFORE_EXECUTE',
        at: '2024-01-01T00:00:01.000Z',
        eventName: 'bare',
        payload: {},
      },
    ]);
  });

  it('reports a failing condition or payload as HOOK_FAILED and carries on with the other hooks', () => {
    const hooks: Hook[] = [
      { hookType: 'AFTER_EXECUTE', eventName: 'bad-condition', condition: 'a +', weight: 3 },
      {
        hookType: 'AFTER_EXECUTE',
        eventName: 'bad-payload',
        eventPayload: { v: '{{ missing.x * 2 }}' },
        weight: 2,
      },
      { hookType: 'AFTER_EXECUTE', eventName: 'fine', weight: 1 },
    ];
    const events = runHooks(hooks, 'AFTER_EXECUTE', { a: 1 }, ctx());
    expect(events.map((e) => [e.type, e.eventName])).toEqual([
      ['HOOK_FAILED', 'bad-condition'],
      ['HOOK_FAILED', 'bad-payload'],
      ['HOOK_TRIGGERED', 'fine'],
    ]);
    expect(events[0]).toMatchObject({ error: { code: 'INVALID_EXPRESSION', nodeId: 'n1' } });
    expect(events[1]).toMatchObject({ error: { code: 'EXPRESSION_ERROR', nodeId: 'n1' } });
  });
});
