/**
 * Resuming a run that continued in new executions (continue-as-new): which execution of the chain
 * was in flight when its process died, and the input that execution — or the successor it was about to
 * start — is started with, recomputed from what the stores hold, never from a process's memory.
 *
 * A run's root thread names the execution it runs in (`metadata.executionId`); each successor's
 * `stepthread:resume` claims it (thread first, then its execution record, then the predecessor's
 * `CONTINUED`). So the in-flight execution is the thread's, or, when a claim landed before the
 * claimer's record, the one that handed the thread over (its `lastEnvelope` still names it: the
 * successor ran no step yet). A thread whose last step committed at a continuation point whose
 * Choice continues is about to move on: its successor's name and input follow from that step's
 * envelope, which is still the thread's `lastEnvelope`.
 */
import { createHash } from 'node:crypto';
import { type ResumeInput, type ResumePoint, STARTED_BY_KEY } from '../../engine/asl/continuation.ts';
import {
  type AslChoiceState,
  type AslCondition,
  type AslDefinition,
  START_EXECUTION_RESOURCE,
} from '../../engine/asl/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { Envelope, Thread } from '../../engine/thread/types.ts';
import { type EnvelopeExtras, nextEnvelope } from '../handlers/pipeline.ts';
import { executionChain } from '../stores/execution-chain.ts';
import type { ExecutionIndex, ExecutionRecord } from '../stores/execution-index.ts';
import type { ThreadStore } from '../stores/thread-store.ts';

/** A `<node>:continue` Task of a definition's top level: the Choice it belongs to and the node. */
export interface ContinuationPoint extends ResumePoint {
  /** The `<node>:continue` state. */
  readonly stateName: string;
}

/** The successor a continuation starts: its execution name and input. */
export interface Successor {
  readonly name: string;
  readonly input: ResumeInput;
}

/**
 * The successor's name, as `SUCCESSOR_NAME_EXPRESSION` computes it:
 * `States.Format('{}-{}', States.Hash($.rootThreadId, 'MD5'), $.step)`.
 */
export function successorName(rootThreadId: string, step: number): string {
  return `${createHash('md5').update(rootThreadId, 'utf8').digest('hex')}-${step}`;
}

/** The continuation points of a definition (top level), by the id of the ROUTE or LOOP_END they follow. */
export function continuationPoints(definition: AslDefinition): Map<string, ContinuationPoint> {
  const points = new Map<string, ContinuationPoint>();
  for (const [stateName, state] of Object.entries(definition.States)) {
    if (state.Type !== 'Task' || state.Resource !== START_EXECUTION_RESOURCE) continue;
    if (!('Input' in state.Parameters)) continue;
    const { at, node } = state.Parameters.Input.resume;
    points.set(node.id, { stateName, at, node });
  }
  return points;
}

