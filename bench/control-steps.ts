/**
 * Control steps beside LangGraph.js, in one process, warmed: what a chat turn (LOOP_START → LLM →
 * LOOP_END) and a 4-branch fork/join on a thread of N messages take on the embedded runtime (real ASL
 * interpreter, dynalite and s3rver in this process, reached without sockets, as the tests run them),
 * beside the same workloads as LangGraph.js graphs with a SqliteSaver checkpointer
 * (bench/langgraph/control.mjs; `npm --prefix bench/langgraph ci`, skipped with a note when missing).
 * Every model is a fake one returning a 1 KB reply to a ~1 KB prompt.
 *
 * - chat: START → LOOP_START → LLM → LOOP_END (T turns) → END; ms per turn from the first LOOP_START's
 *   Task to END's. LangGraph: its idiom (one node and a conditional edge back to it) and the same
 *   three nodes, ms per turn from the first turn's node to the end of the invoke.
 * - fork/join: START → N/2 LLM steps (N messages) → FORK over 4 paths, an LLM step each → JOIN → END;
 *   ms from the FORK's Task to END's. LangGraph: seed (N messages) → fork → 4 nodes → join → after;
 *   ms from fork's start to after's.
 *
 * Each figure is the median of --runs rounds after three whole runs that warm the JIT, the runners
 * alternating within each round; every run of a workload has prompts of its own (new conversation
 * segments, as a model's runs write). It also prints each kind of Task's mean time over the timed
 * runs and, from one more run with every store request attributed to the Task that made it, the
 * requests each makes.
 *
 *   npx tsx bench/control-steps.ts [--runs 9] [--turns 10] [--messages 10] [--only chat|forkjoin] [--no-langgraph] [--compare <checkout>] [--profile <dir>] [--json]
 *   npx tsx bench/control-steps.ts --only chat --runs 40 --no-langgraph --profile /tmp/prof
 *
 * --compare <checkout> runs another checkout's bench/control-steps.ts workloads (its own code, its own
 * services) in the same rounds, alternating with this one's: before/after figures of a change. This
 * checkout's services make dynalite's parsers keep their parses for the whole process: the other
 * checkout needs a dynalite of its own (a copy in its node_modules, not a link to this one's).
 * --profile writes a CPU profile (node:inspector) of each workload's timed runs alone to
 * `<dir>/<workload>.cpuprofile`, for Chrome's DevTools or `node --cpu-prof`'s readers, and prints its
 * time by part of the system (bench/profile-breakdown.ts: the emulated stores, their clients, the
 * interpreter, stepthread's own code, Node and V8).
 *
 * Wall-clock figures depend on the machine and its load; the tests assert request counts, never times.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Workflow } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { type AwsClients, createAwsClients } from '../functions/aws/clients.ts';
import { aroundCommands } from '../functions/aws/meter.ts';
import { createLocalRuntime, type TaskCall } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import { breakdownOf, type CpuProfile, PARTS, type Part } from './profile-breakdown.ts';

const ROOT = join(import.meta.dirname, '..');
const WARMUPS = 3;

/** ~1 KB of prompt text (a variable, so the workflow file stays small) and a 1 KB reply. */
const FILLER = 'lorem ipsum '.repeat(85).slice(0, 1000);
const REPLY = 'The answer, at length: '.padEnd(1024, 'z');
const BRANCHES = 4;

function argument(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  const value = index >= 0 ? Number(process.argv[index + 1]) : fallback;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function valid(raw: unknown): Workflow {
  const result = validateWorkflow(raw);
  if (!result.workflow) throw new Error(`invalid workflow: ${JSON.stringify(result.errors)}`);
  return result.workflow;
}

const common = {
  version: 1,
  variables: [{ name: 'filler', type: 'string', scope: 'thread', initial: FILLER }],
  profiles: { default: { provider: 'scripted', responses: [REPLY] } },
};

/** A chat loop of `turns` turns; each run's prompts end in its `input.run`. */
export function chatWorkflow(turns: number): Workflow {
  return valid({
    ...common,
    id: 'control-chat',
    maxSteps: 3 * turns + 10,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'turns', type: 'LOOP_START', config: { loopId: 'chat', maxIterations: turns } },
      { id: 'chat', type: 'LLM', config: { prompt: '{{filler}} turn {{index}}{{input.run}}' } },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'chat' } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'turns' },
      { from: 'turns', to: 'chat' },
      { from: 'chat', to: 'next' },
      { from: 'next', to: 'end' },
    ],
  });
}

