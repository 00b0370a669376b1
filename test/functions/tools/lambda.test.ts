import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../engine/model/schema.ts';
import {
  createToolExecutor,
  type LambdaInvoker,
  type ToolEnvironment,
  type ToolResult,
} from '../../../functions/tools/index.ts';
import { functionErrorMessage } from '../../../functions/tools/lambda-invoker.ts';

const workflowDir = join(import.meta.dirname, 'fixtures');
const ARN = 'arn:aws:lambda:eu-west-1:123456789012:function:adder';

const tools: Record<string, ToolDefinition> = {
  add: {
    description: 'Adds',
    parameters: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
    handler: 'module:./tools.mjs',
  },
  shout: { description: 'Shouts', handler: { kind: 'lambda', module: './tools.mjs', export: 'shout' } },
  explode: { description: 'Throws', handler: 'module:./tools.mjs#explode' },
  hang: {
    description: 'Never ends',
    handler: { kind: 'lambda', module: './tools.mjs', export: 'hang', timeoutMs: 50 },
  },
  bigint: { description: 'Returns a BigInt', handler: 'module:./tools.mjs#bigint' },
  notFunction: { description: 'Not a function', handler: 'module:./tools.mjs#notAFunction' },
  missingFile: { description: 'No such file', handler: 'module:./nowhere.mjs' },
  remote: { description: 'Remote adder', handler: `lambda:${ARN}` },
  both: { description: 'Either', handler: { kind: 'lambda', arn: ARN, module: './tools.mjs' } },
};

function executor(env: Partial<ToolEnvironment> = {}) {
  return createToolExecutor({ tools, env: { target: 'local', workflowDir, ...env } });
}

function failure(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.error;
}

describe('lambda tools run locally from a module', () => {
  it('calls the default export `handler` relative to the workflow folder', async () => {
    expect(await executor().execute('add', { a: 2, b: 3 })).toEqual({
      ok: true,
      output: { sum: 5 },
      content: '{"sum":5}',
    });
  });

  it('calls a named export with the arguments and a context', async () => {
    expect(await executor().execute('shout', { text: 'hi' })).toEqual({
      ok: true,
      output: 'HI from shout',
      content: 'HI from shout',
    });
  });

  it('checks the arguments before loading anything', async () => {
    expect(failure(await executor().execute('add', { a: 1 })).code).toBe('TOOL_ARGUMENTS_INVALID');
  });

  it('turns an exception in the module into a coded failure with its message', async () => {
    expect(failure(await executor().execute('explode', { what: 'this' }))).toEqual({
      code: 'TOOL_FAILED',
      message: 'tool "explode" failed: cannot handle this',
    });
  });

  it('times out a call that does not finish', async () => {
    expect(failure(await executor().execute('hang', {}))).toEqual({
      code: 'TOOL_TIMEOUT',
      message: 'tool "hang" did not finish within 50 ms',
    });
  });

  it('fails a result JSON cannot hold', async () => {
    const error = failure(await executor().execute('bigint', {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain('returned a value that is not JSON');
  });

  it('reports a missing export, a missing file and an unknown folder', async () => {
    expect(failure(await executor().execute('notFunction', {})).code).toBe('INVALID_TOOL_DEFINITION');
    const missing = failure(await executor().execute('missingFile', {}));
    expect(missing.code).toBe('TOOL_FAILED');
    expect(missing.message).toContain('cannot load module');
    const noDir = createToolExecutor({ tools, env: { target: 'local' } });
    expect(failure(await noDir.execute('shout', { text: 'x' })).message).toContain(
      "the workflow's folder is unknown",
    );
  });

  it('prefers the module over the arn locally', async () => {
    const invokeLambda: LambdaInvoker = async () => {
      throw new Error('should not be invoked');
    };
    expect(await executor({ invokeLambda }).execute('both', { a: 1, b: 1 })).toMatchObject({
      output: { sum: 2 },
    });
  });
});

describe('lambda tools invoke a function by ARN', () => {
  const calls: Array<{ functionName: string; payload: unknown }> = [];
  const invokeLambda: LambdaInvoker = async ({ functionName, payload }) => {
    calls.push({ functionName, payload });
    const { a, b } = payload as { a: number; b: number };
    if (a < 0)
      throw new Error(
        functionErrorMessage('Unhandled', { errorType: 'RangeError', errorMessage: 'negative' }),
      );
    return { sum: a + b };
  };

  it('invokes the arn on AWS, also when the tool has a module', async () => {
    const aws = executor({ target: 'aws', invokeLambda });
    expect(await aws.execute('remote', { a: 1, b: 2 })).toMatchObject({ ok: true, output: { sum: 3 } });
    expect(await aws.execute('both', { a: 2, b: 2 })).toMatchObject({ ok: true, output: { sum: 4 } });
    expect(calls).toEqual([
      { functionName: ARN, payload: { a: 1, b: 2 } },
      { functionName: ARN, payload: { a: 2, b: 2 } },
    ]);
  });

  it('reports a function error as TOOL_FAILED with the function’s message', async () => {
    expect(
      failure(await executor({ target: 'aws', invokeLambda }).execute('remote', { a: -1, b: 0 })),
    ).toEqual({
      code: 'TOOL_FAILED',
      message: 'tool "remote" failed: RangeError: negative',
    });
  });

  it('cannot run a module-only tool on AWS, nor an arn without an invoker', async () => {
    expect(
      failure(await executor({ target: 'aws', invokeLambda }).execute('shout', { text: 'x' })).message,
    ).toContain('module tools run only in the local runtime');
    expect(failure(await executor().execute('remote', {})).message).toContain(
      'no Lambda invoker is configured',
    );
  });

  it('reads the function error payload Lambda returns', () => {
    expect(functionErrorMessage('Unhandled', { errorType: 'Error', errorMessage: 'boom' })).toBe(
      'Error: boom',
    );
    expect(functionErrorMessage('Unhandled', 'weird')).toBe('the function failed (Unhandled)');
  });
});