/** The value at a JSONPath of the simple form `$.a.b`, or undefined. */
function valueAt(input: unknown, path: string): unknown {
  if (path === '$') return input;
  if (!path.startsWith('$.')) return undefined;
  let value = input;
  for (const key of path.slice(2).split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A Choice rule's condition, for the operators the compiler emits. */
function holds(condition: AslCondition, input: unknown): boolean {
  if ('And' in condition) return condition.And.every((inner) => holds(inner, input));
  if ('Not' in condition) return !holds(condition.Not, input);
  const value = valueAt(input, condition.Variable);
  if ('IsPresent' in condition) return (value !== undefined) === condition.IsPresent;
  if ('StringEquals' in condition) return value === condition.StringEquals;
  if ('BooleanEquals' in condition) return value === condition.BooleanEquals;
  return typeof value === 'number' && value >= condition.NumericGreaterThanEquals;
}

/** Where a Choice state sends `input`: its first rule that holds, else its Default. */
export function choiceNext(state: AslChoiceState, input: unknown): string {
  return state.Choices.find((rule) => holds(rule, input))?.Next ?? state.Default;
}

/**
 * The successor a root thread's run continues in next, when its last committed step is a
 * continuation point whose Choice goes to `<node>:continue` with that step's envelope — whether or not
 * that Task ran, the execution ended, or the successor claimed the thread (it has run no step then).
 * Undefined when the run is not at such a point.
 */
export function pendingSuccessor(definition: AslDefinition, thread: Thread): Successor | undefined {
  const envelope = thread.lastEnvelope;
  if (envelope === undefined || envelope.last?.status !== 'COMPLETED') return undefined;
  if (envelope.threadId !== thread.id || envelope.rootThreadId !== thread.id) return undefined;
  if (envelope.step !== thread.step) return undefined;
  const point = continuationPoints(definition).get(envelope.last.nodeId);
  const choice = point === undefined ? undefined : definition.States[point.at];
  if (point === undefined || choice?.Type !== 'Choice') return undefined;
  if (choiceNext(choice, envelope) !== point.stateName) return undefined;
  const name = successorName(envelope.rootThreadId, envelope.step);
  const claimedBy = thread.metadata.executionId;
  // The thread is still the continuing execution's, or already its successor's (no step since).
  if (claimedBy !== envelope.executionId && claimedBy !== name) return undefined;
  return { name, input: resumeInput(point, envelope) };
}

/** What `<node>:continue` passes: the resume point, the envelope its Choice received, the starter. */
function resumeInput(point: ResumePoint, envelope: Envelope): ResumeInput {
  return {
    resume: { at: point.at, node: { ...point.node }, envelope },
    [STARTED_BY_KEY]: envelope.executionId,
  };
}

/**
 * The input a successor execution (`record.continuedFrom` set) was started with: the envelope its
 * predecessor's continuation point produced, rebuilt from that step's record — the envelope carries
 * identity fields, the step, what the node put on it (route, loop) and the history estimate its
 * execution record keeps.
 */
export async function successorInputOf(
  threads: ThreadStore,
  definition: AslDefinition,
  thread: Thread,
  record: ExecutionRecord,
): Promise<ResumeInput> {
  const predecessor = record.continuedFrom;
  const notResumable = (why: string) =>
    new StepthreadError('RUN_NOT_RESUMABLE', `execution ${record.executionId} cannot be resumed: ${why}`);
  if (predecessor === undefined) throw notResumable('it does not continue another execution');
  const step = record.continuedFromStep ?? (await continuedStepOf(threads, thread, record.executionId));
  if (step === undefined) throw notResumable(`no record says at which step ${predecessor} continued`);
  const stepRecord = await threads.getStep(thread.id, step);
  const nodeId = stepRecord?.result.nodeId;
  const point = nodeId === undefined ? undefined : continuationPoints(definition).get(nodeId);
  if (stepRecord === undefined || point === undefined) {
    throw notResumable(
      `step ${step} of thread ${thread.id} (${nodeId ?? 'no record'}) is no continuation point of this workflow`,
    );
  }
  const maxSteps = thread.lastEnvelope?.maxSteps;
  if (maxSteps === undefined) throw notResumable(`thread ${thread.id} has no envelope`);
  const incoming = {
    executionId: predecessor,
    workflowId: thread.workflowId,
    workflowVersion: thread.workflowVersion,
    rootThreadId: thread.id,
    threadId: thread.id,
    step: step - 1,
    maxSteps,
    ...(record.continuedFromHistory === undefined ? {} : { history: record.continuedFromHistory }),
  };
  const envelope = nextEnvelope(
    incoming,
    step,
    { nodeId: point.node.id, status: 'COMPLETED' },
    (stepRecord.out ?? {}) as EnvelopeExtras,
  );
  return resumeInput(point, envelope);
}

/** The step a thread continued into `executionId` at, from its THREAD_CONTINUED event (older records). */
async function continuedStepOf(
  threads: ThreadStore,
  thread: Thread,
  executionId: string,
): Promise<number | undefined> {
  for (const event of (await threads.readJournal(thread.id)).events) {
    if (event.type === 'THREAD_CONTINUED' && event.toExecutionId === executionId) return event.step;
  }
  return undefined;
}

async function find(executions: ExecutionIndex, executionId: string): Promise<ExecutionRecord | undefined> {
  try {
    return await executions.getExecution(executionId);
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND') return undefined;
    throw error;
  }
}

/** A run's executions as recorded, and the one in flight. */
export interface RunChain {
  /** The executions with a record, first to last. */
  readonly chain: readonly ExecutionRecord[];
  /**
   * The last of them: the thread's execution, or the one that handed the thread to a successor whose
   * record was not written yet.
   */
  readonly current: ExecutionRecord;
}

/**
 * The executions of the run a root thread runs in, following the thread's claim rather than the
 * records' forward links (a successor records itself before its predecessor is marked CONTINUED).
 * Undefined when the thread names no execution that can be found.
 */
export async function runChainOf(
  executions: ExecutionIndex,
  thread: Thread,
  known?: ExecutionRecord,
): Promise<RunChain | undefined> {
  const lookup = (id: string | undefined) =>
    id === undefined ? undefined : id === known?.executionId ? known : find(executions, id);
  const current =
    (await lookup(thread.metadata.executionId)) ??
    // Claimed by a successor that ran no step yet and has no record: the thread's last envelope is
    // still its predecessor's.
    (await lookup(thread.lastEnvelope?.executionId));
  if (current === undefined || current.rootThreadId !== thread.id) return undefined;
  const chain = await executionChain(executions, current);
  // Forward links past the thread's execution would be another run's: there are none, but stop there.
  return { chain: chain.slice(0, chain.indexOf(current) + 1), current };
}

/**
 * The execution to resume for a thread: a root thread's in-flight execution (see `runChainOf`), a fork
 * child's execution otherwise. Undefined when the thread never ran in one.
 */
export async function executionToResume(
  executions: ExecutionIndex,
  thread: Thread,
): Promise<string | undefined> {
  const claimed = thread.metadata.executionId;
  if (claimed === undefined || thread.metadata.parentThreadId !== undefined) return claimed;
  return (await runChainOf(executions, thread))?.current.executionId ?? claimed;
}
