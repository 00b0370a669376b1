import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSandboxWorker } from '../../../functions/sandbox/build.ts';
import { BUNDLED_WORKER_FILE } from '../../../functions/sandbox/index.ts';

const sandboxIndex = fileURLToPath(new URL('../../../functions/sandbox/index.ts', import.meta.url));

// A handler-like entry: what a Lambda bundle does with the sandbox, printed for the test to read.
const entrySource = `
import { runCode } from ${JSON.stringify(sandboxIndex)};
(async () => {
  const sum = await runCode({ code: 'return input.reduce((a, b) => a + b, 0)', input: [1, 2, 39] });
  const loop = await runCode({ code: 'while (true) {}', input: null, timeoutMs: 100 });
  const breakout = await runCode({ code: "return globalThis.constructor.constructor('return process')()", input: null });
  console.log(JSON.stringify({ sum, loop, breakout }));
})();
`;

let dir: string;
beforeAll(async () => {
  // Under the OS temp dir, outside the repository: no node_modules can be found from here.
  dir = await mkdtemp(join(tmpdir(), 'stepthread-sandbox-bundle-'));
  await writeFile(join(dir, 'entry.ts'), entrySource);
  await buildSandboxWorker({ outdir: dir });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the sandbox bundled by esbuild', () => {
  it.each([
    ['esm', 'handler.mjs'],
    ['cjs', 'handler.cjs'],
  ] as const)(
    'runs scripts from a %s handler bundle with only sandbox-worker.mjs beside it',
    async (format, file) => {
      await build({
        entryPoints: [join(dir, 'entry.ts')],
        outfile: join(dir, file),
        bundle: true,
        platform: 'node',
        format,
        target: 'node22',
        logLevel: 'silent',
      });
      expect((await readdir(dir)).sort()).toEqual(expect.arrayContaining([BUNDLED_WORKER_FILE, file]));

      const { stdout } = await promisify(execFile)(process.execPath, [join(dir, file)], {
        cwd: dir,
        timeout: 10_000,
      });
      const { sum, loop, breakout } = JSON.parse(stdout);
      expect(sum).toMatchObject({ ok: true, output: 42 });
      expect(loop).toMatchObject({ ok: false, error: { code: 'CODE_TIMEOUT' } });
      expect(breakout).toMatchObject({ ok: false, error: { code: 'CODE_ERROR' } });
    },
  );
});
