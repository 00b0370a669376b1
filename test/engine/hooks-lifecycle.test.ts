import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent } from '../../engine/events.ts';
import { executeNodeLifecycle, type NodeLogic } from '../../engine/lifecycle.ts';
import type { Hook } from '../../engine/model/schema.ts';
import { testEnv } from './thread/fixtures.ts';

const hooks: Hook[] = [
  {
    hookType: 'AFTER_EXECUTE',
    eventName: 'after',
    eventPayload: { status: '{{result.status}}', out: '{{result.output}}' },
  },
  { hookType: 'BEFORE_EXECUTE', eventName: 'before', eventPayload: { who: '{{user}}' } },
  { hookType: 'AFTER_EXECUTE', eventName: 'on-failure', condition: "result.status == 'FAILED'" },
];

function run(logic: NodeLogic, nodeHooks: Hook[] = hooks) {
  return executeNodeLifecycle({
    node: { id: 'calc', type: 'CODE', hooks: nodeHooks },
    threadId: 't1',
    workflowId: 'wf',
    scope: () => ({ user: 'ana' }),
    env: testEnv(),
    attempt: 2,
    logic,
  });
}

describe('executeNodeLifecycle', () => {
  it('orders NODE_STARTED, BEFORE hooks, logic events, AFTER hooks (seeing the result), NODE_COMPLETED', async () => {
    const order: string[] = [];
    const { result, events } = await run(async () => {
      order.push('logic');
      return {
        output: 42,
        events: [
          createEvent('VARIABLE_CHANGED', {
            threadId: 't1',
            workflowId: 'wf',
            at: 'x',
            nodeId: 'calc',
            name: 'n',
            scope: 'thread',
          }),
        ],
      };
    });
    expect(order).toEqual(['logic']);
    expect(events.map((e) => (e.type === 'HOOK_TRIGGERED' ? `HOOK:${e.eventName}` : e.type))).toEqual([
      'NODE_STARTED',
      'HOOK:before',
      'VARIABLE_CHANGED',
      'HOOK:after',
      'NODE_COMPLETED',
    ]);
    expect(events[0]).toMatchObject({
      nodeId: 'calc',
      nodeType: 'CODE',
      attempt: 2,
      at: '2024-01-01T00:00:00.000Z',
    });
    expect(events[1]).toMatchObject({ payload: { who: 'ana' } });
    expect(events[3]).toMatchObject({ payload: { status: 'COMPLETED', out: 42 } });
    expect(events[4]).toMatchObject({ type: 'NODE_COMPLETED', status: 'COMPLETED', nodeType: 'CODE' });
    expect(result).toEqual({
      nodeId: 'calc',
      nodeType: 'CODE',
      status: 'COMPLETED',
      output: 42,
      startedAt: '2024-01-01T00:00:00.000Z',
      endedAt: events[4]!.at,
      attempt: 2,
    });
  });

  it('turns a StepthreadError from the logic into a FAILED result with its code', async () => {
    const { result, events } = await run(() => {
      throw new StepthreadError('TOKEN_LIMIT_EXCEEDED', 'limit 100 exceeded');
    });
    expect(result).toMatchObject({
      status: 'FAILED',
      error: { code: 'TOKEN_LIMIT_EXCEEDED', message: 'limit 100 exceeded', nodeId: 'calc' },
    });
    expect(result).not.toHaveProperty('output');
    const types = events.map((e) => (e.type === 'HOOK_TRIGGERED' ? `HOOK:${e.eventName}` : e.type));
    expect(types).toEqual(['NODE_STARTED', 'HOOK:before', 'HOOK:after', 'HOOK:on-failure', 'NODE_FAILED']);
    expect(events.at(-1)).toMatchObject({ type: 'NODE_FAILED', error: { code: 'TOKEN_LIMIT_EXCEEDED' } });
  });

  it('turns any other thrown value into NODE_EXECUTION_FAILED', async () => {
    const rejected = await run(async () => {
      throw new TypeError('x is not a function');
    });
    expect(rejected.result.error).toEqual({
      code: 'NODE_EXECUTION_FAILED',
      message: 'x is not a function',
      nodeId: 'calc',
    });
    const thrownString = await run(() => {
      throw 'plain string';
    }, []);
    expect(thrownString.result.error).toMatchObject({
      code: 'NODE_EXECUTION_FAILED',
      message: 'plain string',
    });
    expect(thrownString.events.map((e) => e.type)).toEqual(['NODE_STARTED', 'NODE_FAILED']);
  });

  it('gives AFTER hooks the scope as a completed node left it, and as it was before for a failed one', async () => {
    const seen = [{ hookType: 'AFTER_EXECUTE', eventName: 'seen', eventPayload: { x: '{{x}}' } }] as Hook[];
    const lifecycle = (logic: NodeLogic) =>
      executeNodeLifecycle({
        node: { id: 'set', type: 'VARIABLE', hooks: seen },
        threadId: 't1',
        workflowId: 'wf',
        scope: () => ({ x: 1 }),
        scopeAfter: () => ({ x: 2 }),
        env: testEnv(),
        logic,
      });
    const payloadOf = (events: Awaited<ReturnType<typeof lifecycle>>['events']) =>
      events.flatMap((e) => (e.type === 'HOOK_TRIGGERED' ? [e.payload] : []));
    expect(payloadOf((await lifecycle(() => ({ output: 2 }))).events)).toEqual([{ x: 2 }]);
    const failing = await lifecycle(() => {
      throw new StepthreadError('EXPRESSION_ERROR', 'boom');
    });
    expect(payloadOf(failing.events)).toEqual([{ x: 1 }]);
  });

  it('never lets a failing hook fail the node', async () => {
    const broken: Hook[] = [{ hookType: 'BEFORE_EXECUTE', eventName: 'broken', condition: '((' }];
    const { result, events } = await run(() => ({ output: 'ok' }), broken);
    expect(result.status).toBe('COMPLETED');
    expect(events.map((e) => e.type)).toEqual(['NODE_STARTED', 'HOOK_FAILED', 'NODE_COMPLETED']);
  });

  it('records a SKIPPED node as completed-with-skip', async () => {
    const { result, events } = await run(() => ({ status: 'SKIPPED' }), []);
    expect(result.status).toBe('SKIPPED');
    expect(events.at(-1)).toMatchObject({ type: 'NODE_COMPLETED', status: 'SKIPPED' });
  });
});
