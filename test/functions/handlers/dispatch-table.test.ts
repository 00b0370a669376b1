import { describe, expect, it } from 'vitest';
import { NODE_TYPES } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import type { HandlerDeps } from '../../../functions/handlers/deps.ts';
import { createDispatch, type TaskRunner } from '../../../functions/handlers/dispatch-table.ts';
import { ALL_FUNCTIONS } from '../../../functions/nodes/index.ts';

const envelope = {
  executionId: 'e',
  workflowId: 'w',
  workflowVersion: 1,
  rootThreadId: 't',
  threadId: 't',
  step: 3,
  maxSteps: 10,
};
const deps = {} as HandlerDeps;

/** A runner that answers with its own name, so a test sees which one ran. */
function named(name: string): TaskRunner {
  return async (event) => ({ ...event.envelope, name }) as unknown as Envelope;
}

function codedError(error: unknown): { name: string; code: string } {
  const e = error as Error;
  return { name: e.name, code: (JSON.parse(e.message) as { code: string }).code };
}

describe('createDispatch', () => {
  const dispatch = createDispatch({
    JOIN: { execute: named('join'), timeout: named('join-timeout') },
    VARIABLE: { execute: named('variable') },
    START: {
      execute: async (event) => ({ ...envelope, name: `start ${event.executionId}` }) as unknown as Envelope,
    },
  });

  it('runs the action of the node type the table names, `execute` when the input names none', async () => {
    await expect(dispatch({ node: { id: 'v', type: 'VARIABLE' }, envelope }, deps)).resolves.toMatchObject({
      name: 'variable',
    });
    await expect(
      dispatch({ action: 'timeout', node: { id: 'j', type: 'JOIN' }, envelope }, deps),
    ).resolves.toMatchObject({ name: 'join-timeout' });
    await expect(
      dispatch({ node: { id: 's', type: 'START' }, executionId: 'x-1' }, deps),
    ).resolves.toMatchObject({ name: 'start x-1' });
  });

  it('refuses, as a failed node, an action or a node type the table does not serve', async () => {
    for (const input of [
      { action: 'timeout', node: { id: 'v', type: 'VARIABLE' }, envelope },
      { action: 'fail', node: { id: 'j', type: 'JOIN' }, envelope },
      { node: { id: 'l', type: 'LLM' }, envelope },
    ]) {
      const error = await dispatch(input, deps).catch((e: unknown) => e);
      expect(codedError(error)).toEqual({ name: 'stepthread.NodeFailed', code: 'INVALID_TASK_INPUT' });
    }
  });

  it('rejects malformed input before looking anything up', async () => {
    const error = await dispatch(
      { action: 'nope', node: { id: 'v', type: 'VARIABLE' }, envelope },
      deps,
    ).catch((e: unknown) => e);
    expect(codedError(error).code).toBe('INVALID_TASK_INPUT');
  });
});

describe('ALL_FUNCTIONS (the local runtime table)', () => {
  it('serves every node type, and the bookkeeping actions on the functions the ASL sends them to', () => {
    expect(Object.keys(ALL_FUNCTIONS).sort()).toEqual([...NODE_TYPES].sort());
    for (const type of NODE_TYPES) expect(typeof ALL_FUNCTIONS[type].execute, type).toBe('function');
    expect(Object.keys(ALL_FUNCTIONS.END).sort()).toEqual(['execute', 'fail']);
    expect(Object.keys(ALL_FUNCTIONS.JOIN).sort()).toEqual([
      'branch-done',
      'branch-failed',
      'execute',
      'timeout',
    ]);
  });
});

describe('storage errors never surface raw', () => {
  const failing = (error: Error) =>
    createDispatch({
      VARIABLE: {
        execute: async () => {
          throw error;
        },
      },
    });
  const raised = async (error: Error) => {
    try {
      await failing(error)({ node: { id: 'count', type: 'VARIABLE' }, envelope }, deps);
    } catch (thrown) {
      const e = thrown as Error;
      return { name: e.name, ...(JSON.parse(e.message) as { code: string; nodeId?: string }) };
    }
    throw new Error('the dispatch did not fail');
  };

  it('maps a DynamoDB refusal, a marshalling failure and a stack overflow to coded errors naming the node', async () => {
    const tooLarge = Object.assign(new Error('Item size has exceeded the maximum allowed size'), {
      name: 'ValidationException',
      $metadata: { httpStatusCode: 400 },
    });
    await expect(raised(tooLarge)).resolves.toMatchObject({
      name: 'stepthread.NodeFailed',
      code: 'STORAGE_ERROR',
      nodeId: 'count',
    });
    const marshall = new Error(
      'Unsupported type passed: [object Object]. Pass options.convertClassInstanceToMap=true to marshall typeof object as map attribute.',
    );
    await expect(raised(marshall)).resolves.toMatchObject({ code: 'STORAGE_ERROR', nodeId: 'count' });
    await expect(raised(new RangeError('Maximum call stack size exceeded'))).resolves.toMatchObject({
      code: 'VALUE_TOO_DEEP',
      nodeId: 'count',
    });
  });
});
