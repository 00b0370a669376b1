/**
 * The subset of the Amazon States Language the compiler emits (JSONPath only: the local runner ignores
 * JSONata). Each state type carries only the fields we use, so a state that cannot run cannot be built.
 */
import type { StartExecutionParameters, TaskParameters, WaitForTokenParameters } from './task-input.ts';

/** A state either continues to `Next` or ends its state machine (or Parallel branch). */
export type AslFlow = { Next: string; End?: never } | { End: true; Next?: never };

export interface AslRetrier {
  ErrorEquals: string[];
  /** Default 1. */
  IntervalSeconds?: number;
  /** Default 2. */
  BackoffRate?: number;
  /** Default 3; 0: a matching error is not retried (and no later retrier is tried). */
  MaxAttempts: number;
  /** Caps each wait (IntervalSeconds × BackoffRate^n). */
  MaxDelaySeconds?: number;
  /** Default NONE. */
  JitterStrategy?: 'FULL' | 'NONE';
}

export interface AslCatcher {
  ErrorEquals: string[];
  /** Where the error output `{ Error, Cause }` goes in the state's input. */
  ResultPath: string;
  Next: string;
}

/** A Lambda invoked by the direct function-ARN form: the handler's return value is the state's output. */
export type AslDirectTaskState = {
  Type: 'Task';
  Resource: string;
  Parameters: TaskParameters;
  /** Only `null` (keep the input) is ever set; absent means `$` (the result replaces the input). */
  ResultPath?: null;
  Retry: AslRetrier[];
  /** Absent only on fork/join bookkeeping tasks, whose errors must reach the enclosing Parallel. */
  Catch?: AslCatcher[];
} & AslFlow;

/**
 * `lambda:invoke.waitForTaskToken`: what SendTaskSuccess sends lands at `$.answer` next to the
 * envelope, so whoever holds the token can hand over an answer but never choose the envelope.
 */
export type AslWaitForTokenTaskState = {
  Type: 'Task';
  Resource: typeof WAIT_FOR_TASK_TOKEN;
  Parameters: WaitForTokenParameters;
  ResultPath: typeof INTERACTION_ANSWER_PATH;
  TimeoutSeconds: number;
  Retry: AslRetrier[];
  Catch: AslCatcher[];
} & AslFlow;

/**
 * `states:startExecution` (fire and forget): continue-as-new starts the same state machine. Its result
 * `{ ExecutionArn, StartDate }` lands at `$.continuation` next to the envelope.
 */
export type AslStartExecutionTaskState = {
  Type: 'Task';
  Resource: typeof START_EXECUTION_RESOURCE;
  Parameters: StartExecutionParameters;
  ResultPath: '$.continuation';
  Retry: AslRetrier[];
  Catch: AslCatcher[];
} & AslFlow;

export type AslTaskState = AslDirectTaskState | AslWaitForTokenTaskState | AslStartExecutionTaskState;

export type AslPassState = {
  Type: 'Pass';
  /** A payload template: keys ending in `.$` are JSONPaths into the input. */
  Parameters?: Record<string, string | number | boolean>;
  Result?: Record<string, string>;
  ResultPath?: string;
} & AslFlow;

export type AslCondition =
  | { Variable: string; StringEquals: string }
  | { Variable: string; BooleanEquals: boolean }
  | { Variable: string; IsPresent: boolean }
  | { Variable: string; NumericGreaterThanEquals: number }
  | { And: AslCondition[] }
  | { Not: AslCondition };

export type AslChoiceRule = AslCondition & { Next: string };

export interface AslChoiceState {
  Type: 'Choice';
  Comment?: string;
  Choices: AslChoiceRule[];
  Default: string;
}

export type AslParallelState = {
  Type: 'Parallel';
  Branches: AslStateMachine[];
  /** Always null: the branches' outputs are dropped and the parent envelope flows on. */
  ResultPath: null;
  Catch?: AslCatcher[];
} & AslFlow;

/**
 * A FORK over a list. Inline: the items' indices come from the envelope (`ItemsPath`), and
 * `ItemSelector` builds each item's envelope, so no item content flows through the state machine.
 * Distributed: the item list is read from S3 (`ItemReader`), each item runs as a child execution, and
 * the results go to S3 (`ResultWriter`).
 */
export type AslMapState = {
  Type: 'Map';
  ItemsPath?: string;
  ItemReader?: {
    Resource: string;
    ReaderConfig?: { InputType: 'JSON'; MaxItems?: number };
    Parameters: Record<string, unknown>;
  };
  ItemSelector: Record<string, unknown>;
  ItemProcessor: AslStateMachine & {
    ProcessorConfig: { Mode: 'INLINE' } | { Mode: 'DISTRIBUTED'; ExecutionType: 'STANDARD' | 'EXPRESS' };
  };
  MaxConcurrency?: number;
  ToleratedFailureCount?: number;
  ToleratedFailurePercentage?: number;
  ResultWriter?: { Resource: string; Parameters: Record<string, unknown> };
  Label?: string;
  /** Always null, as for Parallel. */
  ResultPath: null;
  Catch?: AslCatcher[];
} & AslFlow;

export type AslWaitState = { Type: 'Wait'; Seconds: number } & AslFlow;

export type AslFailState =
  | { Type: 'Fail'; Error: string; Cause: string }
  /** Re-raises an error output `{ Error, Cause }` found in the input. */
  | { Type: 'Fail'; ErrorPath: string; CausePath: string };

export type AslState =
  | AslTaskState
  | AslPassState
  | AslChoiceState
  | AslParallelState
  | AslMapState
  | AslWaitState
  | AslFailState;

export interface AslStateMachine {
  StartAt: string;
  States: Record<string, AslState>;
}

export interface AslDefinition extends AslStateMachine {
  Comment: string;
  QueryLanguage: 'JSONPath';
}

export const WAIT_FOR_TASK_TOKEN = 'arn:aws:states:::lambda:invoke.waitForTaskToken';

/** The optimized Step Functions integration, request-response (see continuation.ts). */
export const START_EXECUTION_RESOURCE = 'arn:aws:states:::states:startExecution';

/** Where a USER_INTERACTION's task result (the answer) goes in its state's output. */
export const INTERACTION_ANSWER_PATH = '$.answer';
