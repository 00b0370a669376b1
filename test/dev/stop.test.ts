/**
 * Stopping `stepthread dev` (Ctrl-C) while a run waits for an answer: the process ends at once, says
 * how to resume, leaves the run INTERRUPTED (its question still open) — in `stepthread runs` and in
 * the API of the next `dev` over the same data — and `resume` finishes it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import { runCli } from '../support/cli.ts';
import { runningCli } from '../support/cli-process.ts';
import { type DevProcess, startDevProcess, startWaitingTriage } from '../support/dev-process.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-dev-stop-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

type Row = { executionId: string; status: string; resume?: string };

/** What an execution page says of its root thread and of one node. */
async function threadAndNode(url: string, executionId: string, nodeId: string): Promise<string[]> {
  const page = (await (await fetch(`${url}/api/executions/${executionId}`)).json()) as {
    rootThreadId: string;
    threads: { threadId: string; status: string }[];
    nodeStatus: Record<string, { status: string }>;
  };
  const root = page.threads.find((thread) => thread.threadId === page.rootThreadId);
  return [root?.status ?? 'none', page.nodeStatus[nodeId]?.status ?? 'none'];
}

/** start → a ROUTE → `busy` (a CODE node that takes 60 s), or `idle` by default → end. */
const BUSY = {
  id: 'busy-route',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'pick',
      type: 'ROUTE',
      config: { routes: [{ condition: 'true', targetNodeId: 'busy' }], defaultTargetNodeId: 'idle' },
    },
    {
      id: 'busy',
      type: 'CODE',
      config: { code: 'const t = Date.now(); while (Date.now() - t < 60000) {} return 1', timeoutMs: 90000 },
    },
    { id: 'idle', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'pick' },
    { from: 'busy', to: 'end' },
    { from: 'idle', to: 'end' },
  ],
};

describe('stopping stepthread dev', () => {
  it('leaves a run waiting for its answer interrupted, not failed, in runs and the next dev; resume finishes it', async () => {
    const dataDir = join(dir, 'data');
    // A run stopped at its question resumes with its answer (without a terminal a bare resume stops again).
    const resumeAnswering = (id: string) =>
      `stepthread resume ${id} --answers '{"approve-credit":true}' --data-dir ${dataDir}`;
    let dev: DevProcess | undefined;
    let executionId = '';
    try {
      dev = await startDevProcess(dataDir, dir);
      executionId = await startWaitingTriage(dev.url);
      expect(await dev.interrupt()).toBe(130);
      expect(dev.stderr()).toContain(
        `1 run(s) were interrupted, resume with:\n  ${resumeAnswering(executionId)}`,
      );
    } finally {
      dev?.kill();
    }

    const runs = JSON.parse(
      (await runCli(['runs', '--json', '--data-dir', dataDir], { cwd: dir })).stdout,
    ) as RunsJsonEntry[];
    expect(runs.find((run) => run.executionId === executionId)).toMatchObject({
      status: 'INTERRUPTED',
      resume: resumeAnswering(executionId),
    });

    // The next `dev` over the same data shows it so too, beside a run of its own still RUNNING.
    let again: DevProcess | undefined;
    try {
      again = await startDevProcess(dataDir, dir);
      const own = await startWaitingTriage(again.url);
      const rows = (await (await fetch(`${again.url}/api/executions`)).json()) as Row[];
      expect(rows.find((row) => row.executionId === executionId)).toMatchObject({
        status: 'INTERRUPTED',
        resume: resumeAnswering(executionId),
      });
      expect(rows.find((row) => row.executionId === own)).toMatchObject({ status: 'RUNNING' });
      expect(rows.find((row) => row.executionId === own)).not.toHaveProperty('resume');
      const page = (await (await fetch(`${again.url}/api/executions/${executionId}`)).json()) as {
        execution: Row;
      };
      expect(page.execution).toMatchObject({ status: 'INTERRUPTED', resume: resumeAnswering(executionId) });
      // Its thread and the question it was at are interrupted too, not RUNNING and WAITING as stored;
      // the run of this server still waits.
      expect(await threadAndNode(again.url, executionId, 'approve-credit')).toEqual([
        'INTERRUPTED',
        'INTERRUPTED',
      ]);
      expect(await threadAndNode(again.url, own, 'approve-credit')).toEqual(['RUNNING', 'WAITING']);
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

  it('shows a killed run in the next dev with its thread and the node it was running interrupted', async () => {
    const dataDir = join(dir, 'killed');
    const file = join(dir, 'busy-route.json');
    await writeFile(file, JSON.stringify(BUSY));
    const run = runningCli(['run', file, '--data-dir', dataDir], {
      cwd: dir,
      env: { STEPTHREAD_DATA_DIR: '' },
    });
    await run.after(1, /→ busy/g);
    run.child.kill('SIGKILL');
    await run.exited;
    const executionId = /started execution (\S+)/.exec(run.stderr())![1]!;
    let dev: DevProcess | undefined;
    try {
      dev = await startDevProcess(dataDir, dir);
      expect(await threadAndNode(dev.url, executionId, 'busy')).toEqual(['INTERRUPTED', 'INTERRUPTED']);
      expect(await threadAndNode(dev.url, executionId, 'pick')).toEqual(['INTERRUPTED', 'COMPLETED']);
      expect(await threadAndNode(dev.url, executionId, 'idle')).toEqual(['INTERRUPTED', 'none']);
      // Nothing of this dev was in flight.
      expect(await dev.interrupt()).toBe(0);
    } finally {
      dev?.kill();
    }
  }, 120_000);
});
