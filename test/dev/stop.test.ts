/**
 * Stopping `stepthread dev` (Ctrl-C) while a run waits for an answer: the process ends at once, says
 * how to resume, leaves the run INTERRUPTED (its question still open), and `resume` finishes it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import { runCli } from '../support/cli.ts';
import { BIN, envWithoutTarget } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-dev-stop-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('stopping stepthread dev', () => {
  it('leaves a run waiting for its answer interrupted, not failed; resume finishes it', async () => {
    const dataDir = join(dir, 'data');
    const child = spawn(
      process.execPath,
      [BIN, 'dev', join(ROOT, 'examples'), '--port', '0', '--data-dir', dataDir],
      {
        cwd: dir,
        env: envWithoutTarget(),
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    let started = { executionId: '' };
    try {
      await expect.poll(() => /console at (http:\S+)/.exec(stdout)?.[1], { timeout: 30_000 }).toBeDefined();
      const url = /console at (http:\S+)/.exec(stdout)![1]!;
      started = (await (
        await fetch(`${url}/api/workflows/support-triage/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            input: { ticket: { subject: 'Charged twice', customer: 'Ada', monthlyFee: 30 } },
          }),
        })
      ).json()) as { executionId: string };
      const waiting = async () =>
        (
          (await (await fetch(`${url}/api/executions/${started.executionId}`)).json()) as {
            pending?: unknown[];
          }
        ).pending?.length ?? 0;
      await expect.poll(waiting, { timeout: 30_000 }).toBe(1);

      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stderr).toContain(
        `1 run(s) were interrupted, resume with:\n  stepthread resume ${started.executionId} --data-dir ${dataDir}`,
      );
    } finally {
      child.kill('SIGKILL');
    }

    const runs = JSON.parse(
      (await runCli(['runs', '--json', '--data-dir', dataDir], { cwd: dir })).stdout,
    ) as RunsJsonEntry[];
    expect(runs.find((run) => run.executionId === started.executionId)).toMatchObject({
      status: 'INTERRUPTED',
      resume: `stepthread resume ${started.executionId} --data-dir ${dataDir}`,
    });
    const resumed = await runCli(
      [
        'resume',
        started.executionId,
        '--answers',
        '{"approve-credit": true}',
        '--json',
        '--data-dir',
        dataDir,
      ],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    const outcome = JSON.parse(resumed.stdout) as RunJsonResult;
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toMatchObject({ approved: true, category: 'billing' });
  }, 120_000);
});
