/**
 * `stepthread runs [--status S] [--workflow ID] [--limit N] [--json] [--data-dir <dir>] [--stack NAME]
 * [--prefix PREFIX]`: executions newest first. Locally, every execution in the data directory's stores,
 * an interrupted one (its local process gone) shown as INTERRUPTED with the command that resumes it.
 * On a deployed stack (`--stack`, or AWS_ENDPOINT_URL / STEPTHREAD_TARGET=aws as for the other
 * commands), the executions Step Functions lists for the stack's state machines, with what the table
 * adds (cli/deployed/runs.ts). An execution a run continued in (continue-as-new) is its own row,
 * linked to the one before and after it.
 */
import type { Command } from 'commander';
import type { StepthreadError } from '../../engine/errors.ts';
import { resolveAwsTarget } from '../../functions/aws/target.ts';
import { mapBounded } from '../../functions/bounded.ts';
import { listRuns } from '../../functions/local/run-registry.ts';
import type { TableRef } from '../../functions/stores/dynamo-items.ts';
import { createExecutionIndex } from '../../functions/stores/execution-index.ts';
import { createSpendStore } from '../../functions/stores/spend-store.ts';
import { createThreadStore } from '../../functions/stores/thread-store.ts';
import { type AwsCost, awsCostOfRun } from '../aws-cost.ts';
import { tableLines } from '../format.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  commandForm,
  type DataDirOption,
  dataDirArgument,
  NO_CACHE_OPTION_HELP,
  STACK_OPTION_HELP,
  withStores,
} from '../local-session.ts';
import { type RunCost, runCostOf } from '../run-cost.ts';
import { parseLimit, parseStatusFilter, STATUS_FILTER_HELP } from '../run-filters.ts';
import type { DeployedServices } from './start.ts';

export interface RunsOptions extends DataDirOption {
  status?: string;
  workflow?: string;
  limit?: string;
  json?: boolean;
  /** Deployed stack: its state machines are named `<prefix>-<workflowId>`. */
  prefix?: string;
}

/** On a deployed stack without --limit: the newest this many (a stack may hold millions). */
export const DEPLOYED_DEFAULT_LIMIT = 100;

/** One row of `runs --json`, local or deployed (the deployed fields are absent locally). */
export interface RunsJsonEntry {
  executionId: string;
  workflowId: string;
  status: string;
  startTime: string;
  endTime?: string;
  /**
   * End − start; for an interrupted local run, its last activity − start; now − start for a run
   * still going. Milliseconds.
   */
  durationMs: number;
  rootThreadId?: string;
  /** The command that resumes an interrupted local run (with `--answers` for the questions it stopped at). */
  resume?: string;
  /** An interrupted local run: when it last did anything (a step, a question, its process taking it). */
  lastActivityTime?: string;
  continuedFrom?: string;
  continuedAs?: string;
  /** Deployed: how Step Functions sees the execution, and its page in the Step Functions console. */
  stepFunctionsStatus?: string;
  consoleUrl?: string;
  /** Deployed: the state machine version the execution runs (pinned to it from its start). */
  stateMachineVersion?: number;
  /** `--json`: what the whole run spent (every thread and execution of it) and its budget. */
  cost?: RunCost;
  /** `--json`: what the run costs on AWS, deployed, estimated from its steps (cli/aws-cost.ts). */
  awsCost?: AwsCost;
}

/** Runs whose AWS side `runs --json` estimates at once: each estimate waits on a few store requests. */
export const AWS_COST_CONCURRENCY = 8;

/**
 * The entries with their runs' costs, only for `--json`, in their order: the model side from the
 * spend items (one BatchGetItem per 100 runs), the AWS side from each run's steps (a Query per thread
 * of the run), AWS_COST_CONCURRENCY runs at a time.
 */
export async function withCosts(
  entries: RunsJsonEntry[],
  clients: TableRef,
  json: boolean | undefined,
): Promise<RunsJsonEntry[]> {
  if (!json) return entries;
  const roots = entries.flatMap((entry) => (entry.rootThreadId === undefined ? [] : [entry.rootThreadId]));
  const spends = await createSpendStore(clients).getMany(roots);
  const stores = { threads: createThreadStore(clients), executions: createExecutionIndex(clients) };
  return mapBounded(entries, AWS_COST_CONCURRENCY, async (entry) => {
    if (entry.rootThreadId === undefined) return entry;
    const record = await stores.executions.getExecution(entry.executionId).catch(() => undefined);
    const awsCost = record && (await awsCostOfRun(stores, record));
    return {
      ...entry,
      cost: runCostOf(spends.get(entry.rootThreadId)),
      ...(awsCost ? { awsCost } : {}),
    };
  });
}

