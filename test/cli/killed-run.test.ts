/**
 * A local run whose process was killed is INTERRUPTED at once, even while the process is a zombie
 * (dead, not yet reaped by its parent): `runs` lists it so (and `resume`, which asks the same
 * question, takes it). Signal 0 still finds a zombie, so before, it stayed RUNNING until reaped.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BIN, cliProcess } from '../support/cli-process.ts';

/** A run that stays at its one model call for a minute. */
const SLOW = {
  id: 'slow',
  version: 1,
  profiles: { default: { provider: 'scripted', responses: ['late'], delayMs: 60_000 } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'ask', type: 'LLM', config: { prompt: 'hello' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'end' },
  ],
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-killed-run-'));
  await writeFile(join(dir, 'slow.json'), JSON.stringify(SLOW));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

it('lists a killed run that is not yet reaped as INTERRUPTED', async () => {
  const dataDir = join(dir, 'data');
  const log = join(dir, 'run.log');
  // The run under a parent that never reaps it (sleep exec'd in place of sh), so once killed it stays a zombie.
  const run = `"${process.execPath}" "${BIN}" run slow.json --data-dir "${dataDir}" 2>"${log}" & echo $!; exec sleep 60`;
  const parent = spawn('sh', ['-c', run], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const pid = Number(
      await new Promise<string>((resolve) => parent.stdout!.once('data', (data) => resolve(String(data)))),
    );
    for (let i = 0; i < 3000 && !/→ ask/.test(await readFile(log, 'utf8').catch(() => '')); i += 1) {
      await sleep(10);
    }
    const started = /started execution (\S+)/.exec(await readFile(log, 'utf8'));
    expect(started, await readFile(log, 'utf8')).not.toBeNull();
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 3000 && !zombie(pid); i += 1) await sleep(10);
    expect(zombie(pid)).toBe(true);
    const runs = await cliProcess(['runs', '--json', '--data-dir', dataDir], { cwd: dir });
    expect(runs.code, runs.stderr).toBe(0);
    const listed = JSON.parse(runs.stdout);
    expect(listed).toMatchObject([{ executionId: started![1], status: 'INTERRUPTED' }]);
    // Its duration ends where it last did anything, its one committed step (start), not at now.
    const inspected = await cliProcess(['inspect', started![1]!, '--json', '--data-dir', dataDir], {
      cwd: dir,
    });
    const [startRun] = JSON.parse(inspected.stdout).threads[0].nodes;
    expect(startRun).toMatchObject({ nodeId: 'start', status: 'COMPLETED' });
    expect(listed[0].lastActivityTime).toBe(startRun.endedAt);
    expect(listed[0].durationMs).toBe(Date.parse(startRun.endedAt) - Date.parse(listed[0].startTime));
  } finally {
    parent.kill();
  }
}, 60_000);
