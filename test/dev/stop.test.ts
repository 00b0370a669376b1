/**
 * Stopping `stepthread dev` (Ctrl-C) while a run waits for an answer: the process ends at once, says
 * how to resume, leaves the run INTERRUPTED (its question still open) — in `stepthread runs` and in
 * the API of the next `dev` over the same data — and `resume` finishes it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import { runCli } from '../support/cli.ts';
import { type DevProcess, startDevProcess, startWaitingTriage } from '../support/dev-process.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-dev-stop-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

type Row = { executionId: string; status: string; resume?: string };

describe('stopping stepthread dev', () => {
  it('leaves a run waiting for its answer interrupted, not failed, in runs and the next dev; resume finishes it', async () => {
    const dataDir = join(dir, 'data');
    const resumeCommand = (id: string) => `stepthread resume ${id} --data-dir ${dataDir}`;
    let dev: DevProcess | undefined;
    let executionId = '';
    try {
      dev = await startDevProcess(dataDir, dir);
      executionId = await startWaitingTriage(dev.url);
      expect(await dev.interrupt()).toBe(130);
      expect(dev.stderr()).toContain(
        `1 run(s) were interrupted, resume with:\n  ${resumeCommand(executionId)}`,
      );
    } finally {
      dev?.kill();
    }

    const runs = JSON.parse(
      (await runCli(['runs', '--json', '--data-dir', dataDir], { cwd: dir })).stdout,
    ) as RunsJsonEntry[];
    expect(runs.find((run) => run.executionId === executionId)).toMatchObject({
      status: 'INTERRUPTED',
      resume: resumeCommand(executionId),
    });

    // The next `dev` over the same data shows it so too, beside a run of its own still RUNNING.
    let again: DevProcess | undefined;
    try {
      again = await startDevProcess(dataDir, dir);
      const own = await startWaitingTriage(again.url);
      const rows = (await (await fetch(`${again.url}/api/executions`)).json()) as Row[];
      expect(rows.find((row) => row.executionId === executionId)).toMatchObject({
        status: 'INTERRUPTED',
        resume: resumeCommand(executionId),
      });
      expect(rows.find((row) => row.executionId === own)).toMatchObject({ status: 'RUNNING' });
      expect(rows.find((row) => row.executionId === own)).not.toHaveProperty('resume');
      const page = (await (await fetch(`${again.url}/api/executions/${executionId}`)).json()) as {
        execution: Row;
      };
      expect(page.execution).toMatchObject({ status: 'INTERRUPTED', resume: resumeCommand(executionId) });
      expect(await again.interrupt()).toBe(130);
    } finally {
      again?.kill();
    }

    const resumed = await runCli(
      ['resume', executionId, '--answers', '{"approve-credit": true}', '--json', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    const outcome = JSON.parse(resumed.stdout) as RunJsonResult;
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toMatchObject({ approved: true, category: 'billing' });
  }, 120_000);
});
