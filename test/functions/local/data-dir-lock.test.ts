/**
 * The data directory's lock under races between processes (functions/local/data-dir-lock.ts): never
 * two holders at once, and a stale lock is taken over by exactly one of the processes racing for it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const CONTENDER = join(import.meta.dirname, 'lock-contender.ts');

function contend(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CONTENDER, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      out += text;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`contender exited ${code}: ${out}`)),
    );
  });
}

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'stepthread-lock-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('the data directory lock', () => {
  it('has one holder at a time while 6 processes take and release it 40 times each', async () => {
    const startAt = String(Date.now() + 1500);
    const outputs = await Promise.all(
      Array.from({ length: 6 }, () => contend(dataDir, 'rounds', '40', startAt)),
    );
    for (const out of outputs) expect(out).toBe('done\n');
    // Released and cleaned up: nothing left beside the data.
    expect(await readdir(dataDir)).toEqual([]);
  }, 60_000);

  it('lets exactly one of 6 processes take over a stale lock', async () => {
    // Pids are bounded by pid_max (≤ 2^22 on Linux), so this one cannot be running.
    await writeFile(join(dataDir, 'stepthread.lock'), '99999999');
    const startAt = String(Date.now() + 1500);
    const outputs = await Promise.all(
      Array.from({ length: 6 }, () => contend(dataDir, 'once', '1000', startAt)),
    );
    expect(outputs.filter((out) => out === 'got\n')).toHaveLength(1);
    expect(outputs.filter((out) => out === 'locked\n')).toHaveLength(5);
  }, 60_000);
});
