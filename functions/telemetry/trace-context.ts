/**
 * The trace context a run carries in its state (a W3C `traceparent`), without the SDK: what every
 * Task, in this process or in a Lambda, agrees the run's trace and its span are.
 *
 * - A run's span has an id derived from its execution id, and its trace the caller's (the execution
 *   input's `traceparent`) or one derived from the execution id too: every Task of the execution
 *   computes the same without asking anyone, a retried START included.
 * - The root thread's envelope carries the run's span as `traceparent`; a FORK hands its own step's
 *   span to its branches and items as `fork.traceparent`, which the definition copies into their
 *   envelopes (engine/asl, CompileOptions.traceContext).
 */
import { createHash } from 'node:crypto';
import type { TaskInfo } from './task-info.ts';

export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  /** W3C trace flags: 1 = sampled. */
  readonly flags: number;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A version-00 traceparent, or undefined for anything else (all-zero ids included). */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (match === null) return undefined;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

export function formatTraceparent(context: TraceParent): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags.toString(16).padStart(2, '0')}`;
}

function derived(label: string, executionId: string, length: number): string {
  return createHash('sha256').update(`stepthread-${label}\0${executionId}`).digest('hex').slice(0, length);
}

/** The span of the run `executionId` starts: in the caller's trace when it gave one. */
export function runSpanOf(executionId: string, caller?: TraceParent): TraceParent {
  return {
    traceId: caller?.traceId ?? derived('trace', executionId, 32),
    spanId: derived('run', executionId, 16),
    flags: caller?.flags ?? 1,
  };
}

/** The parent of a task's step span: its envelope's, else (START, or a state saved before tracing) the run's. */
export function stepParentOf(info: TaskInfo): TraceParent {
  return (
    parseTraceparent(info.traceparent) ??
    runSpanOf(info.executionId ?? '', parseTraceparent(info.callerTraceparent))
  );
}

interface EnvelopeLike {
  readonly executionId: string;
  readonly threadId: string;
  readonly traceparent?: string;
  readonly fork?: { readonly traceparent?: string };
}

function isEnvelope(value: unknown): value is EnvelopeLike {
  const v = value as Partial<EnvelopeLike> | null;
  return (
    typeof v === 'object' && v !== null && typeof v.executionId === 'string' && typeof v.threadId === 'string'
  );
}

/**
 * The envelope a task returns, with the trace context its successors need: the thread's
 * `traceparent` kept (or set: START's is the run's span), and a FORK's `fork.traceparent` (its step's
 * span, or the thread's when nothing is traced here) whenever the definition copies it into the
 * branches. Unchanged when the run carries no trace context and nothing is traced.
 */
export function withTraceContext<T>(info: TaskInfo, result: T, traced: boolean, stepSpan?: TraceParent): T {
  if (!isEnvelope(result)) return result;
  if (!traced && !info.traceContext && info.traceparent === undefined) return result;
  const traceparent = result.traceparent ?? formatTraceparent(stepParentOf(info));
  const forkParent =
    result.fork !== undefined && (traced || info.traceContext)
      ? { fork: { ...result.fork, traceparent: stepSpan ? formatTraceparent(stepSpan) : traceparent } }
      : {};
  return { ...result, traceparent, ...forkParent };
}
