/**
 * Runs an ASL definition in-process with aws-local-stepfunctions, each Task state mapped to a
 * local handler by state name (the compiler names Task states after node ids). The same
 * definition is deployed to Step Functions; only the Task resources differ.
 */
import './polyfills.ts';
import { randomUUID } from 'node:crypto';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { StepthreadError } from '../../engine/errors.ts';

export type LocalTaskHandler = (input: unknown) => Promise<unknown>;

export interface LocalRunnerOptions {
  /**
   * Skip the library's definition validation entirely. Off by default. (Its `checkArn: false` mode
   * rejects the compiler's `${Fn_X}` placeholder resources — they then match two branches of a
   * oneOf — while `checkArn: true` accepts them, so validation runs with the ARN check on.)
   */
  readonly noValidate?: boolean;
}

export interface StartOptions {
  /** Defaults to a random UUID; exposed to the definition as `$$.Execution.Id` / `Name`. */
  readonly executionId?: string;
  /** Milliseconds to wait before each retry, per state name (or per retrier index). */
  readonly retryIntervalOverrides?: Readonly<Record<string, number | readonly number[]>>;
  /** Retry at once in every state that has a Retry field (tests). */
  readonly noRetryWaits?: boolean;
  /** `$$.Task.Token` for waitForTaskToken Tasks; defaults to `local-token:<executionId>`. */
  readonly taskToken?: string;
  /** `$$.StateMachine.Id` (what continue-as-new starts again); defaults to `local:state-machine`. */
  readonly stateMachineId?: string;
  /** Called with each event as it happens (progress output), in order. */
  readonly onEvent?: (event: LocalEvent) => void;
}

export type LocalEventType =
  | 'ExecutionStarted'
  | 'ExecutionSucceeded'
  | 'ExecutionFailed'
  | 'ExecutionAborted'
  | 'ExecutionTimeout'
  | 'StateEntered'
  | 'StateExited'
  | 'StateFailed'
  | 'StateRetried'
  | 'StateCaught'
  | 'ParallelBranchStarted'
  | 'ParallelBranchSucceeded'
  | 'ParallelBranchFailed'
  | 'MapIterationStarted'
  | 'MapIterationSucceeded'
  | 'MapIterationFailed';

/** One execution event, flattened from the library's event log. */
export interface LocalEvent {
  readonly type: LocalEventType;
  /** ISO timestamp. */
  readonly timestamp: string;
  /** State events: the state; branch/iteration events: the Parallel/Map state. */
  readonly stateName?: string;
  readonly stateType?: string;
  readonly input?: unknown;
  readonly output?: unknown;
  /** Failures: the ASL error name and cause. */
  readonly error?: string;
  readonly cause?: unknown;
  /** Map iteration index. */
  readonly index?: number;
  /** StateRetried: 1-based attempt number of the retry. */
  readonly retryAttempt?: number;
}

export type LocalExecutionResult =
  | { readonly status: 'SUCCEEDED'; readonly output: unknown }
  | { readonly status: 'FAILED'; readonly error: string; readonly cause: string }
  | { readonly status: 'ABORTED' }
  | { readonly status: 'TIMED_OUT' };

export interface LocalExecution {
  readonly executionId: string;
  /** Settles (never rejects) once the execution ends and every event has been collected. */
  readonly result: Promise<LocalExecutionResult>;
  /** Events so far, in order; complete once `result` has settled. */
  readonly events: readonly LocalEvent[];
  abort(): void;
}

export interface LocalRunner {
  /** Task state names found anywhere in the definition (including branches and iterations). */
  readonly taskStates: readonly string[];
  start(input: unknown, options?: StartOptions): LocalExecution;
}

/**
 * Build once per definition: the library validates the whole definition on construction
 * (150–550 ms), while each `start` is cheap.
 */
