/**
 * `stepthread rerun --failed --from <nodeId> [--workflow <id>] [--since <duration|time>] [edits as copy]
 * [--yes] [--json] [--concurrency <n>] [--data-dir <dir> | --stack <name>]`: after a fix, runs many
 * failed runs again from a node. Each matching failed local run's root thread is copied from that node
 * with the edits (as `copy --from … --set … --node-config …`), and the copies run on this machine, a
 * few at a time, each with the workflow and answers its source run recorded (and the workflow edits).
 * With --stack, the stack's failed executions are copied there and started on their state machines
 * (rerun-stack.ts). A dry run by default: it lists what it would copy, each copy checked without
 * writing it; `--yes` does it and prints each run's old status → new status.
 */
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { CopyEdit } from '../../engine/thread/copy-edits.ts';
import { CopyEditRefused, workflowForThread } from '../../engine/thread/copy-workflow-edits.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { AwsClients } from '../../functions/aws/clients.ts';
import { mapBounded } from '../../functions/bounded.ts';
import {
  detailsOfRun,
  getLocalRun,
  type LocalRunRecord,
  listRuns,
  recordLocalRun,
  releaseLocalRun,
} from '../../functions/local/run-registry.ts';
import {
  createLocalRuntime,
  type LocalRuntime,
  type PreparedWorkflow,
  runnableStartOf,
} from '../../functions/local/runtime.ts';
import { canonicalJson } from '../../functions/stores/canonical-json.ts';
import { fileAnswers } from '../answers.ts';
import { addCopyEditOptions, type CopyEditOptions, copyEditsOfOptions } from '../copy-edit-options.ts';
import { formatCodedError, tableLines, visible } from '../format.ts';
import { givenOnce } from '../given-once.ts';
import { type CliIo, EXIT } from '../io.ts';
import { type DataDirOption, NO_CACHE_OPTION_HELP, withStores } from '../local-session.ts';
import { parseDuration } from '../retention.ts';
import type { DeployedServices } from './start.ts';

export interface RerunOptions extends DataDirOption, CopyEditOptions {
  failed?: boolean;
  from: string;
  workflow?: string;
  since?: string;
  yes?: boolean;
  json?: boolean;
  concurrency?: string;
  /** On a stack: `--no-wait` (false) prints the copies RUNNING once started. */
  wait?: boolean;
  /** On a stack: the state machine name prefix. */
  prefix?: string;
  /** On a stack: how often a started copy's execution is looked at (tests). */
  pollMs?: number;
}

/** How many copies run at once by default. */
export const DEFAULT_RERUN_CONCURRENCY = 4;

/** One failed run, and what became of it (or would). */
export interface RerunEntry {
  executionId: string;
  workflowId: string;
  rootThreadId: string;
  /** The source run's status: FAILED. */
  status: string;
  /** Why the source run failed (its root thread's last error). */
  error?: CodedError;
  /** Why it is not rerun: the copy point or an edit refused, no recorded workflow. */
  skipped?: CodedError;
  /** With --yes: the copy, its execution, and how that ended. */
  copyThreadId?: string;
  newExecutionId?: string;
  newStatus?: string;
  newError?: CodedError;
}

/** `rerun --json`: exactly these keys. */
export interface RerunJson {
  dryRun: boolean;
  from: string;
  edits: CopyEdit[];
  runs: RerunEntry[];
}

