/**
 * Per-state timings of a deployed execution from its Step Functions history: each time a state was
 * entered, when it was left, how many attempts its Task took, and how it ended. The table's step
 * records say what each node did; the history adds what only Step Functions sees — the node running
 * right now (its Lambda has recorded nothing yet), a Lambda that failed or timed out without a step
 * record, the retries, and the Choice, Parallel and Map states around the nodes.
 *
 * One GetExecutionHistory request of the newest 1,000 events per read: a page of the console costs
 * the same however long the run, and a long run shows its latest states.
 */
import {
  GetExecutionHistoryCommand,
  type GetExecutionHistoryCommandOutput,
  type HistoryEvent,
} from '@aws-sdk/client-sfn';
import type { SfnLike } from '../commands/start.ts';
import type { StateRun, StateRunStatus } from './execution-view.ts';
import type { SfnExecutionStatus } from './sfn-statuses.ts';
import { isoOf } from './step-functions.ts';

export interface ExecutionStates {
  readonly states: StateRun[];
  /** False when the execution has more events than were read (the oldest states are left out). */
  readonly complete: boolean;
}

/** Events of at most this many states are read per request (Step Functions' page limit). */
const HISTORY_PAGE = 1000;
/** How far back from an exit its entry is looked for (a Task's retries add 3 events each). */
const MAX_WALK = 200;

const SCHEDULED = new Set(['LambdaFunctionScheduled', 'TaskScheduled']);
const FAILURES = new Set([
  'LambdaFunctionFailed',
  'LambdaFunctionTimedOut',
  'LambdaFunctionScheduleFailed',
  'LambdaFunctionStartFailed',
  'TaskFailed',
  'TaskTimedOut',
  'TaskStartFailed',
  'TaskSubmitFailed',
]);

/** The newest events of an execution (GetExecutionHistory in reverse, one request), oldest first. */
export async function readRecentHistory(
  sfn: SfnLike,
  executionArn: string,
): Promise<{ events: HistoryEvent[]; complete: boolean }> {
  const page = (await sfn.send(
    new GetExecutionHistoryCommand({ executionArn, reverseOrder: true, maxResults: HISTORY_PAGE }),
  )) as GetExecutionHistoryCommandOutput;
  // Sorted by id whatever order the service returned them in (moto ignores reverseOrder).
  const events = [...(page.events ?? [])].sort((a, b) => (a.id ?? 0) - (b.id ?? 0));
  return { events, complete: page.nextToken === undefined || page.nextToken === null };
}

/** An event of a Task's call (LambdaFunction…, Task… but not TaskState…). */
function isTaskCallEvent(event: HistoryEvent): boolean {
  const type = event.type ?? '';
  return type.startsWith('LambdaFunction') || (type.startsWith('Task') && !type.startsWith('TaskState'));
}

/** The error a failure event carries. */
function errorOf(event: HistoryEvent): string | undefined {
  const details =
    event.lambdaFunctionFailedEventDetails ??
    event.lambdaFunctionTimedOutEventDetails ??
    event.lambdaFunctionScheduleFailedEventDetails ??
    event.lambdaFunctionStartFailedEventDetails ??
    event.taskFailedEventDetails ??
    event.taskTimedOutEventDetails ??
    event.taskStartFailedEventDetails ??
    event.taskSubmitFailedEventDetails;
  return details?.error ?? (event.type?.endsWith('TimedOut') ? 'States.Timeout' : undefined);
}

/** A branch that decides its join ends through an error by design (engine/asl): not a failure. */
function isJoinDecision(error: string | undefined): boolean {
  return error?.startsWith('stepthread.Join') ?? false;
}

