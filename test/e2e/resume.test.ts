/**
 * Exact resume (issue 9): real `stepthread run` processes are killed with SIGKILL at random points
 * (after a random number of progress lines) across the examples and a 200-item counting loop, each
 * resumed — some by another process that is killed in turn, the last one to the end — and the final
 * state (output, conversation, variables, node records, child threads) must equal a fault-free
 * run's. Then the same after SIGINT, and with the reader of stdout gone.
 *
 * The kill points come from a seeded generator, printed on failure, so a failing one can be re-run.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { runCli } from '../support/cli.ts';
import { countLines, runningCli } from '../support/cli-process.ts';
import { generator } from '../support/seeded-random.ts';
import { runState } from './helpers.ts';
import { countingLoop } from './workflows.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SEED = Number(process.env.STEPTHREAD_RESUME_SEED ?? 20261123);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-resume-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const random = generator(SEED);

const cli = (...args: string[]) => runCli(args, { cwd: dir });
/** The CLI in a child process, reading no data directory from this process's environment. */
const spawnCli = (args: readonly string[], options: { closeStdout?: boolean } = {}) =>
  runningCli(args, { cwd: dir, env: { STEPTHREAD_DATA_DIR: '' }, ...options });

/** Everything about a run that must not depend on faults, read from its data directory. */
async function finalState(dataDir: string, executionId: string): Promise<unknown> {
  const services = await openDataDir(dataDir);
  try {
    const runtime = createLocalRuntime({ clients: createAwsClients(services.target, services.names) });
    return await runState(runtime, executionId);
  } finally {
    await services.close();
  }
}

interface Case {
  name: string;
  file: string;
  input: unknown;
  answers?: unknown;
  /** How many processes are killed, one after the other, before the last resume runs to the end. */
  kills: number;
}

const COUNT_WORKFLOW = countingLoop('counter + 1');

const CASES: Case[] = [
  {
    name: 'fork-join-research',
    file: join(ROOT, 'examples', 'fork-join-research.json'),
    input: { topic: 'our payments API' },
    kills: 4,
  },
  {
    name: 'route-loop',
    file: join(ROOT, 'examples', 'route-loop.json'),
    input: { tickets: ['Printer jams', 'Site down', 'Typo on pricing page', 'Card payments failing'] },
    kills: 4,
  },
  {
    name: 'support-triage',
    file: join(ROOT, 'examples', 'support-triage.json'),
    input: { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } },
    answers: { 'approve-credit': true },
    kills: 4,
  },
  {
    name: 'context-pipeline',
    file: join(ROOT, 'examples', 'context-pipeline.json'),
    input: {},
    kills: 4,
  },
  {
    name: '200-item counting loop',
    file: 'count.json',
    input: { items: Array.from({ length: 200 }, (_, i) => i) },
    kills: 4,
  },
];

function runArgs(c: Case, dataDir: string): string[] {
  return [
    'run',
    resolve(dir, c.file),
    '--input',
    JSON.stringify(c.input),
    ...(c.answers ? ['--answers', JSON.stringify(c.answers)] : []),
    '--data-dir',
    dataDir,
  ];
}

function executionIdIn(stderr: string): string | undefined {
  return /(?:started|resuming) execution (\S+)/.exec(stderr)?.[1];
}

