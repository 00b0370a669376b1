/**
 * One data directory, many commands at once (issue 9): 8 `run` and 8 `inspect` processes started
 * together on one directory all succeed, and every run is there afterwards, intact. Then the
 * coded errors of a data directory that cannot be used.
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { countingLoop } from '../e2e/workflows.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess, countLines, runningCli } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'fork-join-research.json');
/** A small workflow for the many processes: their start-up, not their work, is what is shared. */
const SMALL = {
  id: 'small',
  version: 1,
  variables: [{ name: 'greeting', type: 'string', scope: 'thread', initial: '' }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'greet',
      type: 'VARIABLE',
      config: {
        variableName: 'greeting',
        variableType: 'string',
        expression: 'input.name',
      },
    },
    { id: 'end', type: 'END', config: { output: { greeting: 'hello {{greeting}}' } } },
  ],
  edges: [
    { from: 'start', to: 'greet' },
    { from: 'greet', to: 'end' },
  ],
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-shared-'));
  await writeFile(join(dir, 'small.json'), JSON.stringify(SMALL));
});
afterAll(async () => {
  await chmod(join(dir, 'read-only'), 0o755).catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runCli(args, { cwd: dir });
const spawnCli = (args: readonly string[]) => cliProcess(args, { cwd: dir });

/** A 200-step-long loop, long enough to pull the directory out from under it. */
const COUNT = countingLoop('counter + 1');

describe('a shared data directory', () => {
  it('serves 8 runs and 8 inspects at once, losing nothing', async () => {
    const dataDir = join(dir, 'shared');
    const small = join(dir, 'small.json');
    const first = await cli('run', small, '--input', '{"name":"first"}', '--json', '--data-dir', dataDir);
    expect(first.code, first.stderr).toBe(0);
    const firstId = (JSON.parse(first.stdout) as RunJsonResult).executionId;

    const runs = Array.from({ length: 8 }, (_, i) =>
      spawnCli(['run', small, '--input', JSON.stringify({ name: `n${i}` }), '--json', '--data-dir', dataDir]),
    );
    const inspects = Array.from({ length: 8 }, () =>
      spawnCli(['inspect', firstId, '--json', '--data-dir', dataDir]),
    );
    const ran = await Promise.all(runs);
    const inspected = await Promise.all(inspects);

    for (const [i, result] of ran.entries()) {
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout) as RunJsonResult, result.stdout + result.stderr).toMatchObject({
        status: 'COMPLETED',
        output: { greeting: `hello n${i}` },
      });
    }
    for (const result of inspected) {
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout).executionStatus).toBe('COMPLETED');
    }
    const listed = JSON.parse((await cli('runs', '--json', '--data-dir', dataDir)).stdout) as {
      executionId: string;
      status: string;
    }[];
    const ids = ran.map((result) => (JSON.parse(result.stdout) as RunJsonResult).executionId);
    expect(listed.map((run) => run.executionId).sort()).toEqual([firstId, ...ids].sort());
    expect(listed.every((run) => run.status === 'COMPLETED')).toBe(true);
    const runsJson = async (...args: string[]) =>
      JSON.parse((await cli('runs', ...args, '--json', '--data-dir', dataDir)).stdout) as unknown[];
    expect(await runsJson('--limit', '2')).toEqual(
      listed.slice(0, 2).map((run) => expect.objectContaining(run)),
    );
    expect(await runsJson('--status', 'failed')).toEqual([]);
    expect(await runsJson('--workflow', 'small')).toHaveLength(9);
    expect(await runsJson('--workflow', 'other')).toEqual([]);
    const table = await cli('runs', '--data-dir', dataDir);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^EXECUTION\s+WORKFLOW\s+STATUS\s+STARTED\s+DURATION\s+ROOT THREAD$/,
    );
    // Each run's node records are whole.
    for (const [i, id] of ids.entries()) {
      const report = JSON.parse((await cli('inspect', id, '--json', '--data-dir', dataDir)).stdout);
      expect(report.threads[0].variables).toEqual({ thread: { greeting: `n${i}` } });
      expect(report.threads[0].nodes.map((node: { nodeId: string }) => node.nodeId)).toEqual([
        'start',
        'greet',
        'end',
      ]);
    }
  }, 180_000);
});

describe('a run waiting at a prompt', () => {
  it('leaves the directory to pending, inspect and another run meanwhile, then completes', async () => {
    const dataDir = join(dir, 'prompt');
    const triage = join(ROOT, 'examples', 'support-triage.json');
    const ticket = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };
    let asked: () => void = () => {};
    const question = new Promise<void>((resolve) => {
      asked = resolve;
    });
    let answer: (line: string) => void = () => {};
    let stdout = '';
    const io: CliIo = {
      stdout: (text) => {
        stdout += text;
      },
      stderr: () => {},
      readFile: (path) => readFile(path, 'utf8'),
      env: {},
      cwd: dir,
      prompt: () => {
        asked();
        return new Promise((resolve) => {
          answer = resolve;
        });
      },
    };
    const waiting = main(
      [
        'node',
        'stepthread',
        'run',
        triage,
        '--input',
        JSON.stringify(ticket),
        '--json',
        '--data-dir',
        dataDir,
      ],
      io,
    );
    await question;
    // While the question is open: other processes read and run on the same directory.
    const [pending, other] = await Promise.all([
      spawnCli(['pending', '--json', '--data-dir', dataDir]),
      spawnCli([
        'run',
        join(dir, 'small.json'),
        '--input',
        '{"name":"meanwhile"}',
        '--json',
        '--data-dir',
        dataDir,
      ]),
    ]);
    expect(pending.code, pending.stderr).toBe(0);
    const [open] = JSON.parse(pending.stdout) as { nodeId: string; threadId: string }[];
    expect(open?.nodeId).toBe('approve-credit');
    expect(other.code, other.stderr).toBe(0);
    const inspected = await spawnCli(['inspect', open!.threadId, '--json', '--data-dir', dataDir]);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(JSON.parse(inspected.stdout).threads[0].waitingFor[0].nodeId).toBe('approve-credit');

    answer('y');
    expect(await waiting).toBe(0);
    expect(JSON.parse(stdout) as RunJsonResult).toMatchObject({ status: 'COMPLETED' });
  }, 180_000);
});