/** N/2 LLM steps (N messages), then a FORK over four paths of one LLM step each, then a JOIN. */
export function forkJoinWorkflow(messages: number): Workflow {
  const seeds = Array.from({ length: messages / 2 }, (_, i) => `s${i + 1}`);
  const paths = Array.from({ length: BRANCHES }, (_, i) => `b${i + 1}`);
  return valid({
    ...common,
    id: 'control-fork-join',
    nodes: [
      { id: 'start', type: 'START' },
      ...seeds.map((id) => ({ id, type: 'LLM', config: { prompt: `{{filler}} ${id}{{input.run}}` } })),
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: paths, forkStrategy: 'parallel', childNodeIds: paths },
      },
      ...paths.map((id) => ({ id, type: 'LLM', config: { prompt: `{{filler}} ${id}{{input.run}}` } })),
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: paths, joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: paths[0] },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      ...['start', ...seeds, 'split']
        .slice(1)
        .map((to, i, all) => ({ from: i === 0 ? 'start' : all[i - 1]!, to })),
      ...paths.map((from) => ({ from, to: 'merge' })),
      { from: 'merge', to: 'end' },
    ],
  });
}

/** The kind of a Task: its node type and action, on a branch or not. */
function kindOf(call: TaskCall): string {
  const { nodeType, action } = call.entry;
  const envelope = (call.event as { envelope?: { threadId?: string; rootThreadId?: string } }).envelope;
  const branch = envelope?.threadId !== undefined && envelope.threadId !== envelope.rootThreadId;
  return `${branch ? 'branch ' : ''}${nodeType}${action === 'execute' ? '' : ` ${action}`}`;
}

interface Measured {
  /** The timed part's milliseconds (per turn for the chat). */
  ms: number;
  /** Per kind of Task: invocations and their wall time (of the timed part, overlapping in branches). */
  tasks: Record<string, { count: number; ms: number }>;
  /** Of the timed part, the milliseconds outside every Task (the ASL interpreter, the runtime), per turn for the chat. */
  outsideMs: number;
}

export type Workload = 'chat' | 'forkjoin';

/** Runs a workload's prepared workflow once, timing from `from`'s Task to END's. */
function workloadRunner(clients: AwsClients, workload: Workload, turns: number, messages: number) {
  const runtime = createLocalRuntime({ clients });
  const prepared = runtime.prepare(workload === 'chat' ? chatWorkflow(turns) : forkJoinWorkflow(messages));
  const from = workload === 'chat' ? 'LOOP_START' : 'FORK';
  const per = workload === 'chat' ? turns : 1;
  let run = 0;
  return async (
    around?: (call: TaskCall, invoke: () => Promise<unknown>) => Promise<unknown>,
  ): Promise<Measured> => {
    run += 1;
    let started: number | undefined;
    let ended: number | undefined;
    const tasks: Measured['tasks'] = {};
    // Time inside at least one Task, while the timed part runs (branches overlap).
    let inside = 0;
    let running = 0;
    let since = 0;
    const outcome = await prepared.run(
      { run: ` (run ${run})` },
      {
        interceptTask: async (call, invoke) => {
          const at = performance.now();
          if (call.entry.nodeType === from) started ??= at;
          if (call.entry.nodeType === 'END') ended ??= at;
          const timing = started !== undefined && ended === undefined;
          if (timing && running++ === 0) since = at;
          try {
            return await (around ? around(call, invoke) : invoke());
          } finally {
            if (timing) {
              const now = performance.now();
              if (--running === 0) inside += now - since;
              const kind = kindOf(call);
              tasks[kind] ??= { count: 0, ms: 0 };
              tasks[kind].count += 1;
              tasks[kind].ms += now - at;
            }
          }
        },
      },
    );
    if (outcome.status !== 'COMPLETED') throw new Error(`${workload} run ended ${outcome.status}`);
    const ms = ended! - started!;
    return { ms: ms / per, tasks, outsideMs: (ms - inside) / per };
  };
}