function threadIdOf(input: string | undefined): string | undefined {
  if (input === undefined) return undefined;
  try {
    const envelope = JSON.parse(input) as { threadId?: unknown };
    return typeof envelope?.threadId === 'string' ? envelope.threadId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Pairs each `<Type>StateEntered` with its `<Type>StateExited` by following `previousEventId` back
 * from the exit (states of parallel branches interleave in the history, so order alone cannot pair
 * them), and follows a Task that never exited forward to its last event to tell a running one from
 * a failed one. `nodeOfState` maps Task state names to node ids (engine/asl's task index).
 */
export function stateRunsOf(
  events: readonly HistoryEvent[],
  nodeOfState: ReadonlyMap<string, string>,
  executionStatus: SfnExecutionStatus,
): StateRun[] {
  const byId = new Map(events.map((event) => [event.id ?? 0, event]));
  const next = new Map<number, HistoryEvent>();
  for (const event of events) {
    const previous = event.previousEventId ?? 0;
    if (previous !== 0 && !event.type?.endsWith('StateEntered') && !next.has(previous)) {
      next.set(previous, event);
    }
  }
  // The exit of each entry, found by walking back from every exit.
  const exitOf = new Map<number, HistoryEvent>();
  const between = new Map<number, HistoryEvent[]>();
  for (const exit of events) {
    if (!exit.type?.endsWith('StateExited')) continue;
    const name = exit.stateExitedEventDetails?.name;
    const path: HistoryEvent[] = [];
    let current = byId.get(exit.previousEventId ?? 0);
    for (let steps = 0; current !== undefined && steps < MAX_WALK; steps += 1) {
      if (current.type?.endsWith('StateEntered') && current.stateEnteredEventDetails?.name === name) {
        exitOf.set(current.id ?? 0, exit);
        between.set(current.id ?? 0, path.reverse());
        break;
      }
      path.push(current);
      current = byId.get(current.previousEventId ?? 0);
    }
  }
  const runs: StateRun[] = [];
  for (const entered of events) {
    if (!entered.type?.endsWith('StateEntered')) continue;
    const stateName = entered.stateEnteredEventDetails?.name ?? '';
    const stateType = entered.type.slice(0, -'StateEntered'.length);
    const exit = exitOf.get(entered.id ?? 0);
    let path = between.get(entered.id ?? 0);
    if (path === undefined && stateType === 'Task') {
      // Not exited: its own Lambda or service events follow it one after the other.
      path = [];
      let current = next.get(entered.id ?? 0);
      while (current !== undefined && isTaskCallEvent(current) && path.length < MAX_WALK) {
        path.push(current);
        current = next.get(current.id ?? 0);
      }
    }
    const attempts = path?.filter((event) => SCHEDULED.has(event.type ?? '')).length ?? 0;
    const lastFailure = [...(path ?? [])].reverse().find((event) => FAILURES.has(event.type ?? ''));
    const last = path?.at(-1);
    const error = lastFailure ? errorOf(lastFailure) : undefined;
    let status: StateRunStatus;
    if (exit) {
      // Left through a Catch right after a failed attempt: the state failed (unless it decided a join).
      const failedLast =
        last !== undefined && FAILURES.has(last.type ?? '') && !isJoinDecision(errorOf(last));
      status = failedLast ? 'FAILED' : 'SUCCEEDED';
    } else if (last !== undefined && FAILURES.has(last.type ?? '')) {
      status = isJoinDecision(error) ? 'SUCCEEDED' : 'FAILED';
    } else if (executionStatus === 'RUNNING' || executionStatus === 'PENDING_REDRIVE') {
      status = 'RUNNING';
    } else {
      status = executionStatus === 'FAILED' && stateType !== 'Task' ? 'FAILED' : 'STOPPED';
    }
    const enteredAt = entered.timestamp ? isoOf(entered.timestamp) : '';
    const exitedAt = exit?.timestamp ? isoOf(exit.timestamp) : undefined;
    const nodeId = stateType === 'Task' ? nodeOfState.get(stateName) : undefined;
    const threadId = threadIdOf(entered.stateEnteredEventDetails?.input);
    runs.push({
      stateName,
      ...(nodeId === undefined ? {} : { nodeId }),
      stateType,
      enteredAt,
      ...(exitedAt ? { exitedAt, durationMs: Date.parse(exitedAt) - Date.parse(enteredAt) } : {}),
      status,
      ...(attempts > 0 ? { attempts } : {}),
      ...(error === undefined || isJoinDecision(error) ? {} : { error }),
      ...(threadId === undefined ? {} : { threadId }),
    });
  }
  return runs;
}
