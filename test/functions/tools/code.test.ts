import { describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../engine/model/schema.ts';
import { createToolExecutor, type ToolResult } from '../../../functions/tools/index.ts';

const tools: Record<string, ToolDefinition> = {
  total: {
    description: 'Totals prices',
    parameters: { type: 'object', properties: { prices: { type: 'array', items: { type: 'number' } } } },
    handler: { kind: 'code', code: 'return { total: input.prices.reduce((a, b) => a + b, 0) };' },
  },
  fails: {
    description: 'Throws',
    handler: { kind: 'code', code: 'throw new Error("bad input " + input.n);' },
  },
  spins: { description: 'Loops forever', handler: { kind: 'code', code: 'for (;;) {}', timeoutMs: 50 } },
  chatty: {
    description: 'Prints, then returns',
    handler: {
      kind: 'code',
      code: 'console.log("got", input.n); console.warn({ n: input.n }); return input.n',
    },
  },
  explains: {
    description: 'Prints, then throws',
    handler: { kind: 'code', code: 'console.log("about to fail"); throw new Error("no")' },
  },
  floods: {
    description: 'Prints past the cap',
    handler: { kind: 'code', code: 'for (let i = 0; i < 1005; i++) console.log(i); return 0' },
  },
};

const executor = createToolExecutor({ tools, env: { target: 'local' } });

function failure(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.error;
}

describe('code tools run in the sandbox', () => {
  it('receives the arguments as input and returns its value', async () => {
    expect(await executor.execute('total', { prices: [1.5, 2, 3] })).toEqual({
      ok: true,
      output: { total: 6.5 },
      content: '{"total":6.5}',
    });
  });

  it('keeps the sandbox’s code for a thrown error, with the tool’s name', async () => {
    const error = failure(await executor.execute('fails', { n: 4 }));
    expect(error.code).toBe('CODE_ERROR');
    expect(error.message).toContain('tool "fails"');
    expect(error.message).toContain('bad input 4');
  });

  it('stops a runaway script with CODE_TIMEOUT', async () => {
    expect(failure(await executor.execute('spins', {})).code).toBe('CODE_TIMEOUT');
  });

  it('uses an injected sandbox', async () => {
    const requests: unknown[] = [];
    const fake = createToolExecutor({
      tools,
      env: {
        target: 'local',
        sandbox: {
          async run(request) {
            requests.push(request);
            return { ok: true, output: 7, durationMs: 1, logs: [] };
          },
        },
      },
    });
    expect(await fake.execute('spins', { x: 1 })).toEqual({ ok: true, output: 7, content: '7' });
    expect(requests).toEqual([
      expect.objectContaining({ code: 'for (;;) {}', input: { x: 1 }, timeoutMs: 50 }),
    ]);
  });
});

describe('what code tools print', () => {
  it('comes with the result as logs, apart from what the model reads', async () => {
    expect(await executor.execute('chatty', { n: 2 })).toEqual({
      ok: true,
      output: 2,
      content: '2',
      logs: { lines: ['got 2', 'warn: {"n":2}'] },
    });
  });

  it('comes with a failure too: prints before a throw explain it', async () => {
    const result = await executor.execute('explains', {});
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'CODE_ERROR' },
      logs: { lines: ['about to fail'] },
    });
  });

  it('is capped as a CODE node’s is, with what the cap cut', async () => {
    const result = await executor.execute('floods', {});
    expect(result.logs?.lines).toHaveLength(1000);
    expect(result.logs?.cut).toEqual({ lines: 5, chars: 0 });
  });

  it('is absent when the code printed nothing', async () => {
    expect(await executor.execute('total', { prices: [] })).not.toHaveProperty('logs');
  });
});
