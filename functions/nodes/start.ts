/**
 * START: creates the run's root thread — its id derived from the execution id, so a retried START
 * finds the thread it created — already past its first step, in one PutItem, then records the
 * execution in the execution index.
 */
import { createConversation } from '../../engine/conversation/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { executeNodeLifecycle } from '../../engine/lifecycle.ts';
import { DEFAULT_MAX_STEPS } from '../../engine/model/schema.ts';
import { buildExpressionScope } from '../../engine/scope.ts';
import { createThread, transitionThread } from '../../engine/thread/index.ts';
import type { Envelope, Thread } from '../../engine/thread/types.ts';
import { publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import { nodeFailed, type StartTaskEvent } from '../handlers/task.ts';
import { EMPTY_LOG_ID } from '../stores/conversation-store.ts';
import type { ExecutionRecord } from '../stores/execution-index.ts';
import type { StepRecord } from '../stores/thread-store.ts';
import { createSpiller, mapSlots } from '../stores/value-refs.ts';
import { hydrateAll } from '../stores/value-store.ts';
import { parseTraceparent } from '../telemetry/trace-context.ts';
import { rootThreadIdFor } from './ids.ts';
import { budgetMarkOf, requireSpend, runBudgetOf } from './run-budget.ts';

function executionRecordOf(thread: Thread, executionId: string): ExecutionRecord {
  return {
    executionId,
    rootThreadId: thread.id,
    workflowId: thread.workflowId,
    workflowVersion: thread.workflowVersion,
    // Always RUNNING: the record is created once; later statuses are updates.
    status: 'RUNNING',
    startTime: thread.startTime,
  };
}

/** The caller's trace context, kept for the run's span (functions/telemetry); only a well-formed one. */
function callerTrace(traceparent: unknown): { traceparent?: string } {
  return parseTraceparent(traceparent) ? { traceparent: traceparent as string } : {};
}

export async function runStart(event: StartTaskEvent, deps: HandlerDeps): Promise<Envelope> {
  const { node, executionId } = event;
  const workflow = node.workflow;
  if (workflow === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', `START node ${node.id} needs the workflow description`, {
      nodeId: node.id,
    });
  }
  const threadId = event.input?.threadId ?? rootThreadIdFor(executionId);
  // An input over the StartExecution limit arrives as a reference to S3 (claim check).
  const given = await hydrateAll(deps.values, [{ input: event.input?.input ?? {} }]);
  const input = given.data[0]!.input as Record<string, unknown>;
  // The run's budget; a run with none says so on its head, so its steps read no spend (run-budget.ts).
  const budget = runBudgetOf(workflow.budget, event.input?.budget, node.id);
  const created = createThread({
    id: threadId,
    workflow: {
      id: workflow.id,
      version: workflow.version,
      ...(workflow.variables ? { variables: workflow.variables } : {}),
    },
    input,
    env: deps.env,
    conversation: createConversation({ threadId, logId: EMPTY_LOG_ID }),
    metadata: { executionId, ...callerTrace(event.input?.traceparent), ...budgetMarkOf(budget) },
  });
  const started = transitionThread(created.thread, 'RUNNING', deps.env);
  const lifecycle = await executeNodeLifecycle({
    node: { id: node.id, type: 'START', ...(node.hooks ? { hooks: node.hooks } : {}) },
    threadId,
    workflowId: workflow.id,
    scope: () => buildExpressionScope(started.thread),
    env: deps.env,
    logic: () => ({ output: input }),
  });
  const { result } = lifecycle;
  const envelope: Envelope = {
    executionId,
    workflowId: workflow.id,
    workflowVersion: workflow.version,
    rootThreadId: threadId,
    threadId,
    step: 1,
    maxSteps: workflow.maxSteps ?? DEFAULT_MAX_STEPS,
    last: { nodeId: node.id, status: result.status === 'FAILED' ? 'FAILED' : 'COMPLETED' },
  };
  const spiller = createSpiller(given.known, new Map(), { nodeId: node.id });
  const storedResult = mapSlots(result, spiller.spill);
  const thread: Thread = mapSlots(
    {
      ...started.thread,
      currentNodeId: node.id,
      nodeResults: node.resultUnread ? {} : { [node.id]: storedResult },
      errors: result.error ? [result.error] : [],
      step: 1,
      lastEnvelope: envelope,
    },
    spiller.spill,
  );
  const {
    id: _id,
    nodeResults: _results,
    executionHistory: _history,
    step: _step,
    lastEnvelope: _last,
    ...state
  } = thread;
  // The whole head as START left it: the base that later records' changes apply to (time travel).
  const record: StepRecord = {
    step: 1,
    result: storedResult,
    events: [created.event, started.event, ...lifecycle.events],
    state,
  };
  // A large input goes by reference, in one S3 object.
  if (spiller.pending.size > 0) {
    if (deps.values === undefined) throw new Error('a large input needs the value store (deps.values)');
    spiller.resolve(await deps.values.putValues(spiller.pending));
  }

  // The run's budget, where every step of its tree reads it (a retry sets the same again).
  if (budget !== undefined) await requireSpend(deps).setBudget(threadId, budget);

  let events = record.events;
  let stored: Thread = thread;
  try {
    await deps.threads.createThread(thread, { step: record });
  } catch (error) {
    // A retry: the first attempt created the thread (with its own timestamps) and its step record.
    if (!(error instanceof StepthreadError && error.code === 'CREATE_CONFLICT')) throw error;
    const existing = (await deps.threads.getThread(threadId)).thread;
    if (existing.metadata.executionId !== executionId || existing.lastEnvelope === undefined) throw error;
    stored = existing;
    // The first attempt may have died between the head and its record: then this attempt's stands in.
    const committed = (await deps.threads.getStep(threadId, 1)) ?? record;
    events = committed.events;
    stored = { ...stored, nodeResults: { [node.id]: committed.result } };
    if (committed === record) await deps.threads.putStepOnce(threadId, record);
    if (!node.resultUnread) await deps.threads.putNodeResults(threadId, [committed.result]);
  }
  // After the create (the commit); a retry publishes the stored events again (at least once).
  await publishCommitted(deps.events, events, { executionId });
  await deps.executions.putExecution(executionRecordOf(stored, executionId));
  // A resumed execution finds its thread further on: it replays from START's envelope, step by step.
  const last = (stored.step ?? 1) > 1 ? envelope : stored.lastEnvelope!;
  if (last.last?.status === 'FAILED') {
    throw nodeFailed(
      stored.nodeResults[node.id]?.error ?? { code: 'NODE_EXECUTION_FAILED', message: 'START failed' },
    );
  }
  return last;
}
