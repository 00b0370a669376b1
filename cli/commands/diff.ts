/**
 * `stepthread diff <threadA> <threadB> [--json]`: two runs side by side. Their steps are aligned by
 * node and occurrence (engine/thread/step-alignment.ts); the report says where they part, which node outputs
 * differ (both values), which variables differ at the end, their final outputs, and per side its
 * steps, status, tokens, cost and duration. A copy against its source (or two copies of one thread)
 * compares the steps after the copy point: the steps before it are the same records on both sides.
 * Each side's step records are read a page at a time and kept as hashes; only the values of the
 * differences listed are read back (each up to INSPECT_MAX_READ_BYTES, as inspect reads them).
 */
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import {
  type AlignedStep,
  alignByOccurrence,
  differingSteps,
  partingOf,
  type Segment,
  type StepDigest,
  sharedPositions,
} from '../../engine/thread/step-alignment.ts';
import type { ModelUsage, Thread } from '../../engine/thread/types.ts';
import { commandLine } from '../../functions/local/interaction-hints.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { contentHash } from '../../functions/stores/canonical-json.ts';
import { copySourceOf, type StepRecord } from '../../functions/stores/thread-store.ts';
import { hydrateAll } from '../../functions/stores/value-store.ts';
import type { DiffReport, DiffSide, DiffStep, ForkDiff, KeptStep } from '../diff-report.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  commandForm,
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  STACK_OPTION_HELP,
  storeArguments,
  withStores,
} from '../local-session.ts';
import { addUsage, formatUsd, runCostOf } from '../run-cost.ts';
import { INSPECT_MAX_READ_BYTES, previewValue } from './inspect.ts';

export type { DiffReport, DiffSide, DiffStep, ForkDiff, KeptStep };

export interface DiffOptions extends DataDirOption {
  json?: boolean;
}

type Runtime = ReturnType<typeof createLocalRuntime>;

/** Step records read per Query while digesting a history. */
const PAGE_STEPS = 200;
/** Differing steps listed with their values (the rest are counted). */
export const MAX_LISTED_OUTPUTS = 100;

