/**
 * Builds the sandbox worker for bundled deployments (Lambda): one self-contained ES module,
 * `sandbox-worker.mjs`, with the QuickJS WebAssembly embedded, to be placed next to the handler
 * bundle that imports functions/sandbox (worker-location.ts looks for it there).
 *
 *   npx tsx functions/sandbox/build.ts <outdir>     (e.g. from a NodejsFunction afterBundling hook)
 *
 * esbuild is a build-time dependency: it is imported only when a build runs.
 */

import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUNDLED_WORKER_FILE } from './worker-location.ts';

export interface SandboxWorkerBuildOptions {
  outdir: string;
  /** esbuild target; default `node22` (the oldest Node stepthread supports). */
  target?: string;
  minify?: boolean;
}

const WORKER_ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));
const EMBEDDED_WASM_MODULE = /[\\/]functions[\\/]sandbox[\\/]embedded-wasm\.ts$/;

/** Writes `<outdir>/sandbox-worker.mjs` and returns its path. */
export async function buildSandboxWorker(options: SandboxWorkerBuildOptions): Promise<string> {
  const esbuild = await import('esbuild');
  const outfile = join(options.outdir, BUNDLED_WORKER_FILE);
  const wasmPath = quickjsWasmPath();
  await esbuild.build({
    entryPoints: [WORKER_ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: options.target ?? 'node22',
    minify: options.minify ?? true,
    legalComments: 'none',
    logLevel: 'silent',
    loader: { '.wasm': 'binary' },
    plugins: [
      {
        name: 'stepthread-embed-quickjs-wasm',
        setup(build) {
          // Swap the "no embedded bytes" module for one that imports the .wasm as a Uint8Array.
          build.onLoad({ filter: EMBEDDED_WASM_MODULE }, () => ({
            contents: `import bytes from ${JSON.stringify(wasmPath)};\nexport const embeddedWasm = bytes;\n`,
            loader: 'js',
          }));
        },
      },
    ],
  });
  return outfile;
}

/** The release-sync QuickJS build that quickjs-emscripten's RELEASE_SYNC variant loads. */
function quickjsWasmPath(): string {
  const fromQuickjs = createRequire(createRequire(import.meta.url).resolve('quickjs-emscripten'));
  return fromQuickjs.resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const outdir = process.argv[2];
  if (!outdir) {
    console.error('usage: tsx functions/sandbox/build.ts <outdir>');
    process.exitCode = 2;
  } else {
    console.log(await buildSandboxWorker({ outdir }));
  }
}
