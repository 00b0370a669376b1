/**
 * What a `code` tool prints when an LLM node's model calls it reaches the user as a CODE node's
 * output does: on the LLM node's step, each call's lines under a line naming the tool and the call;
 * `run` shows it on stderr under the node's progress line, `inspect` (text and --json) under its run,
 * failed requests included, and the dev API's steps carry it (the console's node panel reads them).
 * A TOOL node's `code` tool's output is kept as a CODE node's is.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport, NodeRun } from '../../cli/commands/inspect.ts';
import { runCli } from '../support/cli.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-tool-logs-'));
  await writeFile(join(dir, 'agent.json'), JSON.stringify(workflow('agent', 10)));
  // One tool call allowed: the model's second reply, asking for another, fails the request.
  await writeFile(join(dir, 'limited.json'), JSON.stringify(workflow('limited', 2)));
  const direct = workflow('direct', 10);
  direct.nodes[1] = {
    id: 'agent',
    type: 'TOOL',
    config: { toolName: 'weigh', arguments: { kg: 3 } },
  } as never;
  await writeFile(join(dir, 'direct.json'), JSON.stringify(direct));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

function workflow(id: string, maxToolCallsPerRequest: number) {
  return {
    id,
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          agent: [
            {
              content: 'Weighing both.',
              toolCalls: [
                { id: 'w1', name: 'weigh', arguments: { kg: 2 } },
                { id: 'w2', name: 'weigh', arguments: { kg: 5 } },
              ],
            },
            { content: 'Checking.', toolCalls: [{ id: 'c1', name: 'check', arguments: {} }] },
            'Both weighed.',
          ],
        },
      },
    },
    tools: {
      weigh: {
        description: 'Weighs a parcel',
        parameters: { type: 'object', properties: { kg: { type: 'number' } }, required: ['kg'] },
        handler: {
          kind: 'code',
          code: 'console.log("weighing", input.kg, "kg"); return { grams: input.kg * 1000 }',
        },
      },
      check: {
        description: 'Fails, having said why',
        parameters: { type: 'object', properties: {} },
        handler: { kind: 'code', code: 'console.warn("scale offline"); throw new Error("no scale")' },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'agent',
        type: 'LLM',
        config: { prompt: 'Weigh the parcels', tools: ['weigh', 'check'], maxToolCallsPerRequest },
      },
      { id: 'end', type: 'END', config: { output: { reply: '{{nodes.agent}}' } } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
  };
}

const PRINTED = [
  '[tool weigh, call w1]',
  'weighing 2 kg',
  '[tool weigh, call w2]',
  'weighing 5 kg',
  '[tool check, call c1]',
  'warn: scale offline',
];

async function inspectJson(id: string): Promise<InspectReport> {
  const { code, stdout } = await cli('inspect', id, '--json');
  expect(code).toBe(0);
  return JSON.parse(stdout) as InspectReport;
}

function agentRuns(report: InspectReport): NodeRun[] {
  return report.threads[0]!.nodes.filter((run) => run.nodeId === 'agent');
}

describe('an LLM node whose code tools print', () => {
  let executionId = '';

  it('run shows their lines on stderr under its progress line, each call under its heading', async () => {
    const { code, stdout, stderr } = await cli('run', join(dir, 'agent.json'));
    expect(code, stderr).toBe(0);
    const lines = stderr.split('\n');
    const entered = lines.indexOf('  → agent');
    expect(entered).toBeGreaterThan(-1);
    expect(lines.slice(entered + 1, entered + 8)).toEqual([
      ...PRINTED.map((line) => `    agent │ ${line}`),
      // Its `check` call failed (the model read the error): marked, not ✓.
      expect.stringMatching(/^ {2}⚠ agent \(\d+ ms\): 1 of 3 tool calls failed$/),
    ]);
    expect(stdout).toContain('"reply": "Both weighed."');
    executionId = /^execution (\S+)/m.exec(stdout)![1]!;
  });

  it('inspect --json has them on the LLM node’s run, and inspect shows them under it', async () => {
    const report = await inspectJson(executionId);
    expect(agentRuns(report)).toMatchObject([{ status: 'COMPLETED', step: 2, logs: { lines: PRINTED } }]);
    // The model read the tools' results only.
    const results = report.conversation.messages.filter((message) => message.role === 'tool');
    expect(results.map((message) => message.content)).toEqual([
      '{"grams":2000}',
      '{"grams":5000}',
      expect.stringMatching(/^Error: CODE_ERROR: tool "check": .*no scale/),
    ]);

    const { stdout } = await cli('inspect', executionId);
    const lines = stdout.split('\n');
    const at = lines.findIndex((line) => /step 2 +COMPLETED agent \(LLM\)/.test(line));
    expect(lines.slice(at + 1, at + 7)).toEqual(PRINTED.map((line) => `           │ ${line}`));
  });
});

describe('an LLM node whose request fails after its code tools printed', () => {
  it('keeps what they printed with its failure', async () => {
    const { code, stdout, stderr } = await cli('run', join(dir, 'limited.json'));
    expect(code).toBe(1);
    const lines = stderr.split('\n');
    const entered = lines.indexOf('  → agent');
    expect(lines.slice(entered + 1, entered + 5)).toEqual(
      PRINTED.slice(0, 4).map((line) => `    agent │ ${line}`),
    );
    expect(lines[entered + 5]).toMatch(/^ {2}✗ agent .*TOOL_CALL_LIMIT_EXCEEDED/);
    const executionId = /^execution (\S+)/m.exec(stdout)![1]!;
    expect(agentRuns(await inspectJson(executionId))).toMatchObject([
      { status: 'FAILED', logs: { lines: PRINTED.slice(0, 4) } },
    ]);
  });
});

describe('a TOOL node whose code tool prints', () => {
  it('keeps what it printed as a CODE node does, with no heading: run and inspect show it', async () => {
    const { code, stdout, stderr } = await cli('run', join(dir, 'direct.json'));
    expect(code, stderr).toBe(0);
    const lines = stderr.split('\n');
    expect(lines[lines.indexOf('  → agent') + 1]).toBe('    agent │ weighing 3 kg');
    const executionId = /^execution (\S+)/m.exec(stdout)![1]!;
    expect(agentRuns(await inspectJson(executionId))).toMatchObject([
      { status: 'COMPLETED', logs: { lines: ['weighing 3 kg'] } },
    ]);
  });
});