describe('stepthread respond to a local run', () => {
  it('answers the run waiting at its prompt in another process, which stops asking and completes', async () => {
    const dataDir = join(dir, 'respond');
    const triage = join(ROOT, 'examples', 'support-triage.json');
    const ticket = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };
    let asked: (signal: AbortSignal | undefined) => void = () => {};
    const question = new Promise<AbortSignal | undefined>((resolve) => {
      asked = resolve;
    });
    let stdout = '';
    let stderr = '';
    const io: CliIo = {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      readFile: (path) => readFile(path, 'utf8'),
      env: {},
      cwd: dir,
      // Nobody types: the prompt ends only when its signal aborts.
      prompt: (_question, signal) => {
        asked(signal);
        return new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      },
    };
    const waiting = main(
      [
        'node',
        'stepthread',
        'run',
        triage,
        '--input',
        JSON.stringify(ticket),
        '--json',
        '--data-dir',
        dataDir,
      ],
      io,
    );
    const signal = await question;
    const pending = await spawnCli(['pending', '--data-dir', dataDir]);
    const hint = /stepthread respond (\S+) --approve/.exec(pending.stdout);
    expect(hint, pending.stdout).not.toBeNull();
    const responded = await spawnCli(['respond', hint![1]!, '--approve', '--data-dir', dataDir]);
    expect(responded.code, responded.stderr).toBe(0);
    expect(responded.stdout).toBe(`approved ${hint![1]}: the run continues\n`);
    expect(await waiting, stderr).toBe(0);
    expect(signal?.aborted).toBe(true);
    expect(stderr).toContain('answered by stepthread respond');
    const result = JSON.parse(stdout) as RunJsonResult;
    expect(result.status).toBe('COMPLETED');
    expect(result.conversation.map((message) => message.content)).toContain('Approved.');
  }, 60_000);
});

describe('a data directory that cannot be used', () => {
  it('read commands on a directory that does not exist say so and create nothing', async () => {
    const missing = join(dir, 'missing');
    for (const args of [['runs'], ['inspect', 'some-id'], ['resume', 'some-id']]) {
      const result = await cli(...args, '--data-dir', missing);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('LOCAL_DATA_NOT_FOUND');
      expect(result.stderr).toContain(missing);
    }
    await expect(readdir(missing)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a data directory path that is a file is LOCAL_DATA_UNWRITABLE, naming it', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a directory');
    const result = await cli('run', EXAMPLE, '--data-dir', file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('LOCAL_DATA_UNWRITABLE');
    expect(result.stderr).toContain(file);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('an unknown execution id is not found', async () => {
    const dataDir = join(dir, 'shared');
    const result = await cli('inspect', 'no-such-execution', '--data-dir', dataDir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/not found/);
  });

  it.skipIf(process.getuid?.() === 0)(
    'a read-only directory is LOCAL_DATA_UNWRITABLE, naming it',
    async () => {
      const readOnly = join(dir, 'read-only');
      await mkdir(readOnly);
      await chmod(readOnly, 0o555);
      const result = await cli('run', EXAMPLE, '--data-dir', readOnly);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('LOCAL_DATA_UNWRITABLE');
      expect(result.stderr).toContain(readOnly);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    },
  );

  it('a directory removed mid-run is LOCAL_DATA_GONE, naming it, without a stack trace', async () => {
    const dataDir = join(dir, 'removed');
    const count = join(dir, 'count.json');
    await writeFile(count, JSON.stringify(COUNT));
    const items = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => i) });
    const run = runningCli(['run', count, '--input', items, '--data-dir', dataDir], { cwd: dir });
    const inc = /✓ inc/g;
    await run.after(5, inc);
    // Removed only if the run got that far (else it ended first and the test fails).
    const removed = countLines(run.stderr(), inc) >= 5;
    if (removed) await rm(dataDir, { recursive: true, force: true });
    const { code } = await run.exited;
    const stderr = run.stderr();
    expect(removed).toBe(true);
    expect(code).toBe(1);
    expect(stderr).toContain('LOCAL_DATA_GONE');
    expect(stderr).toContain(dataDir);
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it('a corrupted database is LOCAL_DATA_CORRUPT, naming it and what to do', async () => {
    const dataDir = join(dir, 'corrupt');
    expect((await cli('run', EXAMPLE, '--data-dir', dataDir)).code).toBe(0);
    await waitForServerExit(dataDir);
    const database = join(dataDir, 'dynamodb');
    for (const name of await readdir(database)) {
      if (/^(CURRENT|MANIFEST)/.test(name)) await writeFile(join(database, name), 'garbage\n');
    }
    const result = await cli('runs', '--data-dir', dataDir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('LOCAL_DATA_CORRUPT');
    expect(result.stderr).toContain(dataDir);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});

/** The background server leaves when idle; its file goes with it. */
async function waitForServerExit(dataDir: string): Promise<void> {
  for (let i = 0; i < 400; i += 1) {
    const names = await readdir(dataDir);
    if (!names.includes('stepthread.server.json') && !names.includes('stepthread.lock')) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the store server of ${dataDir} did not exit`);
}
