/**
 * Builds the data directory's store server for the compiled CLI (scripts/build.ts): next to the CLI's
 * bundle, `store-server.cjs` (data-dir-daemon.ts and everything it loads, one CommonJS file) and
 * `data-dir-server-main.js`, its entry, which runs it through V8's code cache
 * (data-dir-server-cached.ts). data-dir-server.ts starts the entry beside it.
 *
 * esbuild is a build-time dependency: it is imported only when a build runs.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface StoreServerBuildOptions {
  outdir: string;
  /** esbuild target; default `node20` (the oldest Node stepthread supports). */
  target?: string;
}

const DAEMON = fileURLToPath(new URL('./data-dir-daemon.ts', import.meta.url));
const CACHED_ENTRY = fileURLToPath(new URL('./data-dir-server-cached.ts', import.meta.url));

export async function buildStoreServer(options: StoreServerBuildOptions): Promise<void> {
  const esbuild = await import('esbuild');
  const common: import('esbuild').BuildOptions = {
    bundle: true,
    platform: 'node',
    target: options.target ?? 'node20',
    minify: true,
    mainFields: ['module', 'main'],
    logLevel: 'warning',
  };
  await esbuild.build({
    ...common,
    entryPoints: [DAEMON],
    outfile: join(options.outdir, 'store-server.cjs'),
    format: 'cjs',
    // dynalite requires its own files by computed names, and its storage is a native addon.
    external: ['dynalite'],
    // import() as require: a script compiled with the vm module has no loader for import().
    supported: { 'dynamic-import': false },
  });
  await esbuild.build({
    ...common,
    entryPoints: [CACHED_ENTRY],
    outfile: join(options.outdir, 'data-dir-server-main.js'),
    format: 'esm',
  });
}
