import type { QuickJSWASMModule } from 'quickjs-emscripten';
import { beforeAll, describe, expect, it } from 'vitest';
import { executeJob } from '../../../functions/sandbox/execute.ts';
import {
  cappedMemory,
  failedHeapResizes,
  failedResizesOf,
  loadQuickJS,
  quickjsLimitBytes,
  wasmCapBytes,
} from '../../../functions/sandbox/quickjs-module.ts';
import type { SandboxJob } from '../../../functions/sandbox/types.ts';

// In-process, without a worker: checks that ordinary failures leave the engine reusable. A leaked
// handle would make freeing the runtime abort, flagging the engine broken and costing a new worker.
let quickjs: QuickJSWASMModule;
beforeAll(async () => {
  quickjs = await loadQuickJS();
});

// A deadline no finishing case reaches even on a starved CPU; the cases that must hit it (an endless
// loop) set a short one of their own, so a busy machine can never turn a result into CODE_TIMEOUT.
const job = (code: string, overrides: Partial<SandboxJob> = {}): SandboxJob => ({
  code,
  inputJson: '{"n":2}',
  timeoutMs: 20_000,
  memoryLimitBytes: 16 * 1048576,
  maxOutputBytes: 1024,
  ...overrides,
});

describe('executeJob', () => {
  it.each([
    ['return input.n + 1', 'ok'],
    ['console.log("x"); return [input]', 'ok'],
    ['while (true) {}', 'CODE_TIMEOUT'],
    ['let s = "x"; while (true) { s += s; s.charCodeAt(s.length - 1); }', 'CODE_MEMORY_LIMIT'],
    ['const f = () => f() + 1; f()', 'CODE_STACK_OVERFLOW'],
    ['throw new Error("boom")', 'CODE_ERROR'],
    ['throw null', 'CODE_ERROR'],
    ['const = ;', 'CODE_ERROR'],
    ['return "x".repeat(5000)', 'CODE_OUTPUT_TOO_LARGE'],
    ['return Symbol("s")', 'CODE_INVALID_OUTPUT'],
    ['return { get bad() { throw new Error("getter") } }', 'CODE_INVALID_OUTPUT'],
  ])('%s → %s, engine still sound', (code, expected) => {
    const endless = expected === 'CODE_TIMEOUT';
    const { outcome, broken } = executeJob(quickjs, job(code, endless ? { timeoutMs: 300 } : {}));
    expect(outcome.ok ? 'ok' : outcome.error.code).toBe(expected);
    expect(broken).toBe(false);
  });

  it('compiles without running when compileOnly: a syntax error is a CODE_ERROR with its line', () => {
    const ran = executeJob(quickjs, job('console.log("ran"); throw new Error("ran")', { compileOnly: true }));
    expect(ran.outcome).toMatchObject({ ok: true, outputJson: 'null', logs: [] });
    const broken = executeJob(quickjs, job('const a = 1;\nreturn a +;', { compileOnly: true }));
    expect(broken.outcome).toMatchObject({ ok: false, error: { code: 'CODE_ERROR', line: 2 } });
  });

  it('names the end of the code, not a line past it, for an unclosed block', () => {
    const { outcome } = executeJob(quickjs, job('if (input) {\n  return 1;'));
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'CODE_ERROR', line: 2, message: expect.stringMatching(/\(at the end of the code\)$/) },
    });
  });

  it('passes undefined input through as undefined', () => {
    const { outcome } = executeJob(quickjs, job('return typeof input', { inputJson: undefined }));
    expect(outcome).toMatchObject({ ok: true, outputJson: '"undefined"' });
  });

  it('returns logs with a failure too', () => {
    const { outcome } = executeJob(quickjs, job('console.info("before", 1); null.x'));
    expect(outcome).toMatchObject({
      ok: false,
      logs: ['info: before 1'],
      error: { code: 'CODE_ERROR', line: 1 },
    });
  });

  it('counts the deadline over the whole run, including promise jobs that outlive the result', () => {
    const code = 'const spin = () => Promise.resolve().then(spin); spin(); return 1';
    const { outcome } = executeJob(quickjs, job(code, { timeoutMs: 50 }));
    expect(outcome).toMatchObject({ ok: false, error: { code: 'CODE_TIMEOUT' } });
  });

  it('reports an engine that throws from the host API as broken', () => {
    const failing = {
      newRuntime() {
        throw Object.assign(new Error('Aborted(OOM)'), { name: 'RuntimeError' });
      },
    } as unknown as QuickJSWASMModule;
    const { outcome, broken } = executeJob(failing, job('return 1'));
    expect(broken).toBe(true);
    expect(outcome).toMatchObject({ ok: false, error: { code: 'CODE_MEMORY_LIMIT' } });
  });
});

