/**
 * Continue-as-new (issue 8). A Standard execution stops at 25,000 history events, so a run whose
 * graph has a cycle must move to a fresh execution before it gets there. Only cycles make a history
 * unbounded, and every top-level cycle passes through a top-level ROUTE or LOOP_END (validation rule
 * UNBOUNDED_CYCLE; a fork branch's back edges stay inside the branch), whose `:choice` states already
 * exist. So the check costs no state transition: each envelope carries `history`, an estimate of the
 * events its execution has recorded, and those Choice states send it to `<node>:continue` once it
 * reaches the threshold. That Task starts the same state machine with a resume marker
 * (`states:startExecution`, fire and forget), and the execution ends with a `CONTINUED` output. The new
 * execution's `stepthread:dispatch` Choice sees the marker, `stepthread:resume` claims the thread for
 * it, and `stepthread:resume-at` jumps back to the Choice that continued.
 *
 * The estimate: each Task state's Parameters carry `historyEvents`, the events that state adds
 * (`HISTORY_EVENTS`) plus those of the Choice, Pass, Parallel and Wait states it alone leads to;
 * the dispatch adds them to `envelope.history` before the handler runs. A fork path counts from 0 in
 * its child thread, and the JOIN adds what its children counted. Retries (3 events each) and the
 * states after a check are not counted: the margin below the hard limit covers them.
 */
import { StepthreadError } from '../errors.ts';
import type { Envelope } from '../thread/types.ts';

/** Step Functions' hard limit on a Standard execution's history. */
export const HISTORY_EVENT_LIMIT = 25_000;

/** The default threshold: 5,000 events of margin for retries and the last iteration before the check. */
export const DEFAULT_CONTINUE_AFTER_EVENTS = 20_000;

/**
 * The range a threshold may take. Below the minimum a resumed execution (whose own start counts
 * RESUME_HISTORY_EVENTS) could continue again before running a step; above the maximum too little room
 * is left for the iteration that crosses it.
 */
export const MIN_CONTINUE_AFTER_EVENTS = 100;
export const MAX_CONTINUE_AFTER_EVENTS = 24_000;

/** The environment variable the CLI, the local runtime and the deploy read the threshold from. */
export const CONTINUE_AFTER_EVENTS_ENV = 'STEPTHREAD_CONTINUE_AFTER_EVENTS';

/**
 * History events per state, as a Standard execution records them on success:
 * a Lambda Task (direct function ARN): TaskStateEntered, LambdaFunctionScheduled, LambdaFunctionStarted,
 * LambdaFunctionSucceeded, TaskStateExited; a service integration (waitForTaskToken, startExecution)
 * adds TaskSubmitted; a Parallel: Entered, Started, Succeeded (or Failed), Exited.
 */
export const HISTORY_EVENTS = {
  execution: 1,
  lambdaTask: 5,
  integrationTask: 6,
  choice: 2,
  pass: 2,
  wait: 2,
  fail: 1,
  parallel: 4,
  /** Per fork path or timer: a branch the Parallel stops early leaves its in-flight state aborted. */
  branchSlack: 2,
  /** Per inline Map item: MapIterationStarted and MapIterationSucceeded (or Failed, Aborted). */
  mapIteration: 2,
} as const;

/**
 * The fewest history events one item of an inline Map (a FORK over a list) records: its iteration,
 * the path's entry Pass and one node's Task, which reports the item to the JOIN itself and, under an
 * ALL_COMPLETED join without a timeout, ends the path (compile.ts; a one-VARIABLE path: 9). Other
 * strategies add the Choice and Pass that end a path (13), a path that reaches the JOIN from a Choice
 * a report Task. All of them land in the one execution, which continue-as-new cannot split, so a
 * list whose items need more than the limit can never finish there (FORK_LIST_TOO_LONG): that list
 * needs `"mode": "distributed"`, where each item is an execution of its own.
 */
export const INLINE_MAP_ITEM_HISTORY_EVENTS =
  HISTORY_EVENTS.mapIteration + HISTORY_EVENTS.pass + HISTORY_EVENTS.lambdaTask;

/**
 * For an inline Map of `count` items started when the execution had recorded `history` events: the
 * fewest events they need and how many items would fit, when they cannot fit; undefined when they can.
 */
