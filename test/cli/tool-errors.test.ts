/**
 * An LLM node whose tool calls returned errors completes (the model read the errors), but `run`'s
 * progress marks it ⚠ with how many failed, not ✓; `inspect` shows the assistant's tool calls and
 * the tool results, the failed ones marked.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-tool-errors-'));
  await writeFile(join(dir, 'failing.json'), JSON.stringify(workflow('failing')));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

function workflow(id: string) {
  return {
    id,
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          // Both calls fail: a tool that throws, and one that does not exist.
          agent: [
            {
              content: 'Checking the scale.',
              toolCalls: [
                { id: 'c1', name: 'check', arguments: { parcel: 'p-1', kg: 2 } },
                { id: 'c2', name: 'nope', arguments: {} },
              ],
            },
            'The scale is offline.',
          ],
          // One call, which works.
          weigher: [
            { content: 'Weighing.', toolCalls: [{ id: 'w1', name: 'weigh', arguments: { kg: 2 } }] },
            'Done.',
          ],
        },
      },
    },
    tools: {
      check: {
        description: 'Fails',
        parameters: { type: 'object', properties: { parcel: { type: 'string' }, kg: { type: 'number' } } },
        handler: { kind: 'code', code: 'throw new Error("no scale")' },
      },
      weigh: {
        description: 'Weighs a parcel',
        parameters: { type: 'object', properties: { kg: { type: 'number' } }, required: ['kg'] },
        handler: { kind: 'code', code: 'return { grams: input.kg * 1000 }' },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'agent', type: 'LLM', config: { prompt: 'Check the scale', tools: ['check'] } },
      { id: 'weigher', type: 'LLM', config: { prompt: 'Weigh it', tools: ['weigh'] } },
      { id: 'end', type: 'END', config: { output: { reply: '{{nodes.agent}}' } } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'weigher' },
      { from: 'weigher', to: 'end' },
    ],
  };
}

describe('tool calls that fail', () => {
  it("run's progress marks the node ⚠ with how many of its tool calls failed; inspect shows the calls and results", async () => {
    const run = await cli('run', join(dir, 'failing.json'));
    expect(run.code, run.stderr).toBe(0);
    // It completed, so no ✗; and no ✓ as if all went well.
    expect(run.stderr).toMatch(/^ {2}⚠ agent \(\d+ ms\): 2 of 2 tool calls failed$/m);
    expect(run.stderr).not.toMatch(/[✓✗] agent/);
    // A node whose tool call worked is a plain ✓.
    expect(run.stderr).toMatch(/^ {2}✓ weigher \(\d+ ms\)$/m);

    const executionId = /started execution (\S+)/.exec(run.stderr)![1]!;
    const inspected = await cli('inspect', executionId);
    expect(inspected.code).toBe(0);
    const conversation = inspected.stdout.slice(inspected.stdout.indexOf('\nconversation of '));
    expect(conversation.split('\n').slice(2)).toEqual([
      '  [user] Check the scale',
      '  [assistant] Checking the scale.',
      '    → tool call check({"parcel":"p-1","kg":2}) c1',
      '    → tool call nope({}) c2',
      '  [tool result of check c1, failed] Error: CODE_ERROR: tool "check": Error: no scale (line 1)',
      '  [tool result of nope c2, failed] Error: there is no tool named "nope"; the tools are: check',
      '  [assistant] The scale is offline.',
      '  [user] Weigh it',
      '  [assistant] Weighing.',
      '    → tool call weigh({"kg":2}) w1',
      '  [tool result of weigh w1] {"grams":2000}',
      '  [assistant] Done.',
      '',
    ]);
  });
});
