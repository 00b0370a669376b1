/**
 * A deployed execution as the `stepthread dev` API sends it: the shapes the dev server builds
 * (cli/dev/deployed-view.ts, cli/deployed/history.ts) and the console reads (console/src/api.ts).
 * Types only, with no imports, so the console's bundle can take them without Node code.
 */
/** How one entry into a state ended, so far. */
export type StateRunStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'STOPPED';

/** One entry into a state of a deployed execution, from its Step Functions history. */
export interface StateRun {
  readonly stateName: string;
  /** The workflow node whose Task this is (absent for Choice, Parallel, Map, Pass states). */
  readonly nodeId?: string;
  /** Task, Choice, Parallel, Map, Pass, … (from the event type). */
  readonly stateType: string;
  readonly enteredAt: string;
  readonly exitedAt?: string;
  readonly durationMs?: number;
  readonly status: StateRunStatus;
  /** Lambda or service calls the Task made (retries included). */
  readonly attempts?: number;
  /** The error of its last failed attempt. */
  readonly error?: string;
  /** The thread the state ran for (from the envelope it was entered with). */
  readonly threadId?: string;
}

/** The execution page's `stepFunctions` section: the execution as Step Functions describes it. */
export interface StepFunctionsView {
  status: string;
  startDate: string;
  stopDate?: string;
  input?: unknown;
  output?: unknown;
  error?: string;
  cause?: string;
  /** Its page in the Step Functions console. */
  consoleUrl?: string;
  /** The state machine version it runs (pinned from its start), when it started on an alias or version. */
  stateMachineVersion?: number;
  /** Each state entered, newest 1,000 history events' worth, in order. */
  states: StateRun[];
  /** False when the history holds older states than those listed. */
  historyComplete: boolean;
}

/** A node's entry in the execution page's `nodeStatus`. */
export interface NodeStatus {
  status: string;
  durationMs?: number;
  attempt?: number;
  runs: number;
  threadId?: string;
  /** An LLM node's model calls over all its runs, in every thread (tokens, and cost when priced). */
  usage?: { modelCalls: number; inputTokens: number; outputTokens: number; costUsd?: number };
  /** Its steps' share of the run's AWS cost, deployed: an estimate (cli/aws-cost.ts). */
  awsUsd?: number;
  /** An LLM node's tool calls over all its runs, in every thread, and how many returned an error to the model. */
  toolCalls?: { calls: number; failed: number };
}
