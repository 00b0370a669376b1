import { afterAll, describe, expect, it } from 'vitest';
import {
  createSandbox,
  type SandboxErrorCode,
  type SandboxResult,
} from '../../../functions/sandbox/index.ts';

// One sandbox (one warm worker) for the whole file: every abuse below must leave it usable.
const sandbox = createSandbox();
afterAll(() => sandbox.close());

function expectOutput(result: SandboxResult, output: unknown): void {
  if (!result.ok) throw new Error(`expected success, got ${result.error.code}: ${result.error.message}`);
  expect(result.output).toEqual(output);
}

function expectFailure(result: SandboxResult, code: SandboxErrorCode): string {
  if (result.ok) throw new Error(`expected ${code}, got output ${JSON.stringify(result.output)}`);
  expect(result.error.code).toBe(code);
  return result.error.message;
}

/** After any failure the same sandbox must still run code. */
async function expectStillWorks(): Promise<void> {
  expectOutput(await sandbox.run({ code: 'return input.n * 2', input: { n: 21 } }), 42);
}

describe('sandbox happy paths', () => {
  it('does arithmetic on the input', async () => {
    const result = await sandbox.run({ code: 'return input.a + input.b * 2', input: { a: 1, b: 20 } });
    expectOutput(result, 41);
    expect(result.ok && result.durationMs).toBeGreaterThan(0);
  });

  it('returns objects and arrays', async () => {
    const code = 'return { items: input.map((x) => ({ x, square: x * x })), count: input.length }';
    expectOutput(await sandbox.run({ code, input: [1, 2, 3] }), {
      items: [
        { x: 1, square: 1 },
        { x: 2, square: 4 },
        { x: 3, square: 9 },
      ],
      count: 3,
    });
  });

  it('awaits promises and async functions', async () => {
    const code = `
      const double = async (n) => n * 2;
      const parts = await Promise.all([double(input), Promise.resolve(1).then((v) => v + 1)]);
      return parts[0] + parts[1];
    `;
    expectOutput(await sandbox.run({ code, input: 20 }), 42);
  });

  it('returns strings, and null for no return value', async () => {
    expectOutput(
      await sandbox.run({ code: 'return "hello " + input.name.toUpperCase()', input: { name: 'ada' } }),
      'hello ADA',
    );
    expectOutput(await sandbox.run({ code: 'const x = 1;', input: null }), null);
  });

  it('records console output, bounded', async () => {
    const result = await sandbox.run({
      code: 'console.log("n =", input, { a: [1] }); console.error("bad"); return 1',
      input: 3,
    });
    expect(result.logs).toEqual(['n = 3 {"a":[1]}', 'error: bad']);
    const flood = await sandbox.run({
      code: 'for (let i = 0; i < 10000; i++) console.log("x".repeat(5000)); return 1',
      input: null,
      // Room for a loaded 2-core machine: this checks the log bound, not speed.
      timeoutMs: 10_000,
    });
    expectOutput(flood, 1);
    // 64 KiB in all, each line cut to 2,000 characters (its ellipsis included), and a count of the rest.
    expect(flood.logs.join('').length).toBe(65_536);
    expect(flood.logs.length).toBe(33);
    expect(flood.logs[0]).toBe(`${'x'.repeat(1999)}…`);
    expect(flood.logsCut).toEqual({ lines: 10_000 - 33, chars: 32 * (5000 - 1999) + (5000 - 1535) });
    // Under the bounds nothing is cut, and no count is reported.
    expect(result.logsCut).toBeUndefined();
  });

  it('keeps what was printed before a throw, with the failure', async () => {
    const result = await sandbox.run({
      code: 'console.log("about to fail"); throw new Error("no")',
      input: null,
    });
    expect(result.ok).toBe(false);
    expect(result.logs).toEqual(['about to fail']);
  });
});

