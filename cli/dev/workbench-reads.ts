/**
 * What the console's workbench reads besides the execution page: a step's input as its node ran it
 * (`GET /api/threads/:id/steps/:step/input`), and two threads compared (`GET /api/compare`), the
 * report `stepthread diff --json` gives with each side's steps and conversation beside it.
 */
import { describeNode } from '../../engine/asl/node-description.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { buildGraph } from '../../engine/graph/build.ts';
import type { Message, Workflow } from '../../engine/model/schema.ts';
import { nodeInputOf } from '../../engine/node-input.ts';
import { buildExpressionScope } from '../../engine/scope.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { forkStepOfJoinKey } from '../../functions/nodes/ids.ts';
import { copySourceOf } from '../../functions/stores/thread-store.ts';
import { threadBefore } from '../../functions/stores/time-travel.ts';
import { hydrateAll } from '../../functions/stores/value-store.ts';
import { compareHistories, diffReportOf } from '../commands/diff.ts';
import { INSPECT_MAX_READ_BYTES } from '../commands/inspect.ts';
import type { Comparison, StepInput } from './workbench-types.ts';

export type { ComparedStep, Comparison, StepInput } from './workbench-types.ts';

/**
 * A step's input: the thread as it was before the step (time travel), the node's templates rendered
 * over it, and the tool calls the step added to the conversation. `workflowOf` gives the workflow
 * the thread ran (its run's record, else the folder's file).
 */
export async function stepInputOf(
  runtime: LocalRuntime,
  threadId: string,
  step: number,
  workflowOf: (thread: Thread) => Promise<Workflow | undefined>,
): Promise<StepInput> {
  const { stores } = runtime;
  const { thread } = await stores.threads.getThread(threadId);
  const stepCount = thread.step ?? 0;
  if (step > stepCount) {
    throw new StepthreadError(
      'COPY_POINT_NOT_FOUND',
      `thread ${threadId} has ${stepCount} step(s) of its own: there is no step ${step}`,
    );
  }
  const before = await stateBeforeStep(runtime, thread, step);
  if (before === undefined) {
    // A root thread's first step is its START: it reads the run's input and nothing else.
    return {
      threadId,
      step,
      nodeId: 'start',
      nodeType: 'START',
      toolCalls: [],
      rendered: {},
      reads: {},
      definitionKnown: true,
    };
  }
  const after =
    step < stepCount ? (await threadBefore(stores.threads, thread, { step: step + 1 })).thread : thread;
  const record = await stores.threads.getStep(threadId, step);
  const nodeId = record?.result.nodeId ?? before.currentNodeId ?? '?';
  const nodeType = record?.result.nodeType ?? '?';
  const toolCalls = toolCallsAdded(await runtime.conversationOf(before), await runtime.conversationOf(after));
  const workflow = await workflowOf(thread);
  const graph = workflow === undefined ? undefined : buildGraph(workflow);
  const node = graph?.nodes.get(nodeId);
  const common = { threadId, step, nodeId, nodeType, toolCalls };
  if (graph === undefined || node === undefined) {
    return { ...common, rendered: {}, reads: {}, definitionKnown: false };
  }
  const described = describeNode(graph, node);
  // The values the state holds by reference (large ones) are read back, as the node read them.
  const results = Object.entries(before.nodeResults);
  const limit = { maxBytes: INSPECT_MAX_READ_BYTES };
  const [state, outputs] = await Promise.all([
    hydrateAll(stores.values, [{ input: before.input, variables: before.variables }], limit),
    hydrateAll(
      stores.values,
      results.map(([, result]) => ({ output: result.output })),
      limit,
    ),
  ]);
  const values = state.data[0]!;
  const nodeResults = Object.fromEntries(
    results.map(([id, result], index) => [id, { ...result, output: outputs.data[index]!.output }]),
  );
  const scope = buildExpressionScope(
    { ...before, input: values.input, variables: values.variables, nodeResults },
    'nodeAliases' in described ? described.nodeAliases : undefined,
  );
  return { ...common, ...nodeInputOf(node, scope), definitionKnown: true };
}

/**
 * The thread as step `step` found it (time travel); undefined for a root thread's START. A fork
 * branch's first step found its parent's state after the FORK (its thread and global variables,
 * conversation and node outputs), under its own id and fork context: no step record of its own holds it.
 */
async function stateBeforeStep(
  runtime: LocalRuntime,
  thread: Thread,
  step: number,
): Promise<Thread | undefined> {
  const { threads } = runtime.stores;
  if (step > 1 || copySourceOf(thread) !== undefined)
    return (await threadBefore(threads, thread, { step })).thread;
  const { parentThreadId, joinKey } = thread.metadata;
  const forkStep = typeof joinKey === 'string' ? forkStepOfJoinKey(joinKey) : undefined;
  if (typeof parentThreadId !== 'string' || forkStep === undefined) return undefined;
  const { thread: parent } = await threads.getThread(parentThreadId);
  const at =
    forkStep < (parent.step ?? 0)
      ? (await threadBefore(threads, parent, { step: forkStep + 1 })).thread
      : parent;
  return {
    ...thread,
    input: at.input,
    conversation: at.conversation,
    nodeResults: at.nodeResults,
    variables: { ...thread.variables, thread: at.variables.thread, global: at.variables.global },
  };
}

/** The tool calls among the messages a step appended, each with the tool message that answered it. */
function toolCallsAdded(before: readonly Message[], after: readonly Message[]): StepInput['toolCalls'] {
  const added = after.slice(before.length);
  const results = new Map(
    added.flatMap((message) =>
      message.role === 'tool' && message.toolCallId ? [[message.toolCallId, message.content] as const] : [],
    ),
  );
  return added.flatMap((message) =>
    (message.toolCalls ?? []).map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.arguments,
      ...(results.has(call.id) ? { result: results.get(call.id)! } : {}),
    })),
  );
}

/** Steps of each side the Compare view lists with their outputs. */
export const MAX_COMPARED_STEPS = 500;

/** Two threads (or executions' root threads) compared as `diff` compares them. */
export async function comparisonOf(runtime: LocalRuntime, idA: string, idB: string): Promise<Comparison> {
  const histories = await compareHistories(runtime, idA, idB, 'stepthread runs', MAX_COMPARED_STEPS);
  const diff = await diffReportOf(runtime, histories);
  const side = async (thread: Thread, history: typeof histories.a) => ({
    threadId: thread.id,
    steps: history.kept.map((kept, index) => ({ ...history.digests[index]!, ...kept })),
    stepsNotShown: history.digests.length - history.kept.length,
    messages: await runtime.conversationOf(thread),
  });
  return {
    diff,
    a: await side(histories.threadA, histories.a),
    b: await side(histories.threadB, histories.b),
  };
}
