/**
 * The executions of a deployed stack, newest first, for `stepthread runs` and `stepthread dev --target
 * aws`. Step Functions lists them (ListExecutions per state machine named `<prefix>-<workflowId>`,
 * newest first, a status filter applied by Step Functions where it selects exactly what was asked);
 * the table adds what only stepthread knows, read in one BatchGetItem per page: the root thread, how
 * the run ended for stepthread (a FAILED thread, a run CONTINUED in a new execution) and the links
 * between the executions of a run that continued. The cost grows with the executions shown, never
 * with the table's size (no Scan).
 */
import { ListExecutionsCommand, type ListExecutionsCommandOutput } from '@aws-sdk/client-sfn';
import { stateMachineVersionOf } from '../../functions/aws/state-machine-arns.ts';
import type {
  ExecutionIndex,
  ExecutionRecord,
  ExecutionStatus,
} from '../../functions/stores/execution-index.ts';
import type { SfnLike } from '../commands/start.ts';
import type { RunStatus } from '../run-filters.ts';
import { SFN_EXECUTION_STATUSES, type SfnExecutionStatus } from './sfn-statuses.ts';
import {
  type DeployedStateMachine,
  deployedStateMachines,
  isoOf,
  stepFunctionsConsoleUrl,
} from './step-functions.ts';

/** One execution of a deployed stack. */
export interface DeployedRun {
  readonly executionId: string;
  readonly workflowId: string;
  readonly status: RunStatus;
  /** How Step Functions sees the execution. */
  readonly stepFunctionsStatus: SfnExecutionStatus;
  /** Step Functions' start and stop dates (ISO). */
  readonly startTime: string;
  readonly endTime?: string;
  /** Absent when START never ran (nothing was recorded). */
  readonly rootThreadId?: string;
  /** Continue-as-new: the execution this one continues, and the one that continued it. */
  readonly continuedFrom?: string;
  readonly continuedAs?: string;
  readonly consoleUrl?: string;
  /** The state machine version the execution runs (started on the `live` alias or a version). */
  readonly stateMachineVersion?: number;
}

/** Statuses after which the table's record says all there is to say about the run. */
const RECORDED_OUTCOMES: ReadonlySet<ExecutionStatus> = new Set([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMEOUT',
  'CONTINUED',
]);

/**
 * The table's status where it knows how the run ended (END or the fail handler recorded it, or the
 * run continued); else Step Functions': an execution stopped, timed out or failed before a handler
 * could record anything still says RUNNING in the table.
 */
export function combinedStatus(recorded: ExecutionStatus | undefined, sfn: SfnExecutionStatus): RunStatus {
  if (recorded !== undefined && RECORDED_OUTCOMES.has(recorded)) return recorded;
  switch (sfn) {
    case 'SUCCEEDED':
      return 'COMPLETED';
    case 'FAILED':
    case 'TIMED_OUT':
    case 'ABORTED':
      return sfn;
    case 'RUNNING':
    case 'PENDING_REDRIVE':
      return 'RUNNING';
  }
}

/**
 * The Step Functions statuses that hold every execution shown with `wanted`, when Step Functions can
 * filter for it exactly; undefined when only the combined status can tell (COMPLETED, FAILED,
 * CONTINUED: those depend on the table), so every execution is read and filtered here.
 */
function sfnFiltersFor(wanted: string | undefined): SfnExecutionStatus[] | undefined {
  switch (wanted) {
    case 'RUNNING':
      return ['RUNNING', 'PENDING_REDRIVE'];
    case 'TIMED_OUT':
    case 'ABORTED':
    case 'SUCCEEDED':
    case 'PENDING_REDRIVE':
      return [wanted];
    default:
      return undefined;
  }
}

export function matchesStatus(run: DeployedRun, wanted: string | undefined): boolean {
  return wanted === undefined || run.status === wanted || run.stepFunctionsStatus === wanted;
}

export interface DeployedRunsQuery {
  readonly sfn: SfnLike;
  readonly executions: Pick<ExecutionIndex, 'getExecutions'>;
  /** State machines are named `<prefix>-<workflowId>`. */
  readonly prefix: string;
  /** Only these workflows (default: every state machine with the prefix). */
  readonly workflowIds?: readonly string[];
  /** The stack's state machines when the caller has them (a long-lived server); else listed here. */
  readonly stateMachines?: readonly DeployedStateMachine[];
  /** Upper-case: a RunStatus or a Step Functions status (cli/run-filters.ts). */
  readonly status?: string;
  readonly limit: number;
}

