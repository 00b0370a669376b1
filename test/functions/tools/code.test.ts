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
