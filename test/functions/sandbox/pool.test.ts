import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox, type SandboxResult } from '../../../functions/sandbox/index.ts';

const scriptedWorker = new URL('./fixtures/scripted-worker.mjs', import.meta.url);
const opened: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sandbox) => sandbox.close()));
});

function open(options: Parameters<typeof createSandbox>[0]): Sandbox {
  const sandbox = createSandbox(options);
  opened.push(sandbox);
  return sandbox;
}

/** The scripted worker answers with its thread id, which tells whether a worker was replaced. */
function threadOf(result: SandboxResult): number {
  if (!result.ok) throw new Error(`expected success, got ${result.error.code}: ${result.error.message}`);
  return (result.output as { threadId: number }).threadId;
}

describe('worker pool lifecycle (scripted worker)', () => {
  it('keeps one warm worker across requests', async () => {
    const sandbox = open({ workerUrl: scriptedWorker });
    const first = threadOf(await sandbox.run({ code: 'ok', input: null }));
    expect(threadOf(await sandbox.run({ code: 'ok', input: null }))).toBe(first);
  });

  it('terminates a worker that overruns the deadline plus grace, then starts a fresh one', async () => {
    const sandbox = open({ workerUrl: scriptedWorker, graceMs: 50 });
    const first = threadOf(await sandbox.run({ code: 'ok', input: null }));
    const started = performance.now();
    const hung = await sandbox.run({ code: 'HANG', input: null, timeoutMs: 100 });
    // HANG never returns: any bound proves the pool ended it (the default test timeout is 30 s).
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(hung).toMatchObject({ ok: false, error: { code: 'CODE_TIMEOUT' } });
    expect(threadOf(await sandbox.run({ code: 'ok', input: null }))).not.toBe(first);
  });

  it('reports a worker that dies mid-request as CODE_SANDBOX_CRASHED', async () => {
    const sandbox = open({ workerUrl: scriptedWorker });
    const crashed = await sandbox.run({ code: 'CRASH', input: null });
    expect(crashed).toMatchObject({ ok: false, error: { code: 'CODE_SANDBOX_CRASHED' } });
    expect(!crashed.ok && crashed.error.message).toContain('exited with code 3');
    threadOf(await sandbox.run({ code: 'ok', input: null }));
  });

  it('replaces a worker whose engine reports itself broken, or whose memory grew too far', async () => {
    const sandbox = open({ workerUrl: scriptedWorker, recycleAboveMb: 512 });
    const broken = threadOf(await sandbox.run({ code: 'BROKEN', input: null }));
    const afterBroken = threadOf(await sandbox.run({ code: 'GROWN', input: null }));
    expect(afterBroken).not.toBe(broken);
    expect(threadOf(await sandbox.run({ code: 'ok', input: null }))).not.toBe(afterBroken);
  });

  it('queues requests on one worker and runs them in order', async () => {
    const sandbox = open({ workerUrl: scriptedWorker });
    const results = await Promise.all([1, 2, 3].map(() => sandbox.run({ code: 'ok', input: null })));
    expect(new Set(results.map(threadOf)).size).toBe(1);
  });

  it('fails waiting requests when the worker cannot start', async () => {
    const missing = open({ workerUrl: new URL('./fixtures/no-such-worker.mjs', import.meta.url) });
    const result = await missing.run({ code: 'ok', input: null });
    expect(result).toMatchObject({ ok: false, error: { code: 'CODE_SANDBOX_CRASHED' } });
    expect(!result.ok && result.error.message).toContain('failed to start');

    const silent = open({
      workerUrl: new URL('./fixtures/silent-worker.mjs', import.meta.url),
      startTimeoutMs: 200,
    });
    expect(await silent.run({ code: 'ok', input: null })).toMatchObject({
      ok: false,
      error: { code: 'CODE_SANDBOX_CRASHED', message: expect.stringContaining('did not load within 200 ms') },
    });
  });

  it('ends queued and running requests when closed, and refuses new ones', async () => {
    const sandbox = createSandbox({ workerUrl: scriptedWorker, graceMs: 5000 });
    threadOf(await sandbox.run({ code: 'ok', input: null }));
    const running = sandbox.run({ code: 'HANG', input: null, timeoutMs: 5000 });
    const queued = sandbox.run({ code: 'ok', input: null });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await sandbox.close();
    expect(await running).toMatchObject({ ok: false, error: { code: 'CODE_SANDBOX_CRASHED' } });
    expect(await queued).toMatchObject({ ok: false, error: { code: 'CODE_SANDBOX_CRASHED' } });
    expect(await sandbox.run({ code: 'ok', input: null })).toMatchObject({
      ok: false,
      error: { code: 'CODE_SANDBOX_CRASHED', message: 'the sandbox is closed' },
    });
  });
});

describe('worker pool with the real QuickJS worker', () => {
  it('runs requests in parallel on a pool of workers', async () => {
    const sandbox = open({ workers: 2 });
    const loops = await Promise.all(
      [1, 2].map(() => sandbox.run({ code: 'while (true) {}', input: null, timeoutMs: 400 })),
    );
    expect(loops.map((result) => !result.ok && result.error.code)).toEqual(['CODE_TIMEOUT', 'CODE_TIMEOUT']);
    // Side by side, not one after the other: two busy jobs at once land on two worker threads.
    const scripted = open({ workers: 2, workerUrl: scriptedWorker });
    const threads = await Promise.all(
      [1, 2].map(async () => threadOf(await scripted.run({ code: 'SLOW', input: null }))),
    );
    expect(new Set(threads).size).toBe(2);
  });

  it('does not keep the process alive once idle (runCode without close)', async () => {
    const script = fileURLToPath(new URL('./fixtures/run-once.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      timeout: 10_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, output: [2, 4, 6] });
  });
});
