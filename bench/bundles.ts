/**
 * Bundle bench: builds every handler entry exactly as the CDK NodejsFunction does (settings from
 * infra/bundling.ts), then prints each bundle's size and its module-init time, measured by importing the
 * bundle in a fresh Node process (median of several runs). Targets: ≤ 1 MB and ≤ 150 ms per handler.
 *
 *   npx tsx bench/bundles.ts [--runs 5] [--json]
 *
 * Exits non-zero when a bundle misses a target, so CI can hold the line.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type { NodeType } from '../engine/model/schema.ts';
import { ESBUILD_TARGET, ESM_REQUIRE_BANNER, EXTERNAL_MODULES } from '../infra/bundling.ts';
import { availableHandlerTypes, handlerEntryPath, PROJECT_ROOT } from '../infra/handler-registry.ts';

const MAX_BYTES = 1024 * 1024;
const MAX_INIT_MS = 150;

export interface BundleMeasurement {
  type: NodeType;
  bytes: number;
  /** Importing the bundle, the external AWS SDK packages it loads included. */
  initMs: number;
  /** initMs minus the time to import those SDK packages alone (the bundle's own code). */
  ownInitMs: number;
}

/** External packages a bundle imports at load time (measured alone as the SDK baseline). */
const SDK_PACKAGES = [
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/lib-dynamodb',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-sfn',
];

// Inside node_modules so the bundles resolve the external @aws-sdk/* packages, as the Lambda runtime does.
const OUT_DIR = join(PROJECT_ROOT, 'node_modules', '.cache', 'stepthread-bundles');

export async function bundleHandler(type: NodeType): Promise<string> {
  const outfile = join(OUT_DIR, type.toLowerCase(), 'index.mjs');
  await build({
    entryPoints: [handlerEntryPath(type)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: ESBUILD_TARGET,
    minify: true,
    sourcemap: false,
    mainFields: ['module', 'main'],
    external: [...EXTERNAL_MODULES],
    banner: { js: ESM_REQUIRE_BANNER },
    logLevel: 'error',
  });
  return outfile;
}

/** Milliseconds to import the bundle (module init, dependencies included) in a fresh process. */
export function measureInit(specifiers: readonly string[]): number {
  const imports = specifiers.map((s) => `await import(${JSON.stringify(s)});`).join(' ');
  const script = `const t = performance.now(); ${imports} process.stdout.write(String(performance.now() - t));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    cwd: PROJECT_ROOT,
    env: { ...process.env, STEPTHREAD_TARGET: 'aws', AWS_REGION: 'us-east-1' },
  });
  return Number(out);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function measureBundles(runs = 5): Promise<BundleMeasurement[]> {
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const sdk = median(Array.from({ length: runs }, () => measureInit(SDK_PACKAGES)));
  const results: BundleMeasurement[] = [];
  for (const type of availableHandlerTypes()) {
    const file = await bundleHandler(type);
    const initMs = median(Array.from({ length: runs }, () => measureInit([pathToFileURL(file).href])));
    results.push({ type, bytes: statSync(file).size, initMs, ownInitMs: Math.max(0, initMs - sdk) });
  }
  return results;
}

function formatTable(results: readonly BundleMeasurement[]): string {
  const rows = results.map(({ type, bytes, initMs, ownInitMs }) => {
    const ok = bytes <= MAX_BYTES && initMs <= MAX_INIT_MS ? 'ok' : 'OVER';
    return `${type.padEnd(18)} ${(bytes / 1024).toFixed(1).padStart(9)} KiB ${initMs.toFixed(1).padStart(8)} ms ${ownInitMs.toFixed(1).padStart(8)} ms  ${ok}`;
  });
  const header = `${'handler'.padEnd(18)} ${'bundle'.padStart(13)} ${'init'.padStart(11)} ${'own init'.padStart(11)}`;
  return [header, ...rows].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const runsAt = args.indexOf('--runs');
  const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 5;
  const results = await measureBundles(runs);
  if (args.includes('--json')) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  else {
    process.stdout.write(
      `${formatTable(results)}\n\nNode ${process.version}, esbuild target ${ESBUILD_TARGET}, median of ${runs} fresh-process imports; @aws-sdk/* external (provided by the Lambda runtime, imported here from node_modules).\n`,
    );
  }
  const missing = results.filter((r) => r.bytes > MAX_BYTES || r.initMs > MAX_INIT_MS);
  if (missing.length > 0) {
    process.stderr.write(
      `over target (≤ 1 MiB, ≤ ${MAX_INIT_MS} ms): ${missing.map((r) => r.type).join(', ')}\n`,
    );
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
