/**
 * `stepthread diff`: two runs of route-loop with different inputs, a support-triage copy answered
 * differently against its source (it parts at the USER_INTERACTION after the copy point), the JSON
 * shape, and the coded error for an unknown thread. Real embedded stores in a data directory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DiffReport } from '../../cli/commands/diff.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const ROUTE_LOOP = join(ROOT, 'examples', 'route-loop.json');
const TRIAGE = join(ROOT, 'examples', 'support-triage.json');
const VENDOR = join(ROOT, 'examples', 'vendor-review.json');
const TICKET = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };

let dir: string;
const dataDir = () => ['--data-dir', join(dir, 'data')];
const cli = (...args: string[]) => runCli([...args, ...dataDir()], { cwd: dir });

async function run(...args: string[]): Promise<RunJsonResult> {
  const result = await cli('run', ...args, '--json');
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as RunJsonResult;
}

async function diffJson(a: string, b: string): Promise<DiffReport> {
  const result = await cli('diff', a, b, '--json');
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as DiffReport;
}

let three: RunJsonResult;
let four: RunJsonResult;
let again: RunJsonResult;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-diff-'));
  three = await run(ROUTE_LOOP, '--input', '{"tickets": ["a", "b", "c"]}');
  four = await run(ROUTE_LOOP, '--input', '{"tickets": ["a", "x", "c", "d"]}');
  again = await run(ROUTE_LOOP, '--input', '{"tickets": ["a", "b", "c"]}');
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('stepthread diff', () => {
  it('two runs of route-loop with different inputs: where they part, the outputs and variables that differ', async () => {
    const report = await diffJson(three.threadId, four.threadId);
    // START's output is the input: they part at once.
    expect(report.sharedSteps).toBe(0);
    expect(report.sameUpTo).toBeNull();
    expect(report.partsAt).toMatchObject({
      reason: 'output',
      position: 1,
      a: { nodeId: 'start', occurrence: 1, output: { tickets: ['a', 'b', 'c'] } },
      b: { nodeId: 'start', occurrence: 1, output: { tickets: ['a', 'x', 'c', 'd'] } },
    });
    const byNode = (nodeId: string, occurrence: number) =>
      report.outputs.find((entry) => entry.nodeId === nodeId && entry.occurrence === occurrence);
    // The scripted model answers urgent to the 4th ticket, which only b has.
    expect(byNode('classify', 4)).toMatchObject({ a: null, b: { output: 'urgent', nodeType: 'LLM' } });
    expect(byNode('escalate', 2)).toMatchObject({ a: null, b: { output: 2 } });
    // The classify runs both have gave the same answers: not listed.
    expect(byNode('classify', 1)).toBeUndefined();
    expect(report.variables).toEqual([{ scope: 'thread', name: 'escalated', a: 1, b: 2 }]);
    expect(report.final).toEqual({
      same: false,
      a: { escalated: 1, routine: ['a', 'c'] },
      b: { escalated: 2, routine: ['a', 'c'] },
    });
    expect(report.a).toMatchObject({ threadId: three.threadId, status: 'COMPLETED', steps: 18 });
    expect(report.b).toMatchObject({ threadId: four.threadId, status: 'COMPLETED', steps: 22 });
    expect(report.b.cost.tokens).toBeGreaterThan(report.a.cost.tokens);

    const text = await cli('diff', three.threadId, four.threadId);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`a ${three.threadId}  COMPLETED  18 steps, `);
    expect(text.stdout).toContain('parts at step 1: start (START) gave another output\n');
    expect(text.stdout).toContain('  classify #4\n    a: (no such step)\n    b: "urgent"\n');
    expect(text.stdout).toContain('  thread escalated\n    a: 1\n    b: 2\n');
  });

  it('two runs alike: no parting step, nothing differs', async () => {
    const report = await diffJson(three.threadId, again.executionId);
    expect(report.partsAt).toBeNull();
    expect(report.outputs).toEqual([]);
    expect(report.variables).toEqual([]);
    expect(report.final.same).toBe(true);
    expect(report.sameUpTo).toEqual({ position: 18, nodeId: 'end' });
    expect((await cli('diff', three.threadId, again.threadId)).stdout).toContain(
      'same up to step 18 (end)\nno step differs\n',
    );
  });

  it('a support-triage copy answered differently against its source parts at the USER_INTERACTION', async () => {
    const source = await run(
      TRIAGE,
      '--input',
      JSON.stringify(TICKET),
      '--answers',
      '{"approve-credit": true}',
    );
    const copied = await cli('copy', source.threadId, '--from', 'approve-credit');
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim();
    const rerun = await run(TRIAGE, '--thread', copyId, '--answers', '{"approve-credit": false}');
    expect(rerun.status).toBe('COMPLETED');

    const report = await diffJson(source.threadId, copyId);
    // The copy holds its source's first 3 steps: compared from there.
    expect(report.b).toMatchObject({ copiedFrom: source.threadId, copiedAtStep: 3, steps: 7 });
    expect(report.sharedSteps).toBe(3);
    expect(report.sameUpTo).toEqual({ position: 3, nodeId: 'is-billing' });
    expect(report.partsAt).toMatchObject({
      reason: 'output',
      position: 4,
      a: { nodeId: 'approve-credit', nodeType: 'USER_INTERACTION', step: 4, output: { approved: true } },
      // The copy numbers its own steps from 1.
      b: { nodeId: 'approve-credit', nodeType: 'USER_INTERACTION', step: 1, output: { approved: false } },
    });
    expect(report.outputs.map((entry) => entry.nodeId)).toEqual([
      'approve-credit',
      'compute-credit',
      'reply',
      'end',
    ]);
    expect(report.outputs[1]).toMatchObject({
      a: { output: { amount: 6, currency: 'EUR' } },
      b: { output: { amount: 0, currency: 'EUR' } },
    });
    expect(report.variables).toContainEqual({ scope: 'thread', name: 'approved', a: true, b: false });
    expect(report.final).toMatchObject({ same: false, a: { approved: true }, b: { approved: false } });

    const text = await cli('diff', source.threadId, copyId);
    expect(text.stdout).toContain(`copy of ${source.threadId} at step 3`);
    expect(text.stdout).toContain('same up to step 3 (is-billing)\n');
    expect(text.stdout).toContain('parts at step 4: approve-credit (USER_INTERACTION) gave another output\n');
  }, 120_000);

  it('fork children are paired by forkPathId, each with its own diff (vendor-review copied before its FORK)', async () => {
    const input = '{"vendor": "Acme Analytics", "monthlyFee": 1200}';
    const source = await run(VENDOR, '--input', input, '--answers', '{"approve": true}');
    const copyId = (await cli('copy', source.threadId, '--from', 'research')).stdout.trim();
    await run(VENDOR, '--thread', copyId, '--answers', '{"approve": false}');
    const report = await diffJson(source.threadId, copyId);
    // The FORK's output names new child threads: not a difference; the answer is.
    expect(report.partsAt).toMatchObject({ position: 5, a: { nodeId: 'approve' }, b: { nodeId: 'approve' } });
    expect(report.outputs.map((entry) => entry.nodeId)).toEqual(['approve', 'end']);
    expect(report.forks.map((fork) => fork.forkPathId).sort()).toEqual(['split/cost', 'split/security']);
    for (const fork of report.forks) {
      expect(fork).toMatchObject({ occurrence: 1, same: true, diff: { partsAt: null, outputs: [] } });
      expect(fork.a).not.toBe(fork.b);
    }
    const text = await cli('diff', source.threadId, copyId);
    expect(text.stdout).toContain(
      `fork child split/security: the same (${report.forks.find((f) => f.forkPathId === 'split/security')!.a}, `,
    );
  }, 120_000);

  it('--json: a stable object with a, b, partsAt, outputs, variables and final', async () => {
    const report = await diffJson(three.threadId, four.threadId);
    expect(Object.keys(report)).toEqual([
      'a',
      'b',
      'sharedSteps',
      'sameUpTo',
      'partsAt',
      'outputs',
      'variables',
      'final',
      'forks',
    ]);
    for (const side of [report.a, report.b]) {
      expect(Object.keys(side)).toEqual(
        expect.arrayContaining([
          'threadId',
          'executionId',
          'workflowId',
          'status',
          'steps',
          'startTime',
          'cost',
        ]),
      );
      expect(side.durationMs).toBeGreaterThanOrEqual(0);
      expect(Object.keys(side.cost).sort()).toEqual(
        ['costUsd', 'inputTokens', 'modelCalls', 'outputTokens', 'tokens', 'unpricedCalls'].sort(),
      );
    }
    expect(Object.keys(report.partsAt!).sort()).toEqual(['a', 'b', 'position', 'reason']);
    expect(Object.keys(report.outputs[0]!)).toEqual(['nodeId', 'occurrence', 'a', 'b']);
  });

  it('an unknown thread is EXECUTION_NOT_FOUND, as in inspect', async () => {
    const result = await cli('diff', three.threadId, 't-no-such-thread');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('EXECUTION_NOT_FOUND: execution or thread t-no-such-thread not found');
  });
});