/**
 * Out of memory where QuickJS has no room left for its "out of memory" error, so it throws null: in
 * promise jobs (the case issue 14 item 3 names) and synchronously alike. Runs in-process on an
 * instance capped as a worker's is, at a limit where QuickJS's allocation count would run out first
 * (1 MB) and at one where the heap does (8 MB).
 */
describe.each([1, 8])('out of memory without room for the error, %s MB', (limitMb) => {
  const MB = 1048576;
  let capped: QuickJSWASMModule;
  beforeAll(async () => {
    capped = await loadQuickJS(wasmCapBytes(limitMb * MB));
  });
  const run = (code: string) =>
    executeJob(capped, job(code, { timeoutMs: 20_000, memoryLimitBytes: limitMb * MB }));
  const list = 'let l = null; for (;;) l = [l]';
  const smallArrays = 'const a = []; for (;;) a.push([1, 2, 3])';

  it.each([
    ['synchronous', list],
    ['after await null', `await null; ${smallArrays}`],
    ['in an async function after an await', `const f = async () => { await 0; ${list} }; return f()`],
    ['in a .then callback', `return Promise.resolve().then(() => { ${list} })`],
    ["in a rejected promise's handler", `return Promise.reject(new Error('no')).catch(() => { ${list} })`],
    ['in a .finally callback', `return Promise.resolve().finally(() => { ${list} })`],
    ['in a thenable resolved by the result', `return { then(resolve) { ${list} } }`],
    [
      'in a job whose failure leaves the result pending',
      `return new Promise((resolve) => { Promise.resolve().then(() => { ${list}; resolve(1) }) })`,
    ],
  ])('%s ends in CODE_MEMORY_LIMIT, engine still sound', (_name, code) => {
    const { outcome, broken } = run(code);
    expect(outcome.ok ? 'ok' : outcome.error).toEqual({
      code: 'CODE_MEMORY_LIMIT',
      message: `the code exceeded the memory limit of ${limitMb} MB`,
    });
    expect(broken).toBe(false);
  });

  it.each([
    ['throw null', 'uncaught null'],
    ['await null; throw null', 'uncaught null'],
    ['return Promise.reject(null)', 'uncaught null'],
    ['await null; return Promise.reject(null)', 'uncaught null'],
    ['return new Promise((resolve, reject) => reject(null))', 'uncaught null'],
    ['await Promise.resolve(); throw undefined', 'uncaught undefined'],
  ])('%s stays CODE_ERROR on an instance whose heap ran out before', (code, message) => {
    run(`await null; ${smallArrays}`);
    const { outcome, broken } = run(code);
    expect(outcome.ok ? 'ok' : outcome.error).toEqual({ code: 'CODE_ERROR', message });
    expect(broken).toBe(false);
  });
});

describe('the memory checks behind it', () => {
  const MB = 1048576;

  it("gives QuickJS's count-based check at least half the cap, the limit itself from 16 MB on", () => {
    for (const limitMb of [0.5, 1, 8, 15]) {
      const limit = quickjsLimitBytes(limitMb * MB);
      expect(limit).toBeGreaterThan(limitMb * MB);
      expect(limit).toBeGreaterThanOrEqual(wasmCapBytes(limitMb * MB) / 2);
    }
    for (const limitMb of [17, 32, 1024]) expect(quickjsLimitBytes(limitMb * MB)).toBe(limitMb * MB);
  });

  it('counts a failed heap resize only when all three grow attempts fail', () => {
    const memory = cappedMemory(16 * MB + 4 * 65_536);
    // Two over-growths refused, then one that fits: the resize succeeded.
    expect(() => memory.grow(100)).toThrow();
    expect(() => memory.grow(50)).toThrow();
    expect(memory.grow(2)).toBe(256);
    expect(failedResizesOf(memory)).toBe(0);
    expect(() => memory.grow(100)).toThrow();
    expect(() => memory.grow(50)).toThrow();
    expect(() => memory.grow(25)).toThrow();
    expect(failedResizesOf(memory)).toBe(1);
  });

  it('reports no failed resize for an instance loaded without a cap', () => {
    expect(failedHeapResizes(quickjs)).toBe(0);
  });
});
