/**
 * What tracing reads of a Task's input, read leniently (the dispatch checks the input itself and
 * reports what is wrong with it): names and ids only.
 */
import type { AslErrorOutput } from '../../engine/asl/task-input.ts';
import { rootThreadIdFor } from '../nodes/ids.ts';

export interface TaskInfo {
  readonly action: string;
  readonly nodeId?: string;
  readonly nodeType?: string;
  readonly executionId?: string;
  readonly workflowId?: string;
  readonly threadId?: string;
  readonly rootThreadId?: string;
  /** Node executions already applied to the thread (the envelope's `step`). */
  readonly step?: number;
  /** The envelope's trace context: the parent of this task's step span. */
  readonly traceparent?: string;
  /** START: the trace context the execution input gave. */
  readonly callerTraceparent?: string;
  /** A FORK compiled to carry the trace context into its branches (CompileOptions.traceContext). */
  readonly traceContext: boolean;
  /** `fail`: the error that failed the run, as the Catch recorded it. */
  readonly failure?: AslErrorOutput;
}

type Loose = Record<string, unknown> | undefined;

function record(value: unknown): Loose {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function taskInfoOf(event: unknown): TaskInfo {
  const e = record(event) ?? {};
  const node = record(e.node);
  const envelope = record(e.envelope);
  const input = record(e.input);
  const workflow = record(node?.workflow);
  const failure = record(envelope?.error);
  const step = envelope?.step;
  const executionId = text(envelope?.executionId) ?? text(e.executionId);
  // START has no envelope: its thread is the one the input names, else the execution's own.
  const startThread =
    text(node?.type) === 'START' && envelope === undefined && executionId !== undefined
      ? (text(input?.threadId) ?? rootThreadIdFor(executionId))
      : undefined;
  const info: Record<string, unknown> = {
    action: text(e.action) ?? 'execute',
    nodeId: text(node?.id),
    nodeType: text(node?.type),
    executionId,
    workflowId: text(envelope?.workflowId) ?? text(workflow?.id),
    threadId: text(envelope?.threadId) ?? startThread,
    rootThreadId: text(envelope?.rootThreadId) ?? startThread,
    step: typeof step === 'number' ? step : undefined,
    traceparent: text(envelope?.traceparent),
    callerTraceparent: text(input?.traceparent),
    traceContext: e.traceContext === true,
    failure: failure && typeof failure.Error === 'string' ? failure : undefined,
  };
  return Object.fromEntries(
    Object.entries(info).filter(([, value]) => value !== undefined),
  ) as unknown as TaskInfo;
}