export async function runRerun(
  options: RerunOptions,
  io: CliIo,
  now: Date = new Date(),
  services: DeployedServices = {},
): Promise<number> {
  let since: Date | undefined;
  let concurrency: number;
  try {
    if (!options.failed) {
      throw new StepthreadError(
        'INVALID_RUNS_FILTER',
        'rerun takes --failed: it reruns the failed runs (narrowed by --workflow and --since)',
      );
    }
    since = options.since === undefined ? undefined : sinceOf(options.since, now);
    concurrency = concurrencyOf(options.concurrency);
  } catch (error) {
    const { code, message } = error as StepthreadError;
    io.stderr(`stepthread: ${code}: ${visible(message)}\n`);
    return EXIT.usage;
  }
  const parsed = await copyEditsOfOptions(options, io);
  if (!parsed.ok) return parsed.exitCode;
  const { edits } = parsed;
  if (options.stack !== undefined || services.sfn !== undefined) {
    return withStores(
      { ...options, mustExist: true },
      io,
      (session) => (session ? 'cannot rerun the failed runs' : 'cannot open the stores'),
      async (session) => {
        const { rerunOnStack } = await import('./rerun-stack.ts');
        const entries = await rerunOnStack(session, {
          options,
          edits,
          since,
          concurrency,
          io,
          services,
          onDone: (entry, done, of) => {
            if (!options.json) io.stderr(progressLine(entry, done, of));
          },
        });
        return reportRerun(options, edits, entries, concurrency, io, true);
      },
    );
  }
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? 'cannot rerun the failed runs' : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const failed = (await listRuns(session.clients)).filter(
        (run) =>
          run.status === 'FAILED' &&
          run.rootThreadId !== undefined &&
          (options.workflow === undefined || run.workflowId === options.workflow) &&
          (since === undefined || Date.parse(run.startTime) >= since.getTime()),
      );
      const plans = await Promise.all(
        failed.map((run) =>
          planOf(
            runtime,
            session.clients,
            run.executionId,
            run.workflowId,
            run.rootThreadId!,
            options.from,
            edits,
          ),
        ),
      );
      const entries = plans.map((plan) => plan.entry);
      if (options.yes) {
        let done = 0;
        const runnable = plans.filter((plan) => plan.entry.skipped === undefined);
        const prepared = new Map<string, PreparedWorkflow>();
        await mapBounded(runnable, concurrency, async (plan) => {
          await rerunOne(runtime, session.clients, plan, options.from, edits, prepared);
          done += 1;
          if (!options.json) io.stderr(progressLine(plan.entry, done, runnable.length));
        });
      }
      return reportRerun(options, edits, entries, concurrency, io, false);
    },
  );
}

function progressLine(entry: RerunEntry, done: number, of: number): string {
  return `rerun ${done}/${of}: ${entry.executionId} → ${entry.newStatus}${entry.newError ? ` (${entry.newError.code})` : ''}\n`;
}

/**
 * Prints the report (table or JSON); exit 0 when every run was planned and, with --yes, ended
 * COMPLETED (or, `--no-wait` on a stack, started).
 */
function reportRerun(
  options: RerunOptions,
  edits: CopyEdit[],
  entries: RerunEntry[],
  concurrency: number,
  io: CliIo,
  onStack: boolean,
): number {
  const report: RerunJson = { dryRun: !options.yes, from: options.from, edits, runs: entries };
  if (options.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  else printRerun(report, concurrency, io, onStack);
  const wanted = options.wait === false ? 'RUNNING' : 'COMPLETED';
  const allWell = entries.every(
    (entry) => entry.skipped === undefined && (!options.yes || entry.newStatus === wanted),
  );
  return allWell ? EXIT.ok : EXIT.invalid;
}

/** `--since`: a duration back from now (`2h`, `1d12h`), or a time (`2026-03-01`, ISO 8601). */
function sinceOf(text: string, now: Date): Date {
  if (/^\d{4}-\d{2}-\d{2}/.test(text.trim())) {
    const at = Date.parse(text);
    if (Number.isFinite(at)) return new Date(at);
  }
  try {
    return new Date(now.getTime() - parseDuration(text));
  } catch {
    throw new StepthreadError(
      'INVALID_DURATION',
      `--since takes a duration back from now such as 30m, 12h, 2d (or several: 1d12h), or a time such as 2026-03-01 or 2026-03-01T09:00:00Z, got ${JSON.stringify(text)}`,
    );
  }
}

function concurrencyOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_RERUN_CONCURRENCY;
  if (!/^\s*\d+\s*$/.test(text) || Number(text) < 1 || Number(text) > 64) {
    throw new StepthreadError(
      'INVALID_RUNS_FILTER',
      `--concurrency takes a whole number from 1 to 64, got ${text}`,
    );
  }
  return Number(text);
}

interface RerunPlan {
  readonly entry: RerunEntry;
  /** The workflow the source run recorded, its answers and file (absent when skipped). */
  readonly workflow?: Workflow;
  readonly record?: LocalRunRecord;
  readonly answers?: unknown;
}

