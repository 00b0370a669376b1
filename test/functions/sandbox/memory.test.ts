/**
 * CODE memory is capped for real (issue 14 item 3): each allocation pattern that passed QuickJS's own
 * limit (typed arrays, ArrayBuffer, `new Array(n).fill()`, long strings, and any of them inside promise
 * jobs) ends with CODE_MEMORY_LIMIT while this process grows by at most the limit plus a small
 * constant; so does running out in a promise job with no room left for QuickJS's own error (it
 * throws null then), while code's own `throw null` stays CODE_ERROR; and the pool runs jobs
 * concurrently up to a worker count bounded by its memory budget. A regular expression whose
 * backtracking runs out of memory is CODE_MEMORY_LIMIT too (issue 31 item 7).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSandbox, type SandboxResult } from '../../../functions/sandbox/index.ts';
import { WorkerPool } from '../../../functions/sandbox/pool.ts';
import { ENGINE_OVERHEAD_BYTES } from '../../../functions/sandbox/quickjs-module.ts';
import type { SandboxJob } from '../../../functions/sandbox/types.ts';

const MB = 1048576;
const LIMIT_MB = 8;
/** Slack for what this process allocates besides the guest (the result, the test's own garbage). */
const SLACK_BYTES = 48 * MB;

const sandbox = createSandbox();
afterAll(() => sandbox.close());

const PATTERNS: Record<string, string> = {
  'typed arrays': 'const a = []; for (let i = 0; i < 2000; i++) a.push(new Uint8Array(MB)); return a.length',
  ArrayBuffer: 'const a = []; for (let i = 0; i < 2000; i++) a.push(new ArrayBuffer(MB)); return a.length',
  'new Array(n).fill()':
    'const a = []; for (let i = 0; i < 200; i++) a.push(new Array(1000000).fill(i)); return a.length',
  strings: 'const a = []; for (let i = 0; i < 2000; i++) a.push(String(i).repeat(MB)); return a.length',
  'typed arrays in a promise job':
    'await null; const a = []; for (let i = 0; i < 2000; i++) a.push(new Uint8Array(MB)); return a.length',
  'strings in a promise job':
    'await Promise.resolve(); const a = []; for (let i = 0; i < 2000; i++) a.push(String(i).repeat(MB)); return 1',
};

/** Many small objects fill the heap to the last bytes, so QuickJS cannot allocate its error. */
const LIST = 'let l = null; for (;;) l = [l]';
const SMALL_ARRAYS = 'const a = []; for (;;) a.push([1, 2, 3])';
const PROMISE_JOB_PATTERNS: Record<string, string> = {
  'filled arrays after await null': 'await null; const a = []; for (;;) a.push(new Array(1e5).fill(1))',
  'small arrays after await null': `await null; ${SMALL_ARRAYS}`,
  'a .then callback': `return Promise.resolve().then(() => { ${LIST} })`,
  'an async function after an await': `const f = async () => { await 0; ${LIST} }; return f()`,
  "a rejected promise's handler": `return Promise.reject(new Error('no')).catch(() => { ${LIST} })`,
  'a .finally callback': `return Promise.resolve().finally(() => { ${LIST} })`,
  // QuickJS has no queueMicrotask; a job that dies leaving the result pending is the nearest case.
  'a job the result waits on': `return new Promise((resolve) => { Promise.resolve().then(() => { ${LIST}; resolve(1) }) })`,
};

function codeOf(result: SandboxResult): string {
  return result.ok ? 'ok' : result.error.code;
}

describe('the CODE memory limit', () => {
  it(`stops every allocation pattern at ${LIMIT_MB} MB with CODE_MEMORY_LIMIT, the process growing by at most the limit plus a constant`, async () => {
    // Warm: the worker and its QuickJS instance for this limit exist before measuring.
    expect(codeOf(await sandbox.run({ code: 'return 1', input: null, memoryLimitMb: LIMIT_MB }))).toBe('ok');
    for (const [name, body] of Object.entries(PATTERNS)) {
      const before = process.memoryUsage();
      const result = await sandbox.run({
        code: `const MB = ${MB}; ${body}`,
        input: null,
        memoryLimitMb: LIMIT_MB,
        timeoutMs: 30_000,
      });
      const after = process.memoryUsage();
      expect({ name, code: codeOf(result) }).toEqual({ name, code: 'CODE_MEMORY_LIMIT' });
      const bound = LIMIT_MB * MB + ENGINE_OVERHEAD_BYTES + SLACK_BYTES;
      expect({ name, rss: after.rss - before.rss <= bound }).toEqual({ name, rss: true });
      expect({ name, external: after.external - before.external <= bound }).toEqual({ name, external: true });
    }
    // The worker still works afterwards.
    expect(await sandbox.run({ code: 'return input + 1', input: 1, memoryLimitMb: LIMIT_MB })).toMatchObject({
      ok: true,
      output: 2,
    });
  }, 120_000);

  it("ends a regular expression whose backtracking fills the heap with CODE_MEMORY_LIMIT, as QuickJS's own out-of-memory", async () => {
    for (const code of [
      "return /(a|b)*c/.test('a'.repeat(2000000))",
      "return /^(?:a(?=a|$))*$/.test('a'.repeat(4000000))",
    ]) {
      const result = await sandbox.run({ code, input: null, memoryLimitMb: LIMIT_MB, timeoutMs: 30_000 });
      expect({ code, error: codeOf(result) }).toEqual({ code, error: 'CODE_MEMORY_LIMIT' });
    }
  }, 120_000);
});

