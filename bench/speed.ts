/**
 * Speed bench: what a user waits for, with the compiled CLI the package installs (`dist/bin`, so run
 * `npm run build` first), beside `node -e 0`:
 * - `stepthread --help`, `validate`, and a START→END `run` (fresh processes, median of --runs), and the
 *   same from the sources through tsx, as a checkout runs them;
 * - milliseconds per node on a 200-node chain (each node an LLM step appending a ~1 KB prompt and a
 *   1 KB reply), on the embedded runtime in this process: real ASL interpreter, DynamoDB (dynalite) and
 *   S3 (s3rver) APIs on loopback;
 * - LangGraph.js with SqliteSaver on the same chain, in this same process (bench/langgraph, its own
 *   npm project: `npm --prefix bench/langgraph ci`; skipped with a note when not installed).
 *
 *   npx tsx bench/speed.ts [--runs 7] [--t 200] [--json]
 *
 * Wall-clock figures depend on the machine and its load; the tests assert counts, never times.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createLocalRuntime } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import { longRunWorkflow } from './long-runs.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist', 'bin', 'main.js');

function argument(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  const value = index >= 0 ? Number(process.argv[index + 1]) : fallback;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Median wall time of `node <args>` in fresh processes. */
function timeProcess(args: string[], runs: number): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    const result = spawnSync(process.execPath, args, { encoding: 'utf8' });
    times.push(performance.now() - started);
    if (result.status !== 0) throw new Error(`node ${args.join(' ')} failed:\n${result.stderr}`);
  }
  return median(times);
}

/** `node -e` running the compiled CLI's main as the bin does (argv[1] stands for the script). */
function cliArgs(...args: string[]): string[] {
  const script = `const { main } = await import(${JSON.stringify(pathToFileURL(CLI).href)}); process.exitCode = await main(process.argv);`;
  return ['--input-type=module', '-e', script, 'stepthread', ...args];
}

export interface SpeedFigures {
  nodeMs: number;
  helpMs: number;
  validateMs: number;
  runMs: number;
  /** The same three commands from the TypeScript sources through tsx (a checkout; every command before dist/). */
  sources: { helpMs: number; validateMs: number; runMs: number };
  chainNodes: number;
  msPerNode: number;
  langGraphMsPerNode?: number;
}

export async function benchSpeed(runs: number, chainNodes: number): Promise<SpeedFigures> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  const dir = mkdtempSync(join(tmpdir(), 'stepthread-speed-'));
  try {
    const workflow = join(dir, 'start-end.json');
    writeFileSync(
      workflow,
      JSON.stringify({
        id: 'start-end',
        version: 1,
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'end', type: 'END', config: { output: { done: true } } },
        ],
        edges: [{ from: 'start', to: 'end' }],
      }),
    );
    const nodeMs = timeProcess(['-e', '0'], runs);
    const helpMs = timeProcess(cliArgs('--help'), runs);
    const validateMs = timeProcess(cliArgs('validate', join(ROOT, 'examples', 'route-loop.json')), runs);
    const runMs = timeProcess(cliArgs('run', workflow, '--data-dir', join(dir, 'data')), runs);
    const bin = join(ROOT, 'bin', 'stepthread.js');
    const sources = {
      helpMs: timeProcess([bin, '--help'], runs),
      validateMs: timeProcess([bin, 'validate', join(ROOT, 'examples', 'route-loop.json')], runs),
      runMs: timeProcess([bin, 'run', workflow, '--data-dir', join(dir, 'data')], runs),
    };

    const names = { tableName: 'speed', bucketName: 'speed' };
    const services = await startLocalServices({ ephemeral: true, names });
    let msPerNode: number;
    try {
      const runtime = createLocalRuntime({ clients: createAwsClients(services.target, names) });
      // A short run first, so module loading and first-use costs stay out of the per-node figure.
      await runtime.prepare(longRunWorkflow('chain', 5)).run({}, {});
      const prepared = runtime.prepare(longRunWorkflow('chain', chainNodes));
      const started = performance.now();
      const outcome = await prepared.run({}, {});
      if (outcome.status !== 'COMPLETED') throw new Error(`chain run ended ${outcome.status}`);
      msPerNode = (performance.now() - started) / chainNodes;
    } finally {
      await services.close();
    }

    let langGraphMsPerNode: number | undefined;
    const langGraph = join(ROOT, 'bench', 'langgraph');
    if (existsSync(join(langGraph, 'node_modules', '@langchain', 'langgraph'))) {
      const { runLangGraphChain } = (await import(pathToFileURL(join(langGraph, 'chain.mjs')).href)) as {
        runLangGraphChain: (nodes: number) => Promise<number>;
      };
      await runLangGraphChain(5);
      langGraphMsPerNode = (await runLangGraphChain(chainNodes)) / chainNodes;
    }
    return {
      nodeMs,
      helpMs,
      validateMs,
      runMs,
      sources,
      chainNodes,
      msPerNode,
      ...(langGraphMsPerNode === undefined ? {} : { langGraphMsPerNode }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function printFigures(f: SpeedFigures): void {
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  const rows: [string, string, string][] = [
    ['node -e 0', ms(f.nodeMs), ''],
    ['stepthread --help', ms(f.helpMs), `≤ 250 ms (sources via tsx: ${ms(f.sources.helpMs)})`],
    [
      'stepthread validate examples/route-loop.json',
      ms(f.validateMs),
      `≤ 250 ms (sources via tsx: ${ms(f.sources.validateMs)})`,
    ],
    ['stepthread run (START → END)', ms(f.runMs), `≤ 600 ms (sources via tsx: ${ms(f.sources.runMs)})`],
    [
      `${f.chainNodes}-node chain, per node (stepthread, embedded runtime)`,
      `${f.msPerNode.toFixed(2)} ms`,
      '≤ 3 ms',
    ],
    [
      `${f.chainNodes}-node chain, per node (LangGraph.js + SqliteSaver)`,
      f.langGraphMsPerNode === undefined
        ? 'not installed: npm --prefix bench/langgraph ci'
        : `${f.langGraphMsPerNode.toFixed(2)} ms`,
      '',
    ],
  ];
  for (const [what, value, target] of rows)
    console.log(`${what.padEnd(62)} ${value.padStart(10)}  ${target}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await benchSpeed(argument('--runs', 7), argument('--t', 200));
  if (process.argv.includes('--json')) console.log(JSON.stringify(figures, null, 2));
  else printFigures(figures);
}