describe('sandbox escapes: no I/O, no host objects', () => {
  it.each([
    ['process', 'return process.env', "'process' is not defined"],
    ['require', 'return require("fs").readFileSync("/etc/passwd", "utf8")', "'require' is not defined"],
    ['fetch', 'return await fetch("http://example.com")', "'fetch' is not defined"],
    ['setTimeout', 'return await new Promise((r) => setTimeout(r, 10))', "'setTimeout' is not defined"],
    ['import()', 'return await import("fs")', "could not load module 'fs'"],
    [
      'Function constructor',
      "return globalThis.constructor.constructor('return process')()",
      "'process' is not defined",
    ],
  ])('%s is a CODE_ERROR', async (_name, code, message) => {
    expect(expectFailure(await sandbox.run({ code, input: null }), 'CODE_ERROR')).toContain(message);
    await expectStillWorks();
  });

  it('keeps guest prototype pollution away from the host and from the next run', async () => {
    const polluting = await sandbox.run({
      code: 'Object.prototype.polluted = 1; Array.prototype.evil = 2; globalThis.leak = 3; return { a: 1 }',
      input: { a: 1 },
    });
    expectOutput(polluting, { a: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(([] as unknown as Record<string, unknown>).evil).toBeUndefined();

    const protoKey = await sandbox.run({
      code: 'return JSON.parse(\'{"__proto__": {"polluted": 1}}\')',
      input: null,
    });
    expect(protoKey.ok).toBe(true);
    if (protoKey.ok) expect(Object.getPrototypeOf(protoKey.output)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    // Each run gets a fresh QuickJS runtime.
    expectOutput(await sandbox.run({ code: 'return [({}).polluted ?? null, typeof leak]', input: null }), [
      null,
      'undefined',
    ]);
  });

  it('reads output through the original JSON.stringify even if the code replaces it', async () => {
    const code = 'JSON.stringify = () => "{\\"forged\\": true}"; return { real: true }';
    expectOutput(await sandbox.run({ code, input: null }), { real: true });
  });
});

describe('sandbox limits: each a coded failure, then the next run works', () => {
  it('stops while(true){} at the deadline', async () => {
    const started = performance.now();
    const message = expectFailure(
      await sandbox.run({ code: 'while (true) {}', input: null, timeoutMs: 200 }),
      'CODE_TIMEOUT',
    );
    expect(message).toContain('200 ms');
    // The loop never ends by itself: any bound proves the deadline stopped it.
    expect(performance.now() - started).toBeLessThan(10_000);
    await expectStillWorks();
  });

  it('stops for(;;){} inside a promise', async () => {
    const code = 'return await new Promise((resolve) => { for (;;) {} })';
    expectFailure(await sandbox.run({ code, input: null, timeoutMs: 200 }), 'CODE_TIMEOUT');
    const inJob = 'await Promise.resolve(); for (;;) {}';
    expectFailure(await sandbox.run({ code: inJob, input: null, timeoutMs: 200 }), 'CODE_TIMEOUT');
    await expectStillWorks();
  });

  it('stops an endless microtask chain', async () => {
    const code = 'const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {})';
    expectFailure(await sandbox.run({ code, input: null, timeoutMs: 200 }), 'CODE_TIMEOUT');
    await expectStillWorks();
  });

  it('stops a memory bomb by array growth', async () => {
    // CODE_MEMORY_LIMIT, not CODE_TIMEOUT: the limit stopped it before the 5 s deadline.
    const code = 'const a = []; while (true) a.push({ i: a.length, s: "item" + a.length })';
    expectFailure(
      await sandbox.run({ code, input: null, timeoutMs: 5000, memoryLimitMb: 16 }),
      'CODE_MEMORY_LIMIT',
    );
    await expectStillWorks();
  });

  it('stops a memory bomb by string doubling', async () => {
    const code = 'let s = "x"; while (true) { s += s; s.charCodeAt(s.length - 1); }';
    const message = expectFailure(
      await sandbox.run({ code, input: null, memoryLimitMb: 16 }),
      'CODE_MEMORY_LIMIT',
    );
    expect(message).toContain('16 MB');
    await expectStillWorks();
  });

  it('stops deep recursion', async () => {
    const code = 'const down = (n) => down(n + 1) + 1; return down(0)';
    expectFailure(await sandbox.run({ code, input: null }), 'CODE_STACK_OVERFLOW');
    await expectStillWorks();
  });

  it('refuses a 50 MB output', async () => {
    const code = 'return "x".repeat(50 * 1024 * 1024)';
    // Within the default 32 MB the string cannot even be built.
    expectFailure(await sandbox.run({ code, input: null }), 'CODE_MEMORY_LIMIT');
    // With room to build it, the output limit refuses it without copying it out.
    const message = expectFailure(
      await sandbox.run({ code, input: null, memoryLimitMb: 256, timeoutMs: 10_000 }),
      'CODE_OUTPUT_TOO_LARGE',
    );
    expect(message).toContain('262144');
    await expectStillWorks();
  });

  it('refuses an output over maxOutputBytes, counted in UTF-8 bytes', async () => {
    expectFailure(
      await sandbox.run({ code: 'return "é".repeat(600)', input: null, maxOutputBytes: 1000 }),
      'CODE_OUTPUT_TOO_LARGE',
    );
    expectOutput(
      await sandbox.run({ code: 'return "é".repeat(400)', input: null, maxOutputBytes: 1000 }),
      'é'.repeat(400),
    );
  });

  it('refuses non-JSON output', async () => {
    expect(
      expectFailure(await sandbox.run({ code: 'return () => 1', input: null }), 'CODE_INVALID_OUTPUT'),
    ).toContain('function');
    const nested = await sandbox.run({ code: 'return { ok: 1, handler() {} }', input: null });
    expect(expectFailure(nested, 'CODE_INVALID_OUTPUT')).toContain('"handler"');
    const cyclic = await sandbox.run({ code: 'const o = {}; o.self = o; return o', input: null });
    expectFailure(cyclic, 'CODE_INVALID_OUTPUT');
    await expectStillWorks();
  });

  it('reports a thrown non-Error value', async () => {
    expect(expectFailure(await sandbox.run({ code: 'throw 42', input: null }), 'CODE_ERROR')).toBe(
      'uncaught 42',
    );
    const object = await sandbox.run({ code: 'throw { reason: "nope" }', input: null });
    expect(expectFailure(object, 'CODE_ERROR')).toBe('uncaught {"reason":"nope"}');
    await expectStillWorks();
  });

  it('reports thrown errors and syntax errors with their line', async () => {
    const thrown = await sandbox.run({
      code: 'const a = 1;\nconst b = 2;\nthrow new RangeError("bad " + a)',
      input: null,
    });
    expect(expectFailure(thrown, 'CODE_ERROR')).toBe('RangeError: bad 1 (line 3)');
    expect(!thrown.ok && thrown.error.line).toBe(3);

    const syntax = await sandbox.run({ code: 'const a = 1;\nconst = ;', input: null });
    expect(expectFailure(syntax, 'CODE_ERROR')).toMatch(/^SyntaxError: .* \(line 2\)$/);
    await expectStillWorks();
  });

  it('reports a promise that can never settle', async () => {
    expect(
      expectFailure(await sandbox.run({ code: 'await new Promise(() => {})', input: null }), 'CODE_ERROR'),
    ).toContain('never settled');
  });

  it('refuses input that is not JSON without running anything', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expectFailure(await sandbox.run({ code: 'return 1', input: cyclic }), 'CODE_INVALID_INPUT');
    expectFailure(await sandbox.run({ code: 'return 1', input: 10n }), 'CODE_INVALID_INPUT');
  });

  it('rejects out-of-range limits as a caller error', async () => {
    await expect(sandbox.run({ code: 'return 1', input: null, timeoutMs: 0 })).rejects.toMatchObject({
      code: 'INVALID_NODE_CONFIG',
    });
    await expect(sandbox.run({ code: 'return 1', input: null, memoryLimitMb: 4096 })).rejects.toMatchObject({
      code: 'INVALID_NODE_CONFIG',
    });
  });
});
