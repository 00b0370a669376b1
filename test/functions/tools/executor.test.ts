import { describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../engine/model/schema.ts';
import {
  checkToolParameters,
  createToolExecutor,
  type ToolResult,
  toolResultText,
  toolSpecsForModel,
} from '../../../functions/tools/index.ts';

const lookup: ToolDefinition = {
  description: 'Looks a customer up',
  parameters: {
    type: 'object',
    properties: {
      id: { type: 'string', minLength: 1 },
      limit: { type: 'integer', default: 10 },
      mode: { enum: ['fast', 'full'] },
    },
    required: ['id'],
    additionalProperties: false,
  },
  handler: 'builtin:echo',
};

const executor = createToolExecutor({
  tools: { lookup, free: { description: 'No schema', handler: { kind: 'builtin', name: 'echo' } } },
  env: { target: 'local' },
});

function failure(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.error;
}

describe('createToolExecutor: lookup and arguments', () => {
  it('calls a tool with checked arguments, schema defaults filled in, and gives JSON text to the model', async () => {
    const result = await executor.execute('lookup', { id: 'c-1' });
    expect(result).toEqual({
      ok: true,
      output: { id: 'c-1', limit: 10 },
      content: '{"id":"c-1","limit":10}',
    });
  });

  it('does not change the caller’s arguments when filling defaults', async () => {
    const args = { id: 'c-2' };
    await executor.execute('lookup', args);
    expect(args).toEqual({ id: 'c-2' });
  });

  it('rejects arguments that do not match the schema with every ajv message', async () => {
    const error = failure(await executor.execute('lookup', { limit: 'many', mode: 'slow', extra: 1 }));
    expect(error.code).toBe('TOOL_ARGUMENTS_INVALID');
    expect(error.message).toContain('tool "lookup"');
    expect(error.message).toContain("must have required property 'id'");
    expect(error.message).toContain('arguments/limit must be integer');
    expect(error.message).toContain(
      'arguments/mode must be equal to one of the allowed values (["fast","full"])',
    );
    expect(error.message).toContain('must NOT have additional properties ("extra")');
  });

  it('treats missing arguments as an empty object', async () => {
    expect(await executor.execute('free', undefined)).toEqual({ ok: true, output: {}, content: '{}' });
    expect(failure(await executor.execute('lookup', undefined)).code).toBe('TOOL_ARGUMENTS_INVALID');
  });

  it('reports an unknown tool with the ones available', async () => {
    const error = failure(await executor.execute('delete_everything', {}));
    expect(error).toEqual({
      code: 'TOOL_NOT_FOUND',
      message: 'tool "delete_everything" is not available here (available: lookup, free)',
    });
    // Inherited object keys are not tools.
    expect(failure(await executor.execute('toString', {})).code).toBe('TOOL_NOT_FOUND');
  });

  it('reports parameters that are not a valid JSON Schema as INVALID_TOOL_DEFINITION', async () => {
    const broken: ToolDefinition = {
      description: 'x',
      parameters: { type: 'object', properties: { a: { type: 'no-such-type' } } },
      handler: 'builtin:echo',
    };
    const run = createToolExecutor({ tools: { broken }, env: { target: 'local' } });
    const error = failure(await run.execute('broken', { a: 1 }));
    expect(error.code).toBe('INVALID_TOOL_DEFINITION');
    expect(error.message).toContain('not a valid JSON Schema');
    expect(await checkToolParameters({ broken, lookup })).toEqual([
      expect.objectContaining({ code: 'INVALID_TOOL_DEFINITION', path: 'tools.broken.parameters' }),
    ]);
  });

  it('reports a malformed handler string as INVALID_TOOL_DEFINITION instead of crashing', async () => {
    const run = createToolExecutor({
      tools: { odd: { description: 'x', handler: 'ftp:somewhere' } },
      env: { target: 'local' },
    });
    expect(failure(await run.execute('odd', {})).code).toBe('INVALID_TOOL_DEFINITION');
  });

  it('refuses to start a call once the signal has aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const run = createToolExecutor({
      tools: { lookup },
      env: { target: 'local' },
      signal: controller.signal,
    });
    expect(failure(await run.execute('lookup', { id: 'x' }))).toEqual({
      code: 'TOOL_FAILED',
      message: 'tool "lookup": the call was cancelled',
    });
  });

  it('fails an output larger than the limit', async () => {
    const run = createToolExecutor({ tools: { lookup }, env: { target: 'local', maxOutputBytes: 64 } });
    const error = failure(await run.execute('lookup', { id: 'x'.repeat(100) }));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toMatch(/more than the 64 allowed/);
  });
});

describe('code tools', () => {
  it("keep the sandbox's code and name the line once", async () => {
    const run = createToolExecutor({
      tools: {
        calc: {
          description: 'Throws',
          handler: { kind: 'code', code: 'const a = 1;\nthrow new Error("broke")' },
        },
      },
      env: { target: 'local' },
    });
    expect(failure(await run.execute('calc', {}))).toEqual({
      code: 'CODE_ERROR',
      message: 'tool "calc": Error: broke (line 2)',
    });
  });
});

describe('toolSpecsForModel', () => {
  it('gives name, description and an object schema, never the handler', () => {
    const specs = toolSpecsForModel({
      lookup,
      ping: { description: 'Pings', handler: 'lambda:arn:aws:lambda:eu-west-1:123456789012:function:ping' },
    });
    expect(specs).toEqual([
      { name: 'lookup', description: 'Looks a customer up', parameters: lookup.parameters },
      { name: 'ping', description: 'Pings', parameters: { type: 'object', properties: {} } },
    ]);
    expect(JSON.stringify(specs)).not.toContain('arn:aws');
  });
});

describe('toolResultText', () => {
  it('is the content of a success and a coded line for a failure', async () => {
    expect(toolResultText(await executor.execute('free', { a: 'b' }))).toBe('{"a":"b"}');
    expect(toolResultText(await executor.execute('nope', {}))).toBe(
      'Error (TOOL_NOT_FOUND): tool "nope" is not available here (available: lookup, free)',
    );
  });

  it('passes a string output to the model as it is', async () => {
    const result = await executor.execute('free', 'plain words');
    expect(result).toEqual({ ok: true, output: 'plain words', content: 'plain words' });
  });
});
