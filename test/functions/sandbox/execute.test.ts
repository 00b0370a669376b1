import type { QuickJSWASMModule } from 'quickjs-emscripten';
import { beforeAll, describe, expect, it } from 'vitest';
import { executeJob } from '../../../functions/sandbox/execute.ts';
import { loadQuickJS } from '../../../functions/sandbox/quickjs-module.ts';
import type { SandboxJob } from '../../../functions/sandbox/types.ts';

// In-process, without a worker: checks that ordinary failures leave the engine reusable. A leaked
// handle would make freeing the runtime abort, flagging the engine broken and costing a new worker.
let quickjs: QuickJSWASMModule;
beforeAll(async () => {
  quickjs = await loadQuickJS();
});

const job = (code: string, overrides: Partial<SandboxJob> = {}): SandboxJob => ({
  code,
  inputJson: '{"n":2}',
  timeoutMs: 150,
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
    const { outcome, broken } = executeJob(quickjs, job(code));
    expect(outcome.ok ? 'ok' : outcome.error.code).toBe(expected);
    expect(broken).toBe(false);
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