export interface TaskKindFigures {
  /** Invocations of this kind in one run's timed part. */
  count: number;
  /** Mean milliseconds of one invocation (the handler, its store requests included), over the timed runs. */
  meanMs: number;
  /** Store requests per invocation, by command (from one more run, metered). */
  requests: Record<string, number>;
}

/** One run with every store request attributed to the kind of Task that made it: requests per invocation. */
async function countRequests(
  clients: AwsClients,
  runOnce: ReturnType<typeof workloadRunner>,
): Promise<Record<string, Record<string, number>>> {
  const current = new AsyncLocalStorage<string>();
  const requests: Record<string, Record<string, number>> = {};
  const count = (call: { commandName: string }, next: () => Promise<unknown>) => {
    const kind = current.getStore();
    if (kind !== undefined) {
      requests[kind] ??= {};
      const name = call.commandName.replace(/Command$/, '');
      requests[kind][name] = (requests[kind][name] ?? 0) + 1;
    }
    return next();
  };
  aroundCommands(clients.dynamo, count);
  aroundCommands(clients.s3, count);
  const { tasks } = await runOnce((call, invoke) => current.run(kindOf(call), invoke));
  return Object.fromEntries(
    Object.entries(requests).map(([kind, byCommand]) => [
      kind,
      Object.fromEntries(Object.entries(byCommand).map(([name, n]) => [name, n / (tasks[kind]?.count ?? 1)])),
    ]),
  );
}

/** A workload's figures: stepthread's, and LangGraph.js's beside it. */
export interface WorkloadFigures {
  /** Median milliseconds of the timed part: per turn for the chat, per fork/join. */
  ms: number;
  /** Of that, outside every Task (the ASL interpreter and the runtime around the handlers). */
  outsideMs: number;
  /** With --profile: each part's share of the CPU time of the timed rounds (bench/profile-breakdown.ts). */
  profile?: Record<Part, number>;
  tasks: Record<string, TaskKindFigures>;
  /**
   * LangGraph.js + SqliteSaver, by graph shape, the same part timed the same way (and, with
   * --compare, another checkout of stepthread).
   */
  langGraph?: Record<string, number>;
}

export interface ControlFigures {
  turns: number;
  messages: number;
  /** Whether bench/langgraph is installed (its figures are left out when not). */
  langGraph: boolean;
  /** LangGraph.js left out on purpose (--no-langgraph). */
  langGraphLeftOut?: boolean;
  chat?: WorkloadFigures;
  forkJoin?: WorkloadFigures;
}

/**
 * Median of each runner's figure over `runs` rounds, the runners alternating within each round (so a
 * change in the machine's load falls on all of them), after WARMUPS rounds that warm the JIT.
 */
async function alternating(runners: readonly (() => Promise<number>)[], runs: number): Promise<number[]> {
  for (let i = 0; i < WARMUPS; i += 1) for (const runner of runners) await runner();
  const times = runners.map((): number[] => []);
  for (let i = 0; i < runs; i += 1)
    for (const [j, runner] of runners.entries()) times[j]!.push(await runner());
  return times.map(median);
}

/** The timed runs of one workload: stepthread's figures with per-Task means, LangGraph's beside them. */
async function timedWorkload(
  runOnce: () => Promise<Measured>,
  langGraphs: Record<string, () => Promise<number>>,
  runs: number,
  profile?: string,
): Promise<Omit<WorkloadFigures, 'tasks'> & { tasks: Record<string, { count: number; meanMs: number }> }> {
  const measured: Measured[] = [];
  let recording = false;
  const stepthread = async () => {
    const m = await runOnce();
    if (recording) measured.push(m);
    return m.ms;
  };
  const names = Object.keys(langGraphs);
  // The profile covers the timed rounds only (LangGraph's runs in them too, under their own files).
  const session = profile === undefined ? undefined : await startProfile();
  for (let i = 0; i < WARMUPS; i += 1) await stepthread();
  recording = true;
  const [ms, ...others] = await alternating([stepthread, ...names.map((name) => langGraphs[name]!)], runs);
  let breakdown: Record<Part, number> | undefined;
  if (session) {
    const recorded = (await session.stop()) as CpuProfile;
    writeFileSync(profile!, JSON.stringify(recorded));
    breakdown = breakdownOf(recorded).shares;
  }
  const tasks: Record<string, { count: number; meanMs: number }> = {};
  for (const kind of Object.keys(measured[0]!.tasks)) {
    const count = measured[0]!.tasks[kind]!.count;
    const total = measured.reduce((sum, m) => sum + (m.tasks[kind]?.ms ?? 0), 0);
    tasks[kind] = { count, meanMs: total / (count * measured.length) };
  }
  return {
    ms: ms!,
    outsideMs: median(measured.map((m) => m.outsideMs)),
    ...(breakdown ? { profile: breakdown } : {}),
    tasks,
    ...(names.length > 0
      ? { langGraph: Object.fromEntries(names.map((name, i) => [name, others[i]!])) }
      : {}),
  };
}