/** One failed run: why it failed, and whether its copy can be made (checked, nothing written). */
async function planOf(
  runtime: LocalRuntime,
  clients: AwsClients,
  executionId: string,
  workflowId: string,
  rootThreadId: string,
  from: string,
  edits: readonly CopyEdit[],
): Promise<RerunPlan> {
  const { thread } = await runtime.stores.threads.getThread(rootThreadId);
  const lastError = thread.errors.at(-1);
  const entry: RerunEntry = {
    executionId,
    workflowId,
    rootThreadId,
    status: 'FAILED',
    ...(lastError === undefined ? {} : { error: lastError }),
  };
  const record = await localRecordOf(clients, executionId, thread);
  if (record === undefined) {
    entry.skipped = {
      code: 'RUN_NOT_RESUMABLE',
      message: `execution ${executionId} has no local record of its workflow (it ran elsewhere)`,
    };
    return { entry };
  }
  const details = await detailsOfRun(clients, record);
  const workflow = details.workflow;
  if (workflow === undefined) {
    entry.skipped = { code: 'RUN_NOT_RESUMABLE', message: `execution ${executionId} records no workflow` };
    return { entry };
  }
  try {
    await runtime.copyThread(rootThreadId, copyOptionsOf(from, edits, workflow, true));
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    entry.skipped = error instanceof CopyEditRefused ? error.errors[0]! : error.toJSON();
    return { entry };
  }
  return { entry, workflow, record, ...(details.answers === undefined ? {} : { answers: details.answers }) };
}

function copyOptionsOf(from: string, edits: readonly CopyEdit[], workflow: Workflow, dryRun: boolean) {
  return {
    fromNodeId: from,
    ...(edits.length > 0 ? { edits } : {}),
    workflow,
    ...(dryRun ? { dryRun } : {}),
  };
}

/** The local record of the run a thread ran in: under the execution, else the run's first. */
async function localRecordOf(
  clients: AwsClients,
  executionId: string,
  thread: Thread,
): Promise<LocalRunRecord | undefined> {
  for (const id of [executionId, thread.metadata.firstExecutionId]) {
    if (typeof id !== 'string') continue;
    const record = await getLocalRun(clients, id);
    if (record !== undefined) return record;
  }
  return undefined;
}

/**
 * Copies the run's root thread from the node with the edits and runs the copy to its end, recorded
 * as a local run (so `runs` lists it and `resume` goes on with it should this process stop), with the
 * answers its source run was given.
 */
async function rerunOne(
  runtime: LocalRuntime,
  clients: AwsClients,
  plan: RerunPlan,
  from: string,
  edits: readonly CopyEdit[],
  prepared: Map<string, PreparedWorkflow>,
): Promise<void> {
  const { entry } = plan;
  try {
    const copy = await runtime.copyThread(
      entry.rootThreadId,
      copyOptionsOf(from, edits, plan.workflow!, false),
    );
    entry.copyThreadId = copy.id;
    const startNodeId = runnableStartOf(copy);
    const workflow = workflowForThread(plan.workflow!, copy);
    // Compiled once per workflow (as edited) and start node, then shared by the copies.
    const key = `${startNodeId}\n${canonicalJson(workflow)}`;
    let machine = prepared.get(key);
    if (machine === undefined) {
      machine = runtime.prepare(workflow, {
        startNodeId,
        ...(plan.record?.continueAfterEvents === undefined
          ? {}
          : { continueAfterEvents: plan.record.continueAfterEvents }),
      });
      prepared.set(key, machine);
    }
    const executionId = randomUUID();
    entry.newExecutionId = executionId;
    const held = await recordLocalRun(clients, {
      executionId,
      workflow,
      ...(plan.record?.file === undefined ? {} : { file: plan.record.file }),
      ...(plan.answers === undefined ? {} : { answers: plan.answers }),
      ...(plan.record?.continueAfterEvents === undefined
        ? {}
        : { continueAfterEvents: plan.record.continueAfterEvents }),
      now: new Date().toISOString(),
    });
    try {
      const outcome = await machine.runThread(copy.id, {
        executionId,
        ...(plan.answers === undefined ? {} : { answerInteraction: fileAnswers(plan.answers) }),
        ...(plan.record?.file === undefined ? {} : { workflowDir: dirname(plan.record.file) }),
      });
      entry.newStatus = outcome.status;
      if (outcome.status !== 'COMPLETED' && outcome.error) entry.newError = outcome.error;
    } finally {
      await releaseLocalRun(clients, held);
    }
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    entry.newStatus = entry.newStatus ?? 'FAILED';
    entry.newError = error.toJSON();
  }
}

