/**
 * Console bench: the web console's bundle size (gzipped, the figure a browser downloads; target
 * ≤ 300 kB), and the `stepthread dev` API's time to serve an execution page over a thread of 1,000
 * step records (a 333-turn chat loop on the embedded runtime): the execution (graph status, threads,
 * node runs), the thread's steps and its conversation, each the median of several requests.
 *
 *   npm run build:console && npx tsx bench/console.ts [--steps 1000] [--runs 7] [--json]
 *
 * Exits non-zero when the bundle is over its target.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startDevServer } from '../cli/dev/server.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createLocalRuntime } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import { longRunWorkflow } from './long-runs.ts';

const ROOT = join(import.meta.dirname, '..');
const MAX_GZIP_BYTES = 300 * 1024;

export interface BundleSize {
  files: { file: string; bytes: number; gzipBytes: number }[];
  bytes: number;
  gzipBytes: number;
}

/** Every file of console/dist/assets, raw and gzipped (level 9, as a server would serve it). */
export function consoleBundleSize(dist = join(ROOT, 'console', 'dist')): BundleSize {
  const assets = join(dist, 'assets');
  const files = readdirSync(assets).map((file) => {
    const data = readFileSync(join(assets, file));
    return { file, bytes: data.length, gzipBytes: gzipSync(data, { level: 9 }).length };
  });
  const html = readFileSync(join(dist, 'index.html'));
  files.push({ file: 'index.html', bytes: html.length, gzipBytes: gzipSync(html, { level: 9 }).length });
  return {
    files,
    bytes: files.reduce((sum, file) => sum + file.bytes, 0),
    gzipBytes: files.reduce((sum, file) => sum + file.gzipBytes, 0),
  };
}

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const targetSteps = argument('steps', 1000);
  const runs = argument('runs', 7);
  const bundle = consoleBundleSize();

  const services = await startLocalServices({ ephemeral: true });
  const clients = createAwsClients(services.target, services.names);
  const turns = Math.ceil((targetSteps - 2) / 3);
  const { workflow } = validateWorkflow(longRunWorkflow('chat', turns));
  const outcome = await createLocalRuntime({ clients }).prepare(workflow!).run({});
  const executionId = outcome.executions[0]!.executionId;
  const server = await startDevServer({ clients, workflowsDir: join(ROOT, 'examples') });
  const time = async (path: string) => {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const response = await fetch(`${server.url}${path}`);
      bytes = (await response.arrayBuffer()).byteLength;
      if (!response.ok) throw new Error(`${path}: ${response.status}`);
      times.push(performance.now() - started);
    }
    return { path, medianMs: Math.round(median(times)), bytes };
  };
  const page = await time(`/api/executions/${executionId}`);
  const steps = await time(`/api/threads/${outcome.threadId}/steps`);
  const conversation = await time(`/api/threads/${outcome.threadId}/conversation`);
  const stepCount = (
    (await (await fetch(`${server.url}/api/threads/${outcome.threadId}/steps`)).json()) as {
      stepCount: number;
    }
  ).stepCount;
  await server.close();
  await services.close();

  const result = {
    bundle: { bytes: bundle.bytes, gzipBytes: bundle.gzipBytes, limitGzipBytes: MAX_GZIP_BYTES },
    api: { stepRecords: stepCount, runs, executionPage: page, steps, conversation },
  };
  if (json) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;
    console.log(
      `console bundle: ${kb(bundle.bytes)} raw, ${kb(bundle.gzipBytes)} gzipped (limit ${kb(MAX_GZIP_BYTES)})`,
    );
    for (const file of bundle.files)
      console.log(`  ${file.file}: ${kb(file.bytes)} (${kb(file.gzipBytes)} gz)`);
    console.log(`API over a thread of ${stepCount} step records (median of ${runs}):`);
    for (const entry of [page, steps, conversation]) {
      console.log(
        `  GET ${entry.path.replace(/[0-9a-f-]{20,}/g, '…')}: ${entry.medianMs} ms, ${kb(entry.bytes)}`,
      );
    }
  }
  if (bundle.gzipBytes > MAX_GZIP_BYTES) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