/** A CPU profile (node:inspector) of the timed rounds alone, without module loading and warm-up. */
async function startProfile(): Promise<{ stop(): Promise<object> }> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 });
  await post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await post('Profiler.stop')) as { profile: object };
      session.disconnect();
      return profile;
    },
  };
}

interface LangGraphControl {
  runLangGraphChat(turns: number, shape: 'idiom' | 'three'): Promise<number>;
  runLangGraphForkJoin(messages: number, branches?: number): Promise<number>;
}

async function langGraph(): Promise<LangGraphControl | undefined> {
  const dir = join(ROOT, 'bench', 'langgraph');
  if (!existsSync(join(dir, 'node_modules', '@langchain', 'langgraph'))) return undefined;
  return (await import(pathToFileURL(join(dir, 'control.mjs')).href)) as LangGraphControl;
}

/**
 * A workload on services of its own, for another checkout's bench to time beside its own (--compare):
 * its figure per run, and how to stop its services.
 */
export async function stepthreadRunner(
  workload: Workload,
  turns: number,
  messages: number,
): Promise<{ run(): Promise<number>; close(): Promise<void> }> {
  const names = { tableName: `control-${workload}`, bucketName: `control-${workload}` };
  const services = await startLocalServices({ ephemeral: true, names });
  const runOnce = workloadRunner(createAwsClients(services.target, names), workload, turns, messages);
  return { run: async () => (await runOnce()).ms, close: () => services.close() };
}

/**
 * The store requests each kind of Task makes in one run of a workload (per invocation, by command), on
 * services of its own, counted as the bench counts them: what the tests assert.
 */
export async function controlRequests(
  workload: Workload,
  turns: number,
  messages: number,
): Promise<Record<string, Record<string, number>>> {
  const names = { tableName: `requests-${workload}`, bucketName: `requests-${workload}` };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    const clients = createAwsClients(services.target, names);
    return await countRequests(clients, workloadRunner(clients, workload, turns, messages));
  } finally {
    await services.close();
  }
}

export async function benchControlSteps(options: {
  runs: number;
  turns: number;
  messages: number;
  only?: Workload;
  /** Writes a CPU profile of each workload's timed rounds here (`<workload>.cpuprofile`). */
  profileDir?: string;
  /** Leave LangGraph.js out (a profile of stepthread alone). */
  withoutLangGraph?: boolean;
  /** Another checkout of stepthread whose bench runs the same workloads beside this one (before/after). */
  compareWith?: string;
}): Promise<ControlFigures> {
  const { runs, turns, messages, only } = options;
  // Made up front: a directory not there yet would fail only after the timed runs.
  if (options.profileDir !== undefined) mkdirSync(options.profileDir, { recursive: true });
  const lg = options.withoutLangGraph ? undefined : await langGraph();
  const figures: ControlFigures = {
    turns,
    messages,
    langGraph: lg !== undefined,
    ...(options.withoutLangGraph ? { langGraphLeftOut: true } : {}),
  };
  const names = { tableName: 'control', bucketName: 'control' };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    for (const workload of ['chat', 'forkjoin'] as const) {
      if (only !== undefined && only !== workload) continue;
      const clients = createAwsClients(services.target, names);
      const runOnce = workloadRunner(clients, workload, turns, messages);
      const langGraphs: Record<string, () => Promise<number>> = !lg
        ? {}
        : workload === 'chat'
          ? {
              'one node + conditional edge': () => lg.runLangGraphChat(turns, 'idiom'),
              'loop_start → llm → loop_end': () => lg.runLangGraphChat(turns, 'three'),
            }
          : { 'fork → 4 nodes → join': () => lg.runLangGraphForkJoin(messages, BRANCHES) };
      const compared = options.compareWith
        ? await (
            (await import(pathToFileURL(join(options.compareWith, 'bench', 'control-steps.ts')).href)) as {
              stepthreadRunner: typeof stepthreadRunner;
            }
          ).stepthreadRunner(workload, turns, messages)
        : undefined;
      if (compared) langGraphs[`stepthread at ${options.compareWith}`] = () => compared.run();
      const profile = options.profileDir ? join(options.profileDir, `${workload}.cpuprofile`) : undefined;
      const timedFigures = await timedWorkload(() => runOnce(), langGraphs, runs, profile);
      await compared?.close();
      // Metering adds a little to each request: after the timed runs, on clients of their own.
      const metered = createAwsClients(services.target, names);
      const requests = await countRequests(metered, workloadRunner(metered, workload, turns, messages));
      const tasks = Object.fromEntries(
        Object.entries(timedFigures.tasks).map(([kind, t]) => [
          kind,
          { ...t, requests: requests[kind] ?? {} },
        ]),
      );
      figures[workload === 'chat' ? 'chat' : 'forkJoin'] = { ...timedFigures, tasks };
    }
  } finally {
    await services.close();
  }
  return figures;
}