export function inlineMapOverflow(
  count: number,
  history: number,
): { readonly needed: number; readonly fits: number } | undefined {
  const needed = history + count * INLINE_MAP_ITEM_HISTORY_EVENTS;
  if (needed <= HISTORY_EVENT_LIMIT) return undefined;
  return {
    needed,
    fits: Math.max(0, Math.floor((HISTORY_EVENT_LIMIT - history) / INLINE_MAP_ITEM_HISTORY_EVENTS)),
  };
}

/** What a resumed execution has recorded when its `stepthread:resume` Task returns and its Choice ran. */
export const RESUME_HISTORY_EVENTS =
  HISTORY_EVENTS.execution +
  HISTORY_EVENTS.choice + // stepthread:dispatch
  HISTORY_EVENTS.lambdaTask + // stepthread:resume
  HISTORY_EVENTS.choice + // stepthread:resume-at
  HISTORY_EVENTS.choice; // the `<node>:choice` it resumes at

/** State names of the machinery (node ids claim their names first, so these move aside if taken). */
export const DISPATCH_STATE = 'stepthread:dispatch';
export const RESUME_TASK = 'stepthread:resume';
export const RESUME_AT_STATE = 'stepthread:resume-at';
export const CONTINUED_STATE = 'stepthread:continued';
export const NO_RESUME_POINT_STATE = 'stepthread:no-resume-point';

/** The error a named StartExecution reports when that name already ran with another input (or ended). */
export const EXECUTION_ALREADY_EXISTS = 'StepFunctions.ExecutionAlreadyExistsException';

/** The input key Step Functions' console uses to link a started execution to the one that started it. */
export const STARTED_BY_KEY = 'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID';

/** Where a successor resumes: the Choice state that continued, and the node it belongs to. */
export interface ResumePoint {
  /** A `<node>:choice` state name of the same definition. */
  at: string;
  node: { id: string; type: 'ROUTE' | 'LOOP_END' };
}

/** A successor execution's input, as `<node>:continue` sends it. */
export interface ResumeInput {
  resume: ResumePoint & {
    /** The envelope the continuing Choice state received (the thread's `lastEnvelope`). */
    envelope: Envelope;
  };
  /** The execution that continued (`$$.Execution.Id`). */
  [STARTED_BY_KEY]: string;
}

/** What an execution that continued ends with. */
export interface ContinuedOutput {
  status: 'CONTINUED';
  /** The successor's execution name (locally, its execution id). */
  continuedAs: string;
  threadId: string;
  step: number;
}

/**
 * The successor's execution name, as an intrinsic: the root thread (hashed, as thread ids may hold
 * characters names may not) and its step. One name per continuation point of a thread, so a retried
 * StartExecution returns the execution it started instead of starting a second one.
 */
export const SUCCESSOR_NAME_EXPRESSION = "States.Format('{}-{}', States.Hash($.rootThreadId, 'MD5'), $.step)";

/** Checks a threshold (an integer in range) or `false` (off); throws CONTINUE_AFTER_EVENTS_INVALID otherwise. */
export function checkContinueAfterEvents(value: number | false): number | false {
  if (value === false) return false;
  if (!Number.isInteger(value) || value < MIN_CONTINUE_AFTER_EVENTS || value > MAX_CONTINUE_AFTER_EVENTS) {
    throw new StepthreadError(
      'CONTINUE_AFTER_EVENTS_INVALID',
      `continueAfterEvents must be an integer from ${MIN_CONTINUE_AFTER_EVENTS} to ${MAX_CONTINUE_AFTER_EVENTS} (Step Functions stops an execution at ${HISTORY_EVENT_LIMIT} events), or off; got ${String(value)}`,
    );
  }
  return value;
}

/**
 * The threshold an environment sets (`STEPTHREAD_CONTINUE_AFTER_EVENTS`: a number, or `off`), else
 * undefined. The environment is passed in: the engine reads no process state.
 */
export function continueAfterEventsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): number | false | undefined {
  const raw = env[CONTINUE_AFTER_EVENTS_ENV]?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^(off|false|0)$/i.test(raw)) return false;
  const value = Number(raw.replaceAll('_', ''));
  try {
    return checkContinueAfterEvents(value);
  } catch (error) {
    throw new StepthreadError(
      'CONTINUE_AFTER_EVENTS_INVALID',
      `${CONTINUE_AFTER_EVENTS_ENV}=${raw}: ${(error as Error).message}`,
    );
  }
}