/** An execution id stands for its root thread; an unknown id is EXECUTION_NOT_FOUND, as in inspect. */
async function threadOf(runtime: Runtime, id: string, runsCommand: string): Promise<Thread> {
  let threadId = id;
  try {
    threadId = (await runtime.stores.executions.getExecution(id)).rootThreadId;
  } catch (error) {
    if (!(error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND')) throw error;
  }
  try {
    return (await runtime.stores.threads.getThread(threadId)).thread;
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'THREAD_NOT_FOUND') {
      throw new StepthreadError(
        'EXECUTION_NOT_FOUND',
        `execution or thread ${id} not found (${runsCommand} lists the executions here)`,
      );
    }
    throw error;
  }
}

/** The thread's history parts, oldest first: its copy source's (recursively) up to the copy, then its own. */
async function segmentsOf(runtime: Runtime, thread: Thread, steps: number): Promise<Segment[]> {
  const source = copySourceOf(thread);
  const before = source
    ? await segmentsOf(
        runtime,
        (await runtime.stores.threads.getCopySource(source.threadId)).thread,
        source.step,
      )
    : [];
  return [...before, { threadId: thread.id, steps }];
}

/**
 * What is compared of a step: its status and output, but for the ids of the child threads a FORK or
 * a list starts (new threads on each run, so they always differ; the children are compared by path).
 */
function hashOf(status: string, output: unknown): string {
  const compared =
    output !== null && typeof output === 'object' && !Array.isArray(output) && 'childThreadIds' in output
      ? { ...output, childThreadIds: undefined }
      : output;
  return contentHash({ status, output: compared ?? null });
}

/**
 * Each step after position `from`, as a digest (a page of records at a time), and its model usage
 * summed; with `keep`, the first `keep` steps' outputs and durations too (the console's Compare view).
 */
async function digestsOf(
  runtime: Runtime,
  segments: readonly Segment[],
  after: number,
  keep = 0,
): Promise<{ digests: StepDigest[]; usage: ModelUsage | undefined; kept: KeptStep[] }> {
  const digests: StepDigest[] = [];
  const kept: KeptStep[] = [];
  let usage: ModelUsage | undefined;
  let start = 0;
  for (const segment of segments) {
    const first = Math.max(1, after - start + 1);
    for (let from = first; from <= segment.steps; from += PAGE_STEPS) {
      const to = Math.min(segment.steps, from + PAGE_STEPS - 1);
      const records = await runtime.stores.threads.readSteps(segment.threadId, { from, to });
      const outputs = await outputsOf(runtime, records);
      for (const [i, record] of records.entries()) {
        const { result } = record;
        digests.push({
          nodeId: result.nodeId,
          nodeType: result.nodeType,
          status: result.status,
          step: record.step,
          position: start + record.step,
          threadId: segment.threadId,
          hash: hashOf(result.status, outputs[i]),
        });
        if (kept.length < keep) {
          kept.push({
            ...(outputs[i] === undefined ? {} : { output: outputs[i] }),
            ...(result.error ? { error: result.error } : {}),
            durationMs: Date.parse(result.endedAt) - Date.parse(result.startedAt),
          });
        }
        if (result.usage) usage = addUsage(usage, result.usage);
      }
    }
    start += segment.steps;
  }
  return { digests, usage, kept };
}

/** The records' outputs read back from the value store (one parallel round; over 1 MB stays a reference). */
async function outputsOf(runtime: Runtime, records: readonly StepRecord[]): Promise<unknown[]> {
  const { data } = await hydrateAll(
    runtime.stores.values,
    records.map((record) => ({ output: record.result.output })),
    { maxBytes: INSPECT_MAX_READ_BYTES },
  );
  return data.map((slot) => slot.output);
}

/** A digested step with its output read back. */
async function stepShown(runtime: Runtime, digest: StepDigest | undefined): Promise<DiffStep | null> {
  if (digest === undefined) return null;
  const record = await runtime.stores.threads.getStep(digest.threadId, digest.step);
  const [output] = record ? await outputsOf(runtime, [record]) : [];
  return {
    step: digest.step,
    position: digest.position,
    nodeId: digest.nodeId,
    nodeType: digest.nodeType,
    status: digest.status,
    ...(output === undefined ? {} : { output }),
  };
}

/** The thread with its input, output and variables read back (over 1 MB stays a reference). */
async function withValues(runtime: Runtime, thread: Thread): Promise<Thread> {
  const { data } = await hydrateAll(
    runtime.stores.values,
    [{ input: thread.input, output: thread.output, variables: thread.variables }],
    { maxBytes: INSPECT_MAX_READ_BYTES },
  );
  const [values] = data;
  return { ...thread, ...values } as Thread;
}

async function sideOf(
  runtime: Runtime,
  thread: Thread,
  steps: number,
  usage: ModelUsage | undefined,
): Promise<DiffSide> {
  const spend = await runtime.stores.spend?.get(thread.id);
  const {
    budget: _b,
    spent: _s,
    toolCalls: _t,
    ...cost
  } = runCostOf(
    spend ?? {
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      tokens: (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0),
      costNanoUsd: Math.round((usage?.costUsd ?? 0) * 1e9),
      modelCalls: usage?.modelCalls ?? 0,
      unpricedCalls: usage && usage.costUsd === undefined ? usage.modelCalls : 0,
      toolCalls: 0,
    },
  );
  const { metadata } = thread;
  return {
    threadId: thread.id,
    ...(metadata.executionId ? { executionId: metadata.executionId } : {}),
    workflowId: thread.workflowId,
    status: thread.status,
    steps,
    ...(typeof metadata.copiedFrom === 'string' ? { copiedFrom: metadata.copiedFrom } : {}),
    ...(typeof metadata.copiedAtStep === 'number' ? { copiedAtStep: metadata.copiedAtStep } : {}),
    startTime: thread.startTime,
    ...(thread.endTime
      ? { endTime: thread.endTime, durationMs: Date.parse(thread.endTime) - Date.parse(thread.startTime) }
      : {}),
    cost,
  };
}

/** Each variable by scope and name; a loop or subgraph scope (a list of frames) as one entry. */
function flatVariables(thread: Thread): Map<string, { scope: string; name: string; value: unknown }> {
  const flat = new Map<string, { scope: string; name: string; value: unknown }>();
  for (const [scope, values] of Object.entries(thread.variables ?? {})) {
    if (values === null || typeof values !== 'object') continue;
    if (Array.isArray(values)) {
      if (values.length > 0) flat.set(`${scope}`, { scope, name: scope, value: values });
      continue;
    }
    for (const [name, value] of Object.entries(values)) flat.set(`${scope}.${name}`, { scope, name, value });
  }
  return flat;
}

function variableDifferences(a: Thread, b: Thread): DiffReport['variables'] {
  const left = flatVariables(a);
  const right = flatVariables(b);
  const keys = [...new Set([...left.keys(), ...right.keys()])];
  return keys.flatMap((key) => {
    const x = left.get(key);
    const y = right.get(key);
    if (x && y && contentHash(x.value) === contentHash(y.value)) return [];
    const { scope, name } = (x ?? y)!;
    return [{ scope, name, ...(x ? { a: x.value } : {}), ...(y ? { b: y.value } : {}) }];
  });
}

/** Two threads' histories after the steps they share, digested. */
export interface ComparedHistories {
  threadA: Thread;
  threadB: Thread;
  segmentsA: Segment[];
  segmentsB: Segment[];
  /** Leading positions both share as the same records. */
  shared: number;
  a: Awaited<ReturnType<typeof digestsOf>>;
  b: Awaited<ReturnType<typeof digestsOf>>;
}

/**
 * Reads and digests two threads (or executions' root threads) for a diff; `keep` steps of each side
 * keep their outputs too.
 */
export async function compareHistories(
  runtime: Runtime,
  idA: string,
  idB: string,
  runsCommand = 'stepthread runs',
  keep = 0,
): Promise<ComparedHistories> {
  const [threadA, threadB] = [
    await threadOf(runtime, idA, runsCommand),
    await threadOf(runtime, idB, runsCommand),
  ];
  const segmentsA = await segmentsOf(runtime, threadA, threadA.step ?? 0);
  const segmentsB = await segmentsOf(runtime, threadB, threadB.step ?? 0);
  const shared = sharedPositions(segmentsA, segmentsB);
  const [a, b] = [
    await digestsOf(runtime, segmentsA, shared, keep),
    await digestsOf(runtime, segmentsB, shared, keep),
  ];
  return { threadA, threadB, segmentsA, segmentsB, shared, a, b };
}

/** The diff of threads (or executions' root threads) `idA` and `idB`. */
export async function buildDiffReport(
  runtime: Runtime,
  idA: string,
  idB: string,
  runsCommand = 'stepthread runs',
): Promise<DiffReport> {
  return diffReportOf(runtime, await compareHistories(runtime, idA, idB, runsCommand), runsCommand);
}

/** The diff report of two histories read by compareHistories. */
export async function diffReportOf(
  runtime: Runtime,
  histories: ComparedHistories,
  runsCommand = 'stepthread runs',
): Promise<DiffReport> {
  const { threadA, threadB, segmentsA, segmentsB, shared, a, b } = histories;
  const length = (segments: readonly Segment[]) => segments.reduce((sum, s) => sum + s.steps, 0);
  const parting = partingOf(a.digests, b.digests);
  const differing = differingSteps(alignByOccurrence(a.digests, b.digests));
  const listed = differing.slice(0, MAX_LISTED_OUTPUTS);
  const [valuesA, valuesB] = [await withValues(runtime, threadA), await withValues(runtime, threadB)];
  const lastSame = parting
    ? parting.position - 1
    : Math.max(shared, ...a.digests.map((d) => d.position), ...b.digests.map((d) => d.position));
  return {
    a: await sideOf(runtime, threadA, length(segmentsA), a.usage),
    b: await sideOf(runtime, threadB, length(segmentsB), b.usage),
    sharedSteps: shared,
    sameUpTo:
      lastSame < 1
        ? null
        : { position: lastSame, nodeId: await nodeAt(runtime, lastSame, a.digests, segmentsA) },
    partsAt: parting
      ? {
          reason: parting.reason,
          position: parting.position,
          a: await withOccurrence(await stepShown(runtime, parting.a), parting.occurrenceA),
          b: await withOccurrence(await stepShown(runtime, parting.b), parting.occurrenceB),
        }
      : null,
    outputs: await Promise.all(listed.map((entry) => outputDifference(runtime, entry))),
    ...(differing.length > listed.length ? { outputsNotShown: differing.length - listed.length } : {}),
    variables: variableDifferences(valuesA, valuesB),
    final: {
      same: contentHash(valuesA.output ?? null) === contentHash(valuesB.output ?? null),
      ...(valuesA.output === undefined ? {} : { a: valuesA.output }),
      ...(valuesB.output === undefined ? {} : { b: valuesB.output }),
    },
    forks: await forkDiffs(runtime, threadA, threadB, runsCommand),
  };
}

/** A thread's fork children (not copies), oldest first. */
async function forkChildrenOf(runtime: Runtime, thread: Thread): Promise<Thread[]> {
  const executionId = thread.metadata.executionId;
  if (executionId === undefined) return [];
  const listed = await runtime.stores.threads.listThreadsOfExecution(executionId);
  return listed
    .map((entry) => entry.thread)
    .filter(
      (child) =>
        child.metadata.parentThreadId === thread.id &&
        child.metadata.forkPathId !== undefined &&
        child.metadata.copiedFrom === undefined,
    )
    .sort((x, y) => x.startTime.localeCompare(y.startTime));
}

/** Each side's fork children paired by forkPathId and occurrence (a FORK in a loop runs a path again). */
async function forkDiffs(runtime: Runtime, a: Thread, b: Thread, runsCommand: string): Promise<ForkDiff[]> {
  const byPath = (children: readonly Thread[]) => {
    const paths = new Map<string, Thread[]>();
    for (const child of children) {
      const list = paths.get(child.metadata.forkPathId!) ?? [];
      list.push(child);
      paths.set(child.metadata.forkPathId!, list);
    }
    return paths;
  };
  const left = byPath(await forkChildrenOf(runtime, a));
  const right = byPath(await forkChildrenOf(runtime, b));
  const forks: ForkDiff[] = [];
  for (const forkPathId of new Set([...left.keys(), ...right.keys()])) {
    const x = left.get(forkPathId) ?? [];
    const y = right.get(forkPathId) ?? [];
    for (let i = 0; i < Math.max(x.length, y.length); i++) {
      const pair = { forkPathId, occurrence: i + 1, a: x[i]?.id ?? null, b: y[i]?.id ?? null };
      if (pair.a === null || pair.b === null) {
        forks.push({ ...pair, same: false });
        continue;
      }
      const { a: _a, b: _b, ...diff } = await buildDiffReport(runtime, pair.a, pair.b, runsCommand);
      forks.push({ ...pair, same: isSame(diff), diff });
    }
  }
  return forks;
}

function isSame(diff: Omit<DiffReport, 'a' | 'b'>): boolean {
  return (
    diff.partsAt === null &&
    diff.variables.length === 0 &&
    diff.final.same &&
    diff.forks.every((fork) => fork.same)
  );
}

async function withOccurrence(
  step: DiffStep | null,
  occurrence: number | undefined,
): Promise<(DiffStep & { occurrence: number }) | null> {
  return step === null ? null : { ...step, occurrence: occurrence ?? 1 };
}

async function outputDifference(
  runtime: Runtime,
  entry: AlignedStep,
): Promise<DiffReport['outputs'][number]> {
  return {
    nodeId: entry.nodeId,
    occurrence: entry.occurrence,
    a: await stepShown(runtime, entry.a),
    b: await stepShown(runtime, entry.b),
  };
}

/** The node at a position of A's history: a digest's, or (inside the shared steps) its record's. */
async function nodeAt(
  runtime: Runtime,
  position: number,
  digests: readonly StepDigest[],
  segments: readonly Segment[],
): Promise<string> {
  const digest = digests.find((d) => d.position === position);
  if (digest) return digest.nodeId;
  let start = 0;
  for (const segment of segments) {
    if (position <= start + segment.steps) {
      return (await runtime.stores.threads.getStep(segment.threadId, position - start))?.result.nodeId ?? '?';
    }
    start += segment.steps;
  }
  return '?';
}

function sideLine(label: string, side: DiffSide): string {
  const copy = side.copiedFrom ? `  copy of ${side.copiedFrom} at step ${side.copiedAtStep}` : '';
  const duration = side.durationMs === undefined ? '' : `, ${side.durationMs} ms`;
  const { cost } = side;
  return `${label} ${side.threadId}  ${side.status}  ${side.steps} steps, ${cost.tokens} tokens, ${formatUsd(cost.costUsd)}${duration}${copy}\n`;
}

function stepText(step: DiffStep | null): string {
  if (step === null) return '(no such step)';
  const status = step.status === 'COMPLETED' ? '' : ` ${step.status}`;
  return `${step.output === undefined ? '(no output)' : previewValue(step.output)}${status}`;
}

export function printDiff(report: DiffReport, io: CliIo): void {
  io.stdout(sideLine('a', report.a));
  io.stdout(sideLine('b', report.b));
  printDiffBody(report, io);
}

/** Everything under the sides' header lines. */
function printDiffBody(report: Omit<DiffReport, 'a' | 'b'>, io: CliIo): void {
  if (report.sharedSteps > 0) {
    const steps =
      report.sharedSteps === 1
        ? 'step is the same record'
        : `${report.sharedSteps} steps are the same records`;
    io.stdout(`the first ${steps} on both (the copy point)\n`);
  }
  const same = report.sameUpTo;
  io.stdout(same ? `same up to step ${same.position} (${same.nodeId})\n` : 'different from the first step\n');
  const parts = report.partsAt;
  if (parts === null) {
    io.stdout('no step differs\n');
  } else {
    const at = (step: DiffStep | null) => (step ? `${step.nodeId} (${step.nodeType})` : 'nothing');
    const how = {
      output: `${at(parts.a)} gave another output`,
      path: `a ran ${at(parts.a)}, b ran ${at(parts.b)}`,
      onlyA: `a ran ${at(parts.a)}, b had ended`,
      onlyB: `b ran ${at(parts.b)}, a had ended`,
    }[parts.reason];
    io.stdout(`parts at step ${parts.position}: ${how}\n`);
  }
  if (report.outputs.length > 0) io.stdout('node outputs that differ:\n');
  for (const entry of report.outputs) {
    io.stdout(`  ${entry.nodeId} #${entry.occurrence}\n`);
    io.stdout(`    a: ${stepText(entry.a)}\n`);
    io.stdout(`    b: ${stepText(entry.b)}\n`);
  }
  if (report.outputsNotShown) io.stdout(`  … ${report.outputsNotShown} more (--json lists the same)\n`);
  if (report.variables.length > 0) io.stdout('variables that differ at the end:\n');
  for (const variable of report.variables) {
    const shown = (has: boolean, value: unknown) => (has ? previewValue(value) : '(none)');
    io.stdout(`  ${variable.scope} ${variable.name}\n`);
    io.stdout(`    a: ${shown('a' in variable, variable.a)}\n`);
    io.stdout(`    b: ${shown('b' in variable, variable.b)}\n`);
  }
  if (report.final.same) {
    io.stdout(`final output: the same${'a' in report.final ? `: ${previewValue(report.final.a)}` : ''}\n`);
  } else {
    io.stdout('final output:\n');
    io.stdout(`  a: ${'a' in report.final ? previewValue(report.final.a) : '(none)'}\n`);
    io.stdout(`  b: ${'b' in report.final ? previewValue(report.final.b) : '(none)'}\n`);
  }
  for (const fork of report.forks) printFork(fork, io);
}

/** A fork child pair: alike in a line; else where it parts and what differs, indented. */
function printFork(fork: ForkDiff, io: CliIo): void {
  const which = `fork child ${fork.forkPathId}${fork.occurrence > 1 ? ` #${fork.occurrence}` : ''}`;
  if (fork.diff === undefined) {
    io.stdout(`${which}: only ${fork.a ? `a has it (${fork.a})` : `b has it (${fork.b})`}\n`);
    return;
  }
  if (fork.same) {
    io.stdout(`${which}: the same (${fork.a}, ${fork.b})\n`);
    return;
  }
  io.stdout(`${which}: ${fork.a} and ${fork.b} differ\n`);
  let text = '';
  printDiffBody(fork.diff, { ...io, stdout: (chunk: string) => (text += chunk) });
  for (const line of text.trimEnd().split('\n')) io.stdout(`  ${line}\n`);
}

export async function runDiff(idA: string, idB: string, options: DiffOptions, io: CliIo): Promise<number> {
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot diff ${idA} and ${idB} (${session.location})` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const form = commandForm(io, storeArguments(options));
      const report = await buildDiffReport(runtime, idA, idB, commandLine(form, 'runs'));
      if (options.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
      else printDiff(report, io);
      return EXIT.ok;
    },
  );
}

export function registerDiff(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('diff')
    .description(
      "compare two threads' runs: where they part, the node outputs and variables that differ, the final outputs, steps, tokens, cost and time",
    )
    .argument('<threadA>', 'a thread id (or an execution id: its root thread)')
    .argument('<threadB>', 'the thread to compare it with (a copy of it, or another run of the workflow)')
    .option('--json', 'print the report as JSON')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (threadA: string, threadB: string, options: DiffOptions) => {
      setExit(await runDiff(threadA, threadB, options, io));
    });
}