function printFigures(f: ControlFigures): void {
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  if (!f.langGraph && !f.langGraphLeftOut)
    console.log('LangGraph.js not installed: npm --prefix bench/langgraph ci');
  const parts = [
    [`chat turn (LOOP_START → LLM → LOOP_END), T = ${f.turns}`, f.chat],
    [`${BRANCHES}-branch fork/join, N = ${f.messages} messages`, f.forkJoin],
  ] as const;
  for (const [title, part] of parts) {
    if (!part) continue;
    console.log(`\n${title}`);
    console.log(`  ${'stepthread, embedded runtime'.padEnd(52)} ${ms(part.ms).padStart(10)}`);
    for (const [shape, theirs] of Object.entries(part.langGraph ?? {})) {
      console.log(
        shape.startsWith('stepthread at ')
          ? `  ${shape.padEnd(52)} ${ms(theirs).padStart(10)}  this ÷ that ${(part.ms / theirs).toFixed(2)}×`
          : `  ${`LangGraph.js + SqliteSaver (${shape})`.padEnd(52)} ${ms(theirs).padStart(10)}  stepthread ÷ LangGraph ${(part.ms / theirs).toFixed(2)}×`,
      );
    }
    console.log(`  outside the Tasks (ASL interpreter, runtime): ${ms(part.outsideMs)}`);
    console.log('  Tasks: invocations, mean ms each, store requests each');
    for (const [kind, t] of Object.entries(part.tasks)) {
      const requests = Object.entries(t.requests)
        .map(([command, n]) => `${command} ${Number.isInteger(n) ? n : n.toFixed(2)}`)
        .join(', ');
      console.log(
        `    ${kind.padEnd(26)} ×${String(t.count).padEnd(4)} ${t.meanMs.toFixed(2).padStart(6)} ms  ${requests}`,
      );
    }
    if (part.profile) {
      console.log("  CPU profile of stepthread's timed runs, by part (bench/profile-breakdown.ts):");
      for (const name of PARTS)
        console.log(`    ${name.padEnd(46)} ${(100 * part.profile[name]).toFixed(0).padStart(3)} %`);
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const onlyIndex = process.argv.indexOf('--only');
  const only = onlyIndex >= 0 ? (process.argv[onlyIndex + 1] as Workload) : undefined;
  const profileIndex = process.argv.indexOf('--profile');
  const profileDir = profileIndex >= 0 ? process.argv[profileIndex + 1] : undefined;
  const compareIndex = process.argv.indexOf('--compare');
  const compareWith = compareIndex >= 0 ? process.argv[compareIndex + 1] : undefined;
  const figures = await benchControlSteps({
    runs: argument('--runs', 9),
    turns: argument('--turns', 10),
    messages: argument('--messages', 10),
    ...(only ? { only } : {}),
    withoutLangGraph: process.argv.includes('--no-langgraph'),
    ...(compareWith ? { compareWith } : {}),
    ...(profileDir ? { profileDir } : {}),
  });
  if (process.argv.includes('--json')) console.log(JSON.stringify(figures, null, 2));
  else printFigures(figures);
}