export interface DeployedRunsResult {
  readonly runs: DeployedRun[];
  /** The state machines read. */
  readonly stateMachines: readonly DeployedStateMachine[];
  /** EXPRESS state machines: Step Functions does not list their executions. */
  readonly skipped: readonly DeployedStateMachine[];
}

/** The newest `limit` executions matching the query, newest first. */
export async function listDeployedRuns(query: DeployedRunsQuery): Promise<DeployedRunsResult> {
  const wanted = query.workflowIds === undefined ? undefined : new Set(query.workflowIds);
  const machines =
    query.stateMachines === undefined
      ? await deployedStateMachines(query.sfn, query.prefix, query.workflowIds)
      : query.stateMachines.filter((machine) => wanted === undefined || wanted.has(machine.workflowId));
  const listable = machines.filter((machine) => machine.type === 'STANDARD');
  const filters = sfnFiltersFor(query.status) ?? [undefined];
  // The newest `limit` overall are among the newest `limit` of each state machine and filter.
  const lists = await Promise.all(
    listable.flatMap((machine) => filters.map((filter) => newestOfMachine(query, machine, filter))),
  );
  const byId = new Map(lists.flat().map((run) => [run.executionId, run]));
  const runs = [...byId.values()]
    .sort((a, b) => b.startTime.localeCompare(a.startTime) || a.executionId.localeCompare(b.executionId))
    .slice(0, query.limit);
  return { runs, stateMachines: machines, skipped: machines.filter((machine) => machine.type === 'EXPRESS') };
}

/** The newest `limit` matching executions of one state machine: pages until it has them or none are left. */
async function newestOfMachine(
  query: DeployedRunsQuery,
  machine: DeployedStateMachine,
  statusFilter: SfnExecutionStatus | undefined,
): Promise<DeployedRun[]> {
  const found: DeployedRun[] = [];
  let nextToken: string | undefined;
  do {
    const page = (await query.sfn.send(
      new ListExecutionsCommand({
        stateMachineArn: machine.stateMachineArn,
        // Pages of 100 at least, so a filter applied here needs few requests.
        maxResults: Math.min(1000, Math.max(100, query.limit)),
        ...(statusFilter ? { statusFilter } : {}),
        ...(nextToken ? { nextToken } : {}),
      }),
    )) as ListExecutionsCommandOutput;
    const listed = (page.executions ?? []).filter((item) => item.executionArn && item.startDate);
    const records = await query.executions.getExecutions(listed.map((item) => item.executionArn!));
    for (const item of listed) {
      const run = deployedRunOf(machine, item, records.get(item.executionArn!));
      if (matchesStatus(run, query.status)) found.push(run);
    }
    nextToken = page.nextToken;
  } while (nextToken && found.length < query.limit);
  return found;
}

function deployedRunOf(
  machine: DeployedStateMachine,
  item: NonNullable<ListExecutionsCommandOutput['executions']>[number],
  record: ExecutionRecord | undefined,
): DeployedRun {
  const executionId = item.executionArn!;
  const sfnStatus = SFN_EXECUTION_STATUSES.find((status) => status === item.status) ?? 'RUNNING';
  const status = combinedStatus(record?.status, sfnStatus);
  // The table's end time when it recorded the end before Step Functions finished the execution.
  const endTime = item.stopDate ? isoOf(item.stopDate) : status === 'RUNNING' ? undefined : record?.endTime;
  const consoleUrl = stepFunctionsConsoleUrl(executionId);
  const version = stateMachineVersionOf(item.stateMachineVersionArn);
  return {
    executionId,
    workflowId: record?.workflowId ?? machine.workflowId,
    status,
    stepFunctionsStatus: sfnStatus,
    startTime: isoOf(item.startDate!),
    ...(endTime ? { endTime } : {}),
    ...(record ? { rootThreadId: record.rootThreadId } : {}),
    ...(record?.continuedFrom ? { continuedFrom: record.continuedFrom } : {}),
    ...(record?.continuedAs ? { continuedAs: record.continuedAs } : {}),
    ...(consoleUrl ? { consoleUrl } : {}),
    ...(version === undefined ? {} : { stateMachineVersion: version }),
  };
}
