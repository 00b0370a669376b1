/**
 * `stepthread rerun --failed --from <node>` (issue 28): 20 runs of a cheap workflow fail at a CODE node
 * whose check reads a variable; a dry run lists them and writes nothing; with `--set` fixing the
 * variable and `--yes`, each is copied from that node and run (4 at a time), and all 20 copies end
 * COMPLETED, each recorded as a local run. Refusals are coded.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RerunJson } from '../../cli/commands/rerun.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import { runCli } from '../support/cli.ts';
import { sizeCheck } from '../support/size-check.ts';

const RUNS = 20;

let dir: string;
let file: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-rerun-'));
  file = join(dir, 'size-check.json');
  await writeFile(file, JSON.stringify(sizeCheck));
  for (let size = 2; size < 2 + RUNS; size += 1) {
    const run = await cli('run', file, '--input', JSON.stringify({ size }), '--json');
    expect(run.code).toBe(1);
  }
  // One that passes: not a failed run, so never rerun.
  expect((await cli('run', file, '--input', '{"size": 1}')).code).toBe(0);
}, 300_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

async function runs(): Promise<RunsJsonEntry[]> {
  return JSON.parse((await cli('runs', '--json')).stdout);
}

describe('rerun --failed', () => {
  it('a dry run lists each failed run with why it failed, checks the copies, and writes nothing', async () => {
    const before = await runs();
    const dry = await cli('rerun', '--failed', '--from', 'check', '--set', 'limit=100', '--json');
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    const report: RerunJson = JSON.parse(dry.stdout);
    expect(report).toMatchObject({
      dryRun: true,
      from: 'check',
      edits: [{ kind: 'variable', name: 'limit', value: 100 }],
    });
    expect(report.runs).toHaveLength(RUNS);
    for (const run of report.runs) {
      expect(run).toMatchObject({
        workflowId: 'size-check',
        status: 'FAILED',
        error: { code: 'CODE_ERROR', nodeId: 'check' },
      });
      expect(run.copyThreadId).toBeUndefined();
    }
    const text = await cli('rerun', '--failed', '--from', 'check', '--set', 'limit=100');
    expect(text.stdout).toMatch(/^EXECUTION +WORKFLOW +STATUS +FAILED WITH +PLAN\n/);
    expect(text.stdout).toContain('size-check  FAILED  CODE_ERROR at check  copy from check and run\n');
    expect(text.stdout).toMatch(
      /\ndry run: 20 of 20 failed runs would be copied from check with 1 edit and run \(4 at a time\); add --yes to do it\n$/,
    );
    expect(await runs()).toEqual(before);
  });

  it('an edit the workflow refuses skips each run with its code (exit 1), writing nothing', async () => {
    const before = await runs();
    const refused = await cli('rerun', '--failed', '--from', 'check', '--set', 'limt=100', '--json', '--yes');
    expect(refused.code).toBe(1);
    const report: RerunJson = JSON.parse(refused.stdout);
    expect(report.runs.map((run) => run.skipped?.code)).toEqual(
      Array(RUNS).fill('UNKNOWN_VARIABLE_REFERENCE'),
    );
    expect(await runs()).toEqual(before);
  });

  it('--yes with a --set that fixes them: all 20 copies run from check and end COMPLETED', async () => {
    const before = await runs();
    const done = await cli(
      'rerun',
      '--failed',
      '--workflow',
      'size-check',
      '--from',
      'check',
      '--set',
      'limit=100',
      '--yes',
      '--json',
    );
    expect(done.code).toBe(0);
    const report: RerunJson = JSON.parse(done.stdout);
    expect(report.dryRun).toBe(false);
    expect(report.runs).toHaveLength(RUNS);
    for (const run of report.runs) {
      expect(run).toMatchObject({
        status: 'FAILED',
        newStatus: 'COMPLETED',
        copyThreadId: expect.stringMatching(/^t-/),
        newExecutionId: expect.any(String),
      });
    }
    // Each copy is a local run of its own, with the edit recorded and the size its source had.
    const after = await runs();
    expect(after).toHaveLength(before.length + RUNS);
    const reruns = after.filter((run) =>
      report.runs.some((entry) => entry.newExecutionId === run.executionId),
    );
    expect(reruns.map((run) => run.status)).toEqual(Array(RUNS).fill('COMPLETED'));
    const first = report.runs[0]!;
    const copy = JSON.parse((await cli('inspect', first.copyThreadId!, '--json')).stdout).threads[0];
    expect(copy.edits).toEqual([
      { kind: 'variable', name: 'limit', scope: 'thread', value: 100, at: expect.any(String) },
    ]);
    const source = JSON.parse((await cli('inspect', first.rootThreadId, '--json')).stdout).threads[0];
    expect(copy.output).toEqual({ accepted: source.input.size });
  }, 300_000);

  it('prints a table of old status → new status, and each run as it ends on stderr', async () => {
    const done = await cli(
      'rerun',
      '--failed',
      '--from',
      'check',
      '--set',
      'limit=100',
      '--yes',
      '--concurrency',
      '2',
    );
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^EXECUTION +WORKFLOW +OLD → NEW +COPY +NEW EXECUTION\n/);
    expect(done.stdout.match(/ size-check {2}FAILED → COMPLETED {2}t-[0-9a-f]{32} {2}\S+\n/g)).toHaveLength(
      RUNS,
    );
    expect(done.stdout).toMatch(/\n20 runs copied from check with 1 edit and run: 20 COMPLETED\n$/);
    expect(done.stderr.match(/^rerun \d+\/20: \S+ → COMPLETED$/gm)).toHaveLength(RUNS);
  }, 300_000);

  it('--since a time after the runs matches none', async () => {
    const none = await cli('rerun', '--failed', '--from', 'check', '--since', '2999-01-01');
    expect([none.code, none.stdout]).toEqual([0, 'no failed runs match\n']);
  });

  it.each([
    [['--from', 'check'], 'INVALID_RUNS_FILTER', /rerun takes --failed/],
    [['--failed', '--from', 'check', '--since', 'yesterday'], 'INVALID_DURATION', /--since takes a duration/],
    [['--failed', '--from', 'check', '--concurrency', '0'], 'INVALID_RUNS_FILTER', /--concurrency/],
    [['--failed', '--from', 'check', '--set', 'limit'], 'INVALID_COPY_EDIT', /<variable>=<json>/],
  ])('refuses %j with %s (exit 2)', async (args, code, message) => {
    const refused = await cli('rerun', ...args);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toContain(`${code}: `);
    expect(refused.stderr).toMatch(message);
  });
});