export function createLocalRunner(
  definition: object,
  handlers: Readonly<Record<string, LocalTaskHandler>>,
  options: LocalRunnerOptions = {},
): LocalRunner {
  const asl = definition as StateMachineDefinition;
  const taskStates = collectStates(asl, (state) => state.Type === 'Task');
  const missing = taskStates.filter((name) => !Object.hasOwn(handlers, name));
  if (missing.length > 0) {
    // Without a local handler the library would call the real Lambda named in Resource.
    throw new StepthreadError(
      'INVALID_STATE_MACHINE',
      `no local handler for Task state(s): ${missing.join(', ')}`,
    );
  }
  const retryableStates = collectStates(asl, (state) => Array.isArray(state.Retry) && state.Retry.length > 0);

  let machine: StateMachine;
  try {
    machine = new StateMachine(asl, {
      validationOptions: options.noValidate ? { noValidate: true } : { checkArn: true },
    });
  } catch (error) {
    throw new StepthreadError(
      'INVALID_STATE_MACHINE',
      `invalid state machine definition: ${messageOf(error)}`,
      {
        cause: error,
      },
    );
  }
  const localHandlers = Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [name, handler as (input: unknown) => Promise<never>]),
  );

  return {
    taskStates,
    start(input, startOptions = {}) {
      const executionId = startOptions.executionId ?? randomUUID();
      const retryIntervalOverrides: Record<string, number | number[]> = {};
      if (startOptions.noRetryWaits) for (const name of retryableStates) retryIntervalOverrides[name] = 0;
      for (const [name, value] of Object.entries(startOptions.retryIntervalOverrides ?? {})) {
        retryIntervalOverrides[name] = typeof value === 'number' ? value : [...value];
      }

      const run = machine.run(input as never, {
        overrides: { taskResourceLocalHandlers: localHandlers, retryIntervalOverrides },
        context: {
          Execution: { Id: executionId, Name: executionId },
          StateMachine: {
            Id: startOptions.stateMachineId ?? 'local:state-machine',
            Name: startOptions.stateMachineId ?? 'local:state-machine',
          },
          Task: { Token: startOptions.taskToken ?? `local-token:${executionId}` },
        } as never,
      });

      const events: LocalEvent[] = [];
      const collected = (async () => {
        for await (const raw of run.eventLogs) {
          const event = toLocalEvent(raw);
          events.push(event);
          startOptions.onEvent?.(event);
        }
      })();
      const result = settle(run.result).then(async (outcome) => {
        await collected.catch(() => {});
        return outcome;
      });
      return { executionId, result, events, abort: run.abort };
    },
  };
}

async function settle(result: Promise<unknown>): Promise<LocalExecutionResult> {
  try {
    return { status: 'SUCCEEDED', output: await result };
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (name === 'ExecutionAbortedError') return { status: 'ABORTED' };
    if (name === 'ExecutionTimeoutError') return { status: 'TIMED_OUT' };
    // ExecutionError wraps the state error whose name is the ASL error (e.g. States.TaskFailed).
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    return {
      status: 'FAILED',
      error: cause instanceof Error ? cause.name : 'States.Runtime',
      cause: messageOf(cause),
    };
  }
}

interface AslState {
  Type?: string;
  Retry?: unknown[];
  Branches?: AslMachine[];
  ItemProcessor?: AslMachine;
  Iterator?: AslMachine;
}

interface AslMachine {
  States?: Record<string, AslState>;
}

function collectStates(machine: AslMachine, keep: (state: AslState) => boolean): string[] {
  const names = new Set<string>();
  const visit = (m: AslMachine | undefined) => {
    for (const [name, state] of Object.entries(m?.States ?? {})) {
      if (keep(state)) names.add(name);
      for (const branch of state.Branches ?? []) visit(branch);
      visit(state.ItemProcessor);
      visit(state.Iterator);
    }
  };
  visit(machine);
  return [...names];
}

interface RawEvent {
  type: LocalEventType;
  timestamp: number;
  input?: unknown;
  output?: unknown;
  state?: { name: string; type: string; input?: unknown; output?: unknown };
  parentState?: { name: string; type: string; input?: unknown; output?: unknown };
  Error?: string;
  Cause?: unknown;
  index?: number;
  retry?: { attempt: number };
}

function toLocalEvent(raw: unknown): LocalEvent {
  const event = raw as RawEvent;
  const state = event.state ?? event.parentState;
  return {
    type: event.type,
    timestamp: new Date(event.timestamp).toISOString(),
    ...(state ? { stateName: state.name, stateType: state.type } : {}),
    ...(event.input !== undefined
      ? { input: event.input }
      : state?.input !== undefined
        ? { input: state.input }
        : {}),
    ...(event.output !== undefined
      ? { output: event.output }
      : state?.output !== undefined && event.state
        ? { output: state.output }
        : {}),
    ...(event.Error !== undefined ? { error: event.Error, cause: causeOf(event.Cause) } : {}),
    ...(event.index !== undefined ? { index: event.index } : {}),
    ...(event.retry ? { retryAttempt: event.retry.attempt } : {}),
  };
}

function causeOf(cause: unknown): unknown {
  return cause instanceof Error ? cause.message : cause;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
