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
import { isRunnerAlive, type LocalRunRecord, runnerGone } from '../../../functions/local/run-registry.ts';
import type { ExecutionRecord } from '../../../functions/stores/execution-index.ts';

const linux = process.platform === 'linux';

describe('process liveness', () => {
  it('knows this process by its holder text, and a gone pid as gone', () => {
    expect(liveHolderOf(ownHolderText())).toBe(process.pid);
    // Without a stamp, a live pid counts only where the system gives none (else see below).
    expect(liveHolderOf(String(process.pid))).toBe(ownStamp() === undefined ? process.pid : undefined);
    // Pids are bounded by pid_max (≤ 2^22 on Linux).
    expect(liveHolderOf('99999999')).toBeUndefined();
    expect(liveHolderOf('')).toBeUndefined();
    expect(liveHolderOf('not a pid')).toBeUndefined();
  });

  it.runIf(linux)('takes a live pid stamped as another process (another boot) for gone', () => {
    expect(ownStamp()).toMatch(/^[0-9a-f-]+:\d+$/);
    expect(liveHolderOf(`${process.pid} 00000000-another-boot:12345`)).toBeUndefined();
    // A live pid without its stamp was not written by a holder: stale, not waited on.
    expect(liveHolderOf(String(process.pid))).toBeUndefined();
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

  it('runnerGone: a RUNNING execution whose recorded process (its own, or along continuedFrom) is gone', async () => {
    const execution = (executionId: string, extra: Partial<ExecutionRecord> = {}): ExecutionRecord => ({
      executionId,
      rootThreadId: 't-1',
      workflowId: 'w',
      workflowVersion: 1,
      status: 'RUNNING',
      startTime: '2026-01-01T00:00:00.000Z',
      ...extra,
    });
    const runner = (executionId: string, pid: number): LocalRunRecord => ({
      executionId,
      pid,
      host: hostname(),
      workflowId: 'w',
      claimedAt: '2026-01-01T00:00:00.000Z',
      ...(pid === process.pid ? { stamp: ownStamp()! } : {}),
    });
    const first = execution('e-1');
    const second = execution('e-2', { continuedFrom: 'e-1' });
    const lookups = (locals: LocalRunRecord[]) => ({
      localOf: (id: string) => locals.find((local) => local.executionId === id),
      executionOf: (id: string) => [first, second].find((record) => record.executionId === id),
    });
    // Recorded under the execution it started in, by a pid no process has.
    expect(await runnerGone(second, lookups([runner('e-1', 99999999)]))).toBe(true);
    expect(await runnerGone(second, lookups([runner('e-1', process.pid)]))).toBe(false);
    // No local record: not a local run (a deployed one), never INTERRUPTED.
    expect(await runnerGone(second, lookups([]))).toBe(false);
    // Only a RUNNING execution can be interrupted.
    expect(
      await runnerGone(execution('e-1', { status: 'COMPLETED' }), lookups([runner('e-1', 99999999)])),
    ).toBe(false);
  });
});