function printRerun(report: RerunJson, concurrency: number, io: CliIo, onStack: boolean): void {
  const { runs } = report;
  if (runs.length === 0) {
    io.stdout('no failed runs match\n');
    return;
  }
  const header = report.dryRun
    ? ['EXECUTION', 'WORKFLOW', 'STATUS', 'FAILED WITH', 'PLAN']
    : ['EXECUTION', 'WORKFLOW', 'OLD → NEW', 'COPY', 'NEW EXECUTION'];
  const rows = runs.map((run) => rowOf(run).map((cell) => visible(cell)));
  function rowOf(run: RerunEntry): string[] {
    const failedWith = run.error
      ? `${run.error.code}${run.error.nodeId ? ` at ${run.error.nodeId}` : ''}`
      : '-';
    if (report.dryRun) {
      return [
        run.executionId,
        run.workflowId,
        run.status,
        failedWith,
        run.skipped
          ? `skip: ${run.skipped.code}`
          : `copy from ${report.from} and ${onStack ? 'start' : 'run'}`,
      ];
    }
    const next = run.skipped
      ? `skipped (${run.skipped.code})`
      : `${run.newStatus ?? '?'}${run.newError ? ` (${run.newError.code})` : ''}`;
    return [
      run.executionId,
      run.workflowId,
      `${run.status} → ${next}`,
      run.copyThreadId ?? '-',
      run.newExecutionId ?? '-',
    ];
  }
  for (const line of tableLines(header, rows)) io.stdout(line);
  const skipped = runs.filter((run) => run.skipped !== undefined);
  for (const run of skipped) io.stderr(`${run.executionId}: ${formatCodedError(run.skipped!)}\n`);
  const todo = runs.length - skipped.length;
  const editCount = report.edits.length;
  const withEdits = editCount === 0 ? '' : ` with ${editCount} edit${editCount === 1 ? '' : 's'}`;
  if (report.dryRun) {
    io.stdout(
      `dry run: ${todo} of ${runs.length} failed run${runs.length === 1 ? '' : 's'} would be copied from ${report.from}${withEdits} and ${onStack ? 'started on the stack' : 'run'} (${concurrency} at a time); add --yes to do it\n`,
    );
    return;
  }
  const counts = new Map<string, number>();
  for (const run of runs) {
    const status = run.skipped ? 'skipped' : (run.newStatus ?? '?');
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  const summary = [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
  io.stdout(
    `${todo} run${todo === 1 ? '' : 's'} copied from ${report.from}${withEdits} and ${onStack ? 'started on the stack' : 'run'}: ${summary}\n`,
  );
}

export function registerRerun(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  const command = program
    .command('rerun')
    .description(
      'copy each failed run from a node (with edits, as copy) and run the copies, locally or on a deployed stack; a dry run unless --yes',
    )
    .option('--failed', 'rerun the failed runs (required)')
    .requiredOption(
      '--from <nodeId>',
      'the node each copy runs from (the state before its latest run)',
      givenOnce('--from', 'each copy runs from one node'),
    )
    .option('--workflow <id>', 'only runs of this workflow id')
    .option(
      '--since <duration|time>',
      'only runs started since: 2h, 1d12h, or a time such as 2026-03-01T09:00:00Z',
    );
  addCopyEditOptions(command)
    .option('--yes', 'do it: copy and run (without it, only list what would be done)')
    .option('--concurrency <n>', `how many copies run at once (default ${DEFAULT_RERUN_CONCURRENCY})`)
    .option('--json', 'print {dryRun, from, edits, runs} as JSON')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option(
      '--stack <name>',
      "the failed executions of this deployed stack: each copy is written to its table and started on its workflow's state machine",
    )
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .option(
      '--no-wait',
      'with --stack: print the copies RUNNING once started, instead of waiting for each to end',
    )
    .option(
      '--prefix <prefix>',
      'with --stack: state machine name prefix (default: $STEPTHREAD_NAME_PREFIX or "stepthread")',
    )
    .action(async (options: RerunOptions) => {
      setExit(await runRerun(options, io, new Date(), services));
    });
}
