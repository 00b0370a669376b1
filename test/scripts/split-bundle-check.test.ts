/**
 * The CLI bundle is split per import() (scripts/cli-bundle.ts), and esbuild gives a split CommonJS
 * module only a `default` export: `import('ajv')` found no `Ajv` there, and every tool with
 * `parameters` failed in the installed package only. The bundle's import()s reach no CommonJS module
 * (scripts/split-bundle-check.ts, which fails the build otherwise), and a tool's arguments
 * are checked in a split bundle as from the sources.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { checkArguments } from '../../functions/tools/arguments.ts';
import { cliBundleOptions } from '../../scripts/cli-bundle.ts';
import { assertNoCommonJsDynamicImports, commonJsDynamicImports } from '../../scripts/split-bundle-check.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('import() in the split CLI bundle', () => {
  let dir: string;
  beforeAll(async () => {
    // Under node_modules, so the bundle's external packages (dynalite) resolve from it.
    dir = await mkdtemp(join(ROOT, 'node_modules', '.stepthread-split-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('reaches no CommonJS module in the CLI bundle as the build makes it', async () => {
    const result = await build({ ...cliBundleOptions(ROOT, join(dir, 'cli')), minify: false, write: false });
    expect(commonJsDynamicImports(result.metafile)).toEqual([]);
  }, 120_000);

  it('is refused, naming the import, where it reaches a CommonJS package', async () => {
    const entry = join(dir, 'lazy-ajv.ts');
    await writeFile(entry, "export const load = () => import('ajv');\n");
    const result = await build({
      entryPoints: [entry],
      outdir: join(dir, 'lazy-ajv'),
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      metafile: true,
      write: false,
      logLevel: 'error',
    });
    const found = commonJsDynamicImports(result.metafile);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(
      /lazy-ajv\.ts: import\('ajv'\) reaches CommonJS .*node_modules\/ajv\/dist\/ajv\.js$/,
    );
    expect(() => assertNoCommonJsDynamicImports(result.metafile)).toThrow(/functions\/tools\/ajv\.ts/);
  });

  it('checks a tool’s arguments against its parameters in a split bundle', async () => {
    const entry = join(dir, 'arguments.ts');
    await writeFile(
      entry,
      `export { checkArguments } from ${JSON.stringify(join(ROOT, 'functions/tools/arguments.ts'))};\n`,
    );
    await build({
      entryPoints: [entry],
      outdir: join(dir, 'arguments'),
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      mainFields: ['module', 'main'],
      logLevel: 'error',
    });
    const bundled = (await import(pathToFileURL(join(dir, 'arguments', 'arguments.js')).href)) as {
      checkArguments: typeof checkArguments;
    };
    const tenure = {
      description: 'Years as a customer',
      parameters: {
        type: 'object',
        properties: { since: { type: 'integer' }, now: { type: 'integer', default: 2025 } },
        required: ['since'],
      },
      handler: { kind: 'code' as const, code: 'return input.now - input.since' },
    };
    await expect(bundled.checkArguments('tenure', tenure, { since: 2019 })).resolves.toEqual({
      since: 2019,
      now: 2025,
    });
    await expect(bundled.checkArguments('tenure', tenure, { since: 'long ago' })).rejects.toMatchObject({
      code: 'TOOL_ARGUMENTS_INVALID',
      message: 'tool "tenure": invalid arguments: arguments/since must be integer',
    });
  });
});
