/**
 * CODE sandbox latency: cold start (first run including the worker start), warm runs, and how fast
 * an infinite loop is stopped and the sandbox is ready again. Run: npx tsx bench/sandbox.ts
 *
 * Measured twice: with the source worker (TypeScript through tsx, as tests and the CLI run it) and
 * with the bundled worker (sandbox-worker.mjs from build.ts, as Lambda runs it).
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSandboxWorker } from '../functions/sandbox/build.ts';
import { createSandbox, type SandboxOptions } from '../functions/sandbox/index.ts';

const WARM_RUNS = 200;
const LOOP_TIMEOUT_MS = 100;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const ms = (value: number) => `${value.toFixed(2)} ms`;

async function measure(label: string, options: SandboxOptions): Promise<void> {
  const sandbox = createSandbox(options);
  const input = { items: Array.from({ length: 20 }, (_, i) => ({ id: i, price: i * 1.5 })) };
  const code =
    'return input.items.filter((item) => item.id % 2 === 0).reduce((sum, item) => sum + item.price, 0)';

  let started = performance.now();
  const first = await sandbox.run({ code, input });
  const cold = performance.now() - started;
  if (!first.ok) throw new Error(`cold run failed: ${first.error.message}`);

  const warm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    started = performance.now();
    await sandbox.run({ code, input });
    warm.push(performance.now() - started);
  }
  warm.sort((a, b) => a - b);

  started = performance.now();
  const loop = await sandbox.run({ code: 'while (true) {}', input: null, timeoutMs: LOOP_TIMEOUT_MS });
  const stopped = performance.now() - started;
  if (loop.ok || loop.error.code !== 'CODE_TIMEOUT')
    throw new Error('the loop was not stopped by its deadline');
  started = performance.now();
  await sandbox.run({ code, input });
  const next = performance.now() - started;

  await sandbox.close();

  // A worker kill (watchdog or broken engine) costs a fresh worker: the same as a cold start.
  const fresh = createSandbox(options);
  started = performance.now();
  await fresh.run({ code, input });
  const restart = performance.now() - started;
  await fresh.close();

  console.log(`\n${label}`);
  console.log(`  cold start (first run incl. worker start): ${ms(cold)}`);
  console.log(
    `  warm run over ${WARM_RUNS}: median ${ms(percentile(warm, 50))}, p95 ${ms(percentile(warm, 95))}, max ${ms(warm.at(-1) ?? 0)}`,
  );
  console.log(
    `  infinite loop, timeout ${LOOP_TIMEOUT_MS} ms: result after ${ms(stopped)} (${ms(stopped - LOOP_TIMEOUT_MS)} past the deadline), next run ${ms(next)}`,
  );
  console.log(`  worker replaced after a kill: first run on the new worker ${ms(restart)}`);
}

await measure('source worker (tsx)', {});

const dir = await mkdtemp(join(tmpdir(), 'stepthread-sandbox-bench-'));
try {
  const worker = await buildSandboxWorker({ outdir: dir });
  await measure('bundled worker (sandbox-worker.mjs)', { workerUrl: pathToFileURL(worker) });
} finally {
  await rm(dir, { recursive: true, force: true });
}
