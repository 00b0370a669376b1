/**
 * What a CODE node prints reaches the user: `run` shows it on stderr under the node's progress line,
 * `inspect` (text and --json) under the node's run, failed runs included, and a copy of the thread
 * shows its source's runs with their output (the source's step records, replayed).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport, NodeRun } from '../../cli/commands/inspect.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-code-logs-'));
  await writeFile(join(dir, 'prints.json'), JSON.stringify(workflow('prints', 'return input.n * 2')));
  await writeFile(join(dir, 'fails.json'), JSON.stringify(workflow('fails', 'throw new Error("no luck")')));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

function workflow(id: string, last: string) {
  return {
    id,
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'compute',
        type: 'CODE',
        config: {
          code: `console.log("n =", input.n, { a: [1] });\nconsole.error("careful:\\nsecond line");\n${last}`,
          inputs: { n: 'input.n' },
        },
      },
      { id: 'end', type: 'END', config: { output: { doubled: '{{nodes.compute}}' } } },
    ],
    edges: [
      { from: 'start', to: 'compute' },
      { from: 'compute', to: 'end' },
    ],
  };
}

const PRINTED = ['n = 3 {"a":[1]}', 'error: careful:\nsecond line'];

async function inspectJson(id: string): Promise<InspectReport> {
  const { code, stdout } = await cli('inspect', id, '--json');
  expect(code).toBe(0);
  return JSON.parse(stdout) as InspectReport;
}

function computeRuns(report: InspectReport, threadId: string): NodeRun[] {
  const thread = report.threads.find((candidate) => candidate.threadId === threadId)!;
  return thread.nodes.filter((run) => run.nodeId === 'compute');
}

describe('a CODE node that prints', () => {
  let executionId = '';
  let threadId = '';

  it('run shows its lines on stderr under its progress line; stdout has the result only', async () => {
    const { code, stdout, stderr } = await cli('run', join(dir, 'prints.json'), '--input', '{"n": 3}');
    expect(code).toBe(0);
    const lines = stderr.split('\n');
    const entered = lines.indexOf('  → compute');
    expect(entered).toBeGreaterThan(-1);
    expect(lines.slice(entered + 1, entered + 5)).toEqual([
      '    compute │ n = 3 {"a":[1]}',
      '    compute │ error: careful:',
      '    compute │ second line',
      expect.stringMatching(/^ {2}✓ compute \(\d+ ms\)$/),
    ]);
    expect(stdout).not.toContain('careful');
    executionId = /^execution (\S+)/m.exec(stdout)![1]!;
    threadId = /^thread +(\S+)/m.exec(stdout)![1]!;
  });

  it('inspect --json has them on the node run, and inspect shows them under it', async () => {
    const report = await inspectJson(executionId);
    const [run] = computeRuns(report, threadId);
    expect(run).toMatchObject({ status: 'COMPLETED', step: 2, logs: { lines: PRINTED } });
    expect(run!.logs).not.toHaveProperty('cut');
    // Other nodes printed nothing and say nothing.
    expect(report.threads[0]!.nodes.filter((other) => 'logs' in other).map((other) => other.nodeId)).toEqual([
      'compute',
    ]);

    const { stdout } = await cli('inspect', executionId);
    const lines = stdout.split('\n');
    const at = lines.findIndex((line) => /step 2 +COMPLETED compute \(CODE\)/.test(line));
    expect(lines.slice(at + 1, at + 4)).toEqual([
      '           │ n = 3 {"a":[1]}',
      '           │ error: careful:',
      '           │ second line',
    ]);
  });

  it('run --json prints only its JSON (the output is in inspect)', async () => {
    const { code, stdout, stderr } = await cli(
      'run',
      join(dir, 'prints.json'),
      '--input',
      '{"n": 4}',
      '--json',
    );
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as RunJsonResult;
    expect(result.output).toEqual({ doubled: 8 });
    expect(stderr).not.toContain('careful');
    const [run] = computeRuns(await inspectJson(result.executionId), result.threadId);
    expect(run?.logs).toEqual({ lines: ['n = 4 {"a":[1]}', 'error: careful:\nsecond line'] });
  });

  it('a copy from a later step shows the source run with the same output, and so after running it', async () => {
    const copied = await cli('copy', threadId, '--from', 'end');
    expect(copied.code).toBe(0);
    const copyId = copied.stdout.trim();
    expect(computeRuns(await inspectJson(copyId), copyId)).toMatchObject([
      { step: 2, logs: { lines: PRINTED } },
    ]);
    const ran = await cli('run', join(dir, 'prints.json'), '--thread', copyId, '--json');
    expect(ran.code).toBe(0);
    expect(computeRuns(await inspectJson(copyId), copyId)).toMatchObject([
      { step: 2, logs: { lines: PRINTED } },
    ]);
  });

  it('a copy from the CODE node runs it again: the copy shows that run with its own output, once', async () => {
    const copied = await cli('copy', threadId, '--from', 'compute');
    const copyId = copied.stdout.trim();
    expect(computeRuns(await inspectJson(copyId), copyId)).toEqual([]);
    const ran = await cli('run', join(dir, 'prints.json'), '--thread', copyId);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toContain('    compute │ n = 3 {"a":[1]}');
    // A copy numbers its own steps from 1 after its source's; START, the source's step 1, printed nothing.
    const report = await inspectJson(copyId);
    expect(computeRuns(report, copyId)).toMatchObject([{ step: 1, logs: { lines: PRINTED } }]);
    expect(report.threads[0]!.nodes.map((run) => [run.nodeId, run.step, 'logs' in run])).toEqual([
      ['start', 1, false],
      ['compute', 1, true],
      ['end', 2, false],
    ]);
  });
});

describe('a CODE node that prints, then throws', () => {
  it('keeps what it printed with its failure: run shows it before the ✗ line, inspect on the FAILED run', async () => {
    const { code, stdout, stderr } = await cli('run', join(dir, 'fails.json'), '--input', '{"n": 3}');
    expect(code).toBe(1);
    const lines = stderr.split('\n');
    const entered = lines.indexOf('  → compute');
    expect(lines.slice(entered + 1, entered + 4)).toEqual([
      '    compute │ n = 3 {"a":[1]}',
      '    compute │ error: careful:',
      '    compute │ second line',
    ]);
    expect(lines[entered + 4]).toMatch(/^ {2}✗ compute .*CODE_ERROR: node compute: Error: no luck/);
    const executionId = /^execution (\S+)/m.exec(stdout)![1]!;
    const report = await inspectJson(executionId);
    expect(computeRuns(report, report.rootThreadId!)).toMatchObject([
      { status: 'FAILED', logs: { lines: PRINTED } },
    ]);
  });
});

describe('a CODE node before a question, resumed after it', () => {
  it('resume shows its lines again with its replayed progress line, as the first run did', async () => {
    const asks = workflow('asks', 'return input.n * 2');
    // compute is replayed from its record, `again` (the last step before the question) as a step
    // that landed: both show what they printed.
    asks.nodes.splice(
      2,
      0,
      { id: 'again', type: 'CODE', config: { code: 'console.log("again"); return 1' } } as never,
      {
        id: 'ok',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_approval', showMessage: 'Go on?' },
      } as never,
    );
    asks.edges = [
      { from: 'start', to: 'compute' },
      { from: 'compute', to: 'again' },
      { from: 'again', to: 'ok' },
      { from: 'ok', to: 'end' },
    ];
    await writeFile(join(dir, 'asks.json'), JSON.stringify(asks));
    // A process with no terminal: the run stops at the question, resumably.
    const dataDir = join(dir, 'data-asks');
    const stopped = await cliProcess(
      ['run', join(dir, 'asks.json'), '--input', '{"n": 3}', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain('    compute │ n = 3 {"a":[1]}');
    const executionId = /started execution (\S+)/.exec(stopped.stderr)![1]!;
    const resumed = await cliProcess(
      ['resume', executionId, '--answers', '{"ok": true}', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = resumed.stderr.split('\n');
    const entered = lines.indexOf('  → compute');
    expect(entered).toBeGreaterThan(-1);
    expect(lines.slice(entered + 1, entered + 4)).toEqual([
      '    compute │ n = 3 {"a":[1]}',
      '    compute │ error: careful:',
      '    compute │ second line',
    ]);
    expect(lines[lines.indexOf('  → again') + 1]).toBe('    again │ again');
    expect(resumed.stderr.match(/again │/g)).toHaveLength(1);
  }, 60_000);
});