describe('out of memory in promise jobs', () => {
  it(`ends each pattern at ${LIMIT_MB} MB with the same CODE_MEMORY_LIMIT as synchronous code, the process growing by at most the limit plus a constant`, async () => {
    expect(codeOf(await sandbox.run({ code: 'return 1', input: null, memoryLimitMb: LIMIT_MB }))).toBe('ok');
    const expected = {
      code: 'CODE_MEMORY_LIMIT',
      message: `the code exceeded the memory limit of ${LIMIT_MB} MB`,
    };
    const synchronous = await sandbox.run({
      code: LIST,
      input: null,
      memoryLimitMb: LIMIT_MB,
      timeoutMs: 30_000,
    });
    expect(synchronous.ok ? 'ok' : synchronous.error).toEqual(expected);
    for (const [name, code] of Object.entries(PROMISE_JOB_PATTERNS)) {
      const before = process.memoryUsage();
      const result = await sandbox.run({ code, input: null, memoryLimitMb: LIMIT_MB, timeoutMs: 30_000 });
      const after = process.memoryUsage();
      expect({ name, error: result.ok ? 'ok' : result.error }).toEqual({ name, error: expected });
      const bound = LIMIT_MB * MB + ENGINE_OVERHEAD_BYTES + SLACK_BYTES;
      expect({ name, rss: after.rss - before.rss <= bound }).toEqual({ name, rss: true });
      expect({ name, external: after.external - before.external <= bound }).toEqual({ name, external: true });
    }
  }, 120_000);

  it('leaves code that throws or rejects with null or undefined a CODE_ERROR, on a worker whose heap ran out', async () => {
    for (const [code, message] of [
      ['throw null', 'uncaught null'],
      ['await null; throw null', 'uncaught null'],
      ['return Promise.reject(null)', 'uncaught null'],
      ['return Promise.resolve().then(() => Promise.reject(null))', 'uncaught null'],
      ['await 0; throw undefined', 'uncaught undefined'],
    ] as const) {
      const exhausted = await sandbox.run({
        code: `await null; ${SMALL_ARRAYS}`,
        input: null,
        memoryLimitMb: LIMIT_MB,
        timeoutMs: 30_000,
      });
      expect(codeOf(exhausted)).toBe('CODE_MEMORY_LIMIT');
      const result = await sandbox.run({ code, input: null, memoryLimitMb: LIMIT_MB });
      expect({ code, error: result.ok ? 'ok' : result.error }).toEqual({
        code,
        error: { code: 'CODE_ERROR', message },
      });
    }
  }, 120_000);
});

describe('concurrency bounded by memory', () => {
  const scriptedWorker = new URL('./fixtures/scripted-worker.mjs', import.meta.url);
  const job = (memoryLimitMb: number): SandboxJob => ({
    code: 'ok',
    inputJson: 'null',
    timeoutMs: 10_000,
    memoryLimitBytes: memoryLimitMb * MB,
    maxOutputBytes: 1024,
  });

  it('starts a worker per waiting job up to what the memory budget holds', async () => {
    // Each 32 MB job reserves 32 + 16 MB: 200 MB holds 4 workers, 100 MB holds 2.
    for (const [budgetMb, expected] of [
      [200, 4],
      [100, 2],
      [10, 1],
    ] as const) {
      const pool = new WorkerPool({ workerUrl: scriptedWorker, workers: 8, memoryBudgetMb: budgetMb });
      const results = Array.from({ length: 6 }, () => pool.submit(job(32)));
      expect({ budgetMb, workers: pool.workerCount }).toEqual({ budgetMb, workers: expected });
      expect(pool.reservedBytes).toBeLessThanOrEqual(Math.max(budgetMb * MB, 48 * MB));
      expect((await Promise.all(results)).every((result) => result.ok)).toBe(true);
      await pool.close();
    }
  }, 60_000);
});
