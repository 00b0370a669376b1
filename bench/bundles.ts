/**
 * Bundle bench: builds every handler entry exactly as the CDK NodejsFunction does (settings from
 * infra/bundling.ts), then prints each bundle's size and its module-init time, measured by importing the
 * bundle in a fresh Node process (median of several runs). Targets: ≤ 1 MiB and ≤ 150 ms init per
 * handler, the AWS SDK packages the init loads included.
 *
 * The SDK is external (the Lambda runtime provides it), so the bench also finds which @aws-sdk packages
 * each init actually loaded (a handler loads S3 or Step Functions only on first use when its node does
 * not always need them) and times importing just those: "sdk" is that cost, "own" the rest.
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
import { ESBUILD_ALIASES, ESBUILD_TARGET, ESM_REQUIRE_BANNER, EXTERNAL_MODULES } from '../infra/bundling.ts';
import { availableHandlerTypes, handlerEntryPath, PROJECT_ROOT } from '../infra/handler-registry.ts';

const MAX_BYTES = 1024 * 1024;
const MAX_INIT_MS = 150;

export interface BundleMeasurement {
  type: NodeType;
  bytes: number;
  /** Importing the bundle, the external AWS SDK packages it loads during init included. */
  initMs: number;
  /** The @aws-sdk packages the init loaded (others the bundle imports on first use). */
  sdkPackages: string[];
  /** Importing those SDK packages alone: what the runtime's SDK costs this handler's init. */
  sdkMs: number;
  /** initMs minus sdkMs: the bundle's own code. */
  ownInitMs: number;
}

export interface BuiltBundle {
  file: string;
  /** Every @aws-sdk package the bundle may import, at init or on first use. */
  sdkImports: string[];
}

// Inside node_modules so the bundles resolve the external @aws-sdk/* packages, as the Lambda runtime does.
const OUT_DIR = join(PROJECT_ROOT, 'node_modules', '.cache', 'stepthread-bundles');

export async function bundleHandler(type: NodeType): Promise<BuiltBundle> {
  const file = join(OUT_DIR, type.toLowerCase(), 'index.mjs');
  const result = await build({
    entryPoints: [handlerEntryPath(type)],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: ESBUILD_TARGET,
    minify: true,
    sourcemap: false,
    mainFields: ['module', 'main'],
    external: [...EXTERNAL_MODULES],
    banner: { js: ESM_REQUIRE_BANNER },
    alias: { ...ESBUILD_ALIASES },
    logLevel: 'error',
    metafile: true,
  });
  const imports = Object.values(result.metafile.outputs).flatMap((output) => output.imports);
  const sdk = imports.filter((i) => i.external && i.path.startsWith('@aws-sdk/')).map((i) => i.path);
  return { file, sdkImports: [...new Set(sdk)].sort() };
}

function runNode(script: string): string {
  return execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    cwd: PROJECT_ROOT,
    env: { ...process.env, STEPTHREAD_TARGET: 'aws', AWS_REGION: 'us-east-1' },
  });
}

// Importing a package that is already loaded is a cache hit (well under a millisecond); loading an
// SDK client takes tens of milliseconds.
const CACHE_HIT_MS = 3;

/**
 * Milliseconds to import the bundle (module init, dependencies included) in a fresh process, and which
 * of `candidates` that init loaded: importing them afterwards is then a cache hit.
 */
export function measureInit(file: string, candidates: readonly string[]): { ms: number; loaded: string[] } {
  const script = [
    'const t = performance.now();',
    `await import(${JSON.stringify(pathToFileURL(file).href)});`,
    'const ms = performance.now() - t;',
    'const loaded = [];',
    `for (const c of ${JSON.stringify(candidates)}) {`,
    '  const s = performance.now(); await import(c);',
    `  if (performance.now() - s < ${CACHE_HIT_MS}) loaded.push(c);`,
    '}',
    'process.stdout.write(JSON.stringify({ ms, loaded }));',
  ].join('\n');
  return JSON.parse(runNode(script)) as { ms: number; loaded: string[] };
}

