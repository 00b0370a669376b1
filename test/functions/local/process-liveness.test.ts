/**
 * What a lock file or a run record names is alive only while that very process runs: a pid that
 * another process has taken since (after a reboot, or a long time) is not the holder.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  isAlive,
  isSameProcessAlive,
  liveHolderOf,
  ownHolderText,
  ownStamp,
} from '../../../functions/local/process-liveness.ts';
import { isRunnerAlive } from '../../../functions/local/run-registry.ts';

const linux = process.platform === 'linux';

describe('process liveness', () => {
  it('knows this process by its holder text, and a gone pid as gone', () => {
    expect(liveHolderOf(ownHolderText())).toBe(process.pid);
    expect(liveHolderOf(String(process.pid))).toBe(process.pid);
    // Pids are bounded by pid_max (≤ 2^22 on Linux).
    expect(liveHolderOf('99999999')).toBeUndefined();
    expect(liveHolderOf('')).toBeUndefined();
    expect(liveHolderOf('not a pid')).toBeUndefined();
  });

  it.runIf(linux)('takes a live pid stamped as another process (another boot) for gone', () => {
    expect(ownStamp()).toMatch(/^[0-9a-f-]+:\d+$/);
    expect(liveHolderOf(`${process.pid} 00000000-another-boot:12345`)).toBeUndefined();
    expect(isSameProcessAlive(process.pid, ownStamp())).toBe(true);
    expect(isRunnerAlive({ pid: process.pid, host: hostname(), stamp: '00000000-another-boot:1' })).toBe(
      false,
    );
    expect(isRunnerAlive({ pid: process.pid, host: hostname() })).toBe(true);
  });

  it.runIf(linux)('takes a killed child not yet reaped (a zombie) for gone', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('spawn', resolve));
    const pid = child.pid!;
    expect(isAlive(pid)).toBe(true);
    // Killed, but this process (its parent) reaps it only when its event loop gets to it.
    process.kill(pid, 'SIGKILL');
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && isAlive(pid)) {
      // Busy-wait: yielding would let this process reap the child, which is what is not tested.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
    expect(isAlive(pid)).toBe(false);
  });
});