/** Up to its end, or for an interrupted run its last activity (its process is gone), else now. */
function durationOf(
  run: { startTime: string; endTime?: string; lastActivityTime?: string },
  now: number,
): number {
  const until = run.endTime ?? run.lastActivityTime;
  const end = until === undefined ? now : Date.parse(until);
  return Math.max(0, end - Date.parse(run.startTime));
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

export function printRuns(entries: readonly RunsJsonEntry[], json: boolean | undefined, io: CliIo): void {
  if (json) {
    io.stdout(`${JSON.stringify(entries, null, 2)}\n`);
    return;
  }
  if (entries.length === 0) {
    io.stdout('no runs\n');
    return;
  }
  // A deployed stack's executions run pinned state machine versions: the column says which.
  const versioned = entries.some((run) => run.stateMachineVersion !== undefined);
  const rows = entries.map((run) => [
    run.executionId,
    run.workflowId,
    ...(versioned ? [run.stateMachineVersion === undefined ? '-' : String(run.stateMachineVersion)] : []),
    run.status,
    run.startTime,
    formatDuration(run.durationMs),
    run.rootThreadId ?? '-',
  ]);
  const header = [
    'EXECUTION',
    'WORKFLOW',
    ...(versioned ? ['VERSION'] : []),
    'STATUS',
    'STARTED',
    'DURATION',
    'ROOT THREAD',
  ];
  const [headerLine, ...lines] = tableLines(header, rows);
  io.stdout(headerLine!);
  for (const [i, line] of lines.entries()) {
    io.stdout(line);
    const { resume, continuedFrom, continuedAs } = entries[i]!;
    if (resume) io.stdout(`  ↳ resume with: ${resume}\n`);
    if (continuedFrom) io.stdout(`  ↳ continues ${continuedFrom}\n`);
    if (continuedAs) io.stdout(`  ↳ continued in ${continuedAs}\n`);
  }
}

/** Whether `runs` reads a deployed stack, and the environment the stores are opened with. */
function deployedTarget(options: RunsOptions, io: CliIo): { deployed: boolean; io: CliIo } {
  const env = io.env ?? process.env;
  const target = resolveAwsTarget(env, { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' });
  if (target.kind !== 'embedded') return { deployed: true, io };
  // Naming a stack means AWS itself when no endpoint says otherwise (as `dev --target aws` does).
  if (options.stack !== undefined)
    return { deployed: true, io: { ...io, env: { ...env, STEPTHREAD_TARGET: 'aws' } } };
  return { deployed: false, io };
}

export async function runRuns(
  options: RunsOptions,
  io: CliIo,
  services: DeployedServices = {},
): Promise<number> {
  const chosen = deployedTarget(options, io);
  let limit: number | undefined;
  let wanted: string | undefined;
  try {
    limit = parseLimit(options.limit);
    wanted = parseStatusFilter(options.status, chosen.deployed ? 'deployed' : 'local');
  } catch (error) {
    const { code, message } = error as StepthreadError;
    io.stderr(`stepthread: ${code}: ${message}\n`);
    return EXIT.usage;
  }
  if (chosen.deployed) return listDeployed(options, chosen.io, services, { wanted, limit });
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot list runs (${session.location})` : 'cannot open the stores'),
    async (session) => {
      const now = Date.now();
      const runs = (await listRuns(session.clients, commandForm(io, dataDirArgument(options))))
        .filter((run) => wanted === undefined || run.status === wanted)
        .filter((run) => options.workflow === undefined || run.workflowId === options.workflow)
        .slice(0, limit);
      printRuns(
        await withCosts(
          runs.map((run) => ({ ...run, durationMs: durationOf(run, now) })),
          session.clients,
          options.json,
        ),
        options.json,
        io,
      );
      return EXIT.ok;
    },
  );
}

async function listDeployed(
  options: RunsOptions,
  io: CliIo,
  services: DeployedServices,
  filters: { wanted: string | undefined; limit: number | undefined },
): Promise<number> {
  // Loaded here: a local listing needs neither the Step Functions client nor these modules.
  const [{ deployedSfn, NO_DEPLOYED_STACK }, { listDeployedRuns }, { createExecutionIndex }] =
    await Promise.all([
      import('./start.ts'),
      import('../deployed/runs.ts'),
      import('../../functions/stores/execution-index.ts'),
    ]);
  const sfn = deployedSfn(io, services);
  if (sfn === undefined) {
    io.stderr(`stepthread: ${NO_DEPLOYED_STACK}\n`);
    return EXIT.usage;
  }
  const prefix = options.prefix ?? (io.env ?? process.env).STEPTHREAD_NAME_PREFIX ?? 'stepthread';
  const limit = filters.limit ?? DEPLOYED_DEFAULT_LIMIT;
  return withStores(
    options,
    io,
    (session) => (session ? `cannot list runs (${session.location})` : 'cannot open the stores'),
    async (session) => {
      const now = Date.now();
      const result = await listDeployedRuns({
        sfn,
        executions: createExecutionIndex(session.clients),
        prefix,
        ...(options.workflow === undefined ? {} : { workflowIds: [options.workflow] }),
        ...(filters.wanted === undefined ? {} : { status: filters.wanted }),
        limit,
      });
      if (result.stateMachines.length === 0) {
        const named = options.workflow === undefined ? `${prefix}-*` : `${prefix}-${options.workflow}`;
        io.stderr(`note: no state machine named ${named} here: is the stack deployed, and --prefix right?\n`);
      }
      for (const machine of result.skipped) {
        io.stderr(
          `note: ${machine.stateMachineArn} is EXPRESS: Step Functions does not list its executions\n`,
        );
      }
      printRuns(
        await withCosts(
          result.runs.map((run) => ({ ...run, durationMs: durationOf(run, now) })),
          session.clients,
          options.json,
        ),
        options.json,
        io,
      );
      if (filters.limit === undefined && result.runs.length === limit) {
        io.stderr(`note: the newest ${limit} executions; --limit N for more\n`);
      }
      return EXIT.ok;
    },
  );
}

export function registerRuns(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  program
    .command('runs')
    .description('list executions, newest first, locally or on a deployed stack (INTERRUPTED: resume it)')
    .option('--status <status>', STATUS_FILTER_HELP)
    .option('--workflow <id>', 'only runs of this workflow id')
    .option('--limit <n>', `at most this many (deployed: default ${DEPLOYED_DEFAULT_LIMIT})`)
    .option('--json', 'print the list as JSON')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', `list a deployed stack's executions: the ${STACK_OPTION_HELP}`)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .option(
      '--prefix <prefix>',
      'deployed: the state machine name prefix (default: $STEPTHREAD_NAME_PREFIX or "stepthread")',
    )
    .action(async (options: RunsOptions) => {
      setExit(await runRuns(options, io, services));
    });
}