/** Milliseconds to import the given packages alone, in a fresh process. */
export function measureImports(specifiers: readonly string[]): number {
  const imports = specifiers.map((s) => `await import(${JSON.stringify(s)});`).join(' ');
  return Number(
    runNode(`const t = performance.now(); ${imports} process.stdout.write(String(performance.now() - t));`),
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

export async function measureBundles(
  runs = 5,
  types = availableHandlerTypes(),
): Promise<BundleMeasurement[]> {
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const sdkCost = new Map<string, number>();
  const results: BundleMeasurement[] = [];
  for (const type of types) {
    const { file, sdkImports } = await bundleHandler(type);
    const samples = Array.from({ length: runs }, () => measureInit(file, sdkImports));
    const initMs = median(samples.map((sample) => sample.ms));
    const sdkPackages = samples[0]?.loaded ?? [];
    const key = sdkPackages.join(' ');
    let sdkMs = sdkCost.get(key);
    if (sdkMs === undefined) {
      sdkMs = median(Array.from({ length: runs }, () => measureImports(sdkPackages)));
      sdkCost.set(key, sdkMs);
    }
    results.push({
      type,
      bytes: statSync(file).size,
      initMs,
      sdkPackages,
      sdkMs,
      ownInitMs: Math.max(0, initMs - sdkMs),
    });
  }
  return results;
}

function meetsTargets(r: BundleMeasurement): boolean {
  return r.bytes <= MAX_BYTES && r.initMs <= MAX_INIT_MS;
}

const SHORT_SDK_NAMES: Readonly<Record<string, string>> = {
  '@aws-sdk/client-dynamodb': 'ddb',
  '@aws-sdk/lib-dynamodb': 'ddb-doc',
  '@aws-sdk/client-s3': 's3',
  '@aws-sdk/client-sfn': 'sfn',
  '@aws-sdk/client-bedrock-runtime': 'bedrock',
  '@aws-sdk/client-secrets-manager': 'secrets',
  '@aws-sdk/client-ssm': 'ssm',
  '@aws-sdk/client-lambda': 'lambda',
};

function formatTable(results: readonly BundleMeasurement[]): string {
  const ms = (n: number) => `${n.toFixed(0).padStart(5)} ms`;
  const rows = results.map((r) => {
    const sdk = r.sdkPackages.map((p) => SHORT_SDK_NAMES[p] ?? p).join(' ');
    return `${r.type.padEnd(18)} ${(r.bytes / 1024).toFixed(1).padStart(8)} KiB ${ms(r.initMs)} ${ms(r.sdkMs)} ${ms(r.ownInitMs)}  ${(meetsTargets(r) ? 'ok' : 'OVER').padEnd(4)}  ${sdk}`;
  });
  const header = `${'handler'.padEnd(18)} ${'bundle'.padStart(12)} ${'init'.padStart(8)} ${'sdk'.padStart(8)} ${'own'.padStart(8)}  ${'    '}  SDK loaded at init`;
  return [header, ...rows].join('\n');
}

function summary(results: readonly BundleMeasurement[]): string {
  const ok = results.filter(meetsTargets).length;
  const max = (pick: (r: BundleMeasurement) => number) => Math.max(...results.map(pick));
  return [
    `${ok}/${results.length} handlers within ≤ 1 MiB and ≤ ${MAX_INIT_MS} ms init.`,
    `largest bundle ${(max((r) => r.bytes) / 1024).toFixed(1)} KiB; slowest init ${max((r) => r.initMs).toFixed(0)} ms; most own init ${max((r) => r.ownInitMs).toFixed(0)} ms.`,
  ].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const runsAt = args.indexOf('--runs');
  const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 5;
  const results = await measureBundles(runs);
  if (args.includes('--json')) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  else {
    process.stdout.write(
      `${formatTable(results)}\n\n${summary(results)}\nNode ${process.version}, esbuild target ${ESBUILD_TARGET}, median of ${runs} fresh-process imports; @aws-sdk/* external (provided by the Lambda runtime, imported here from node_modules).\n`,
    );
  }
  const missing = results.filter((r) => !meetsTargets(r));
  if (missing.length > 0) {
    process.stderr.write(
      `over target (≤ 1 MiB, ≤ ${MAX_INIT_MS} ms): ${missing.map((r) => r.type).join(', ')}\n`,
    );
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
