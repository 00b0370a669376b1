/**
 * How scripts/build.ts bundles the CLI the `stepthread` bin runs (dist/bin/): one esbuild bundle with
 * its dependencies inlined, split per command (cli/main.ts imports each command lazily). Loading a
 * few large files costs far less than resolving and compiling some thousand small ones. dynalite
 * stays a package: it requires its own files by computed names, and its storage is a native addon.
 */
import { join } from 'node:path';
import type { BuildOptions } from 'esbuild';
import { localRunnerStubs } from '../functions/local/state-machine-build.ts';
import { ESM_REQUIRE_BANNER } from '../infra/bundling.ts';

export function cliBundleOptions(root: string, outdir: string) {
  return {
    entryPoints: { main: join(root, 'cli', 'main.ts') },
    outdir,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    mainFields: ['module', 'main'],
    external: ['dynalite', 'esbuild'],
    // What aws-local-stepfunctions imports for validation and real Lambda calls, never used here.
    plugins: [localRunnerStubs()],
    banner: { js: ESM_REQUIRE_BANNER },
    logLevel: 'error',
    // For assertNoCommonJsDynamicImports (scripts/split-bundle-check.ts).
    metafile: true,
  } satisfies BuildOptions;
}