describe('stepthread resume after SIGKILL', () => {
  beforeAll(() => writeFile(join(dir, 'count.json'), JSON.stringify(COUNT_WORKFLOW)));

  for (const c of CASES) {
    it(`${c.name}: ${c.kills} kills at random points, resumed, end as a fault-free run (seed ${SEED})`, async () => {
      const cleanDir = join(dir, `${c.name}-clean`.replaceAll(' ', '-'));
      const clean = await cli(...runArgs(c, cleanDir), '--json');
      expect(clean.code, clean.stderr).toBe(0);
      const cleanResult = JSON.parse(clean.stdout) as RunJsonResult;
      const progress = countLines(clean.stderr);

      const faultyDir = join(dir, `${c.name}-faulty`.replaceAll(' ', '-'));
      let executionId: string | undefined;
      let reached = 0;
      const points: number[] = [];
      for (let kill = 0; kill < c.kills; kill += 1) {
        const process =
          executionId === undefined
            ? spawnCli(runArgs(c, faultyDir))
            : spawnCli(['resume', executionId, '--data-dir', faultyDir]);
        // A resumed process prints the replayed steps' lines again, then goes further.
        const point = reached + 1 + random(Math.max(1, Math.floor(progress / c.kills)));
        points.push(point);
        await process.after(point);
        process.child.kill('SIGKILL');
        await process.exited;
        executionId ??= executionIdIn(process.stderr());
        reached = Math.max(reached, process.lines());
        expect(executionId, process.stderr()).toBeDefined();
      }
      const listed = await cli('runs', '--json', '--data-dir', faultyDir);
      const run = (JSON.parse(listed.stdout) as { executionId: string; status: string }[]).find(
        (entry) => entry.executionId === executionId,
      );
      // Killed before START committed, a run is listed from its local record alone; else INTERRUPTED
      // unless the last process finished before the kill.
      expect(['INTERRUPTED', 'COMPLETED']).toContain(run?.status);

      const resumed = await cli('resume', executionId!, '--json', '--data-dir', faultyDir);
      expect(resumed.code, `kill points ${points.join(', ')}: ${resumed.stderr}`).toBe(0);
      const result = JSON.parse(resumed.stdout) as RunJsonResult;
      expect(result.executionId).toBe(executionId);
      expect(result.status).toBe(cleanResult.status);
      expect(result.output).toEqual(cleanResult.output);
      expect(result.conversation).toEqual(cleanResult.conversation);
      expect(await finalState(faultyDir, executionId!), `kill points ${points.join(', ')}`).toEqual(
        await finalState(cleanDir, cleanResult.executionId),
      );
    }, 240_000);
  }
});

describe('an interrupted or unread run', () => {
  const c = CASES[0]!;

  it('SIGINT says how to resume, and the resumed run ends as a fault-free one', async () => {
    const cleanDir = join(dir, 'sigint-clean');
    const clean = JSON.parse((await cli(...runArgs(c, cleanDir), '--json')).stdout) as RunJsonResult;
    const dataDir = join(dir, 'sigint');
    const process = spawnCli(runArgs(c, dataDir));
    await process.after(6);
    process.child.kill('SIGINT');
    const { code } = await process.exited;
    const executionId = executionIdIn(process.stderr())!;
    expect(code).toBe(130);
    expect(process.stderr()).toContain(
      `resume with: stepthread resume ${executionId} --data-dir ${dataDir}\n`,
    );
    expect(process.stderr()).not.toMatch(/\n\s+at /);
    // `run --thread` on the interrupted thread resumes it, as `resume` does.
    const thread = await threadOf(dataDir, executionId);
    const resumed = await cli('run', c.file, '--thread', thread, '--json', '--data-dir', dataDir);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await finalState(dataDir, executionId)).toEqual(await finalState(cleanDir, clean.executionId));
  }, 120_000);

  it('resume --workflow of another workflow is refused and changes nothing: plain resume then completes', async () => {
    const dataDir = join(dir, 'other-workflow');
    const process = spawnCli(runArgs(c, dataDir));
    await process.after(6);
    process.child.kill('SIGINT');
    expect((await process.exited).code).toBe(130);
    const executionId = executionIdIn(process.stderr())!;
    const other = join(ROOT, 'examples', 'route-loop.json');
    const refused = await cli('resume', executionId, '--workflow', other, '--data-dir', dataDir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`RUN_NOT_RESUMABLE: execution ${executionId} runs workflow`);
    // Refused before the run was recorded again: its workflow is still its own.
    const resumed = await cli('resume', executionId, '--json', '--data-dir', dataDir);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as RunJsonResult).status).toBe('COMPLETED');
  }, 120_000);

  it('a closed stdout neither stops the run nor prints a stack trace', async () => {
    const cleanDir = join(dir, 'epipe-clean');
    const clean = JSON.parse((await cli(...runArgs(c, cleanDir), '--json')).stdout) as RunJsonResult;
    const dataDir = join(dir, 'epipe');
    const process = spawnCli(runArgs(c, dataDir), { closeStdout: true });
    const { code } = await process.exited;
    expect(process.stderr()).not.toMatch(/EPIPE|\n\s+at /);
    expect(code).toBe(0);
    const executionId = executionIdIn(process.stderr())!;
    expect(await finalState(dataDir, executionId)).toEqual(await finalState(cleanDir, clean.executionId));
  }, 120_000);
});

async function threadOf(dataDir: string, executionId: string): Promise<string> {
  const listed = await cli('runs', '--json', '--data-dir', dataDir);
  const run = (JSON.parse(listed.stdout) as { executionId: string; rootThreadId: string }[]).find(
    (entry) => entry.executionId === executionId,
  );
  return run!.rootThreadId;
}
