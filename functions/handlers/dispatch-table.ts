/**
 * Routing a Task to its code. The ASL sends every Task to the Lambda function of its node's type
 * (`fail` goes to END's, the branch bookkeeping and `timeout` to JOIN's), so a function is described by
 * the actions it serves for that one type. A Lambda entry builds its dispatch from its own table only,
 * which keeps other node types' code (LLM providers, tools, the sandbox) out of its bundle; the local
 * runtime uses the table of every function (functions/nodes/index.ts).
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeType } from '../../engine/model/schema.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import { tracedTask } from '../telemetry/index.ts';
import type { HandlerDeps } from './deps.ts';
import { toTaskError } from './errors.ts';
import { withNodeBudget } from './node-budget.ts';
import { withNodeDescription } from './node-tables.ts';
import { type NodeBehaviour, runNodeStep } from './pipeline.ts';
import {
  type IncomingEnvelope,
  parseTaskEvent,
  type StartTaskEvent,
  type TaskAction,
  type TaskEvent,
} from './task.ts';

export type TaskResult = Envelope | IncomingEnvelope;
export type TaskRunner = (event: TaskEvent, deps: HandlerDeps) => Promise<TaskResult>;

/** What one function serves, by action; an action added to TASK_ACTIONS becomes a possible key. */
export type ActionTable = { readonly [A in TaskAction]?: TaskRunner };

/**
 * START creates its thread from the execution input instead of loading one. Its function also serves
 * `resume`: a continuing run's new execution claims the thread (continue-as-new).
 */
export interface StartActions {
  readonly execute: (event: StartTaskEvent, deps: HandlerDeps) => Promise<Envelope>;
  readonly resume?: TaskRunner;
}

export type ActionsOf<T extends NodeType> = T extends 'START' ? StartActions : ActionTable;

/** The functions a dispatch serves, by node type. */
export type DispatchTable = { readonly [T in NodeType]?: ActionsOf<T> };

export type Dispatch = (event: unknown, deps: HandlerDeps) => Promise<TaskResult>;

/** `execute` as one step of the node pipeline with the node type's logic. */
export function stepOf(behaviour: NodeBehaviour): TaskRunner {
  return (event, deps) => runNodeStep(event, deps, behaviour);
}

function notServed(type: NodeType, action: TaskAction, nodeId: string): StepthreadError {
  return new StepthreadError('INVALID_TASK_INPUT', `action ${action} is not served for ${type} nodes`, {
    nodeId,
  });
}

/**
 * Continue-as-new counting (engine/asl/continuation.ts): a Task's `historyEvents` go into its
 * envelope's `history` before the handler runs, so the envelope a step returns (and stores as the
 * thread's `lastEnvelope`, replayed to a retry) carries the count up to and including that Task.
 */
function counted(event: TaskEvent): TaskEvent {
  if (event.historyEvents === undefined) return event;
  const history = (event.envelope.history ?? 0) + event.historyEvents;
  return { ...event, envelope: { ...event.envelope, history } };
}

/** A result the handler built without the count (START's envelope, a replayed one) gets it. */
function withHistory<T extends TaskResult>(result: T, history: number | undefined): T {
  return history === undefined || result.history !== undefined ? result : { ...result, history };
}

async function route(table: DispatchTable, raw: unknown, deps: HandlerDeps): Promise<TaskResult> {
  const parsed = parseTaskEvent(raw);
  const action = parsed.action ?? 'execute';
  const { type, id } = parsed.node;
  if (type === 'START') {
    const start = table.START;
    if (start !== undefined && action === 'execute') {
      const event = parsed as StartTaskEvent;
      return withHistory(await start.execute(event, deps), event.historyEvents);
    }
    // The new execution starts its own count: the resume action sets `history` itself.
    if (start?.resume !== undefined && action === 'resume') return start.resume(parsed as TaskEvent, deps);
    throw notServed(type, action, id);
  }
  const run = table[type]?.[action];
  if (run === undefined) throw notServed(type, action, id);
  const event = counted(parsed as TaskEvent);
  return withHistory(await run(event, deps), event.envelope.history);
}

function nodeIdOf(event: unknown): string | undefined {
  const node = (event as { node?: { id?: unknown } } | null)?.node;
  return typeof node?.id === 'string' ? node.id : undefined;
}

/**
 * Runs one Task with the functions of `table`. The result throws only errors named for the ASL's
 * Retry/Catch (`stepthread.NodeFailed`, `stepthread.Transient`), or unexpected errors unchanged; a
 * join's decision or timeout is a result (functions/nodes/join.ts), not an error.
 */
export function createDispatch(table: DispatchTable): Dispatch {
  const run = async (event: unknown, deps: HandlerDeps): Promise<TaskResult> => {
    try {
      // Every expression the Task evaluates shares one budget; a step run again (runNodeStep) gets a new one.
      return await withNodeBudget(nodeIdOf(event) ?? '(unknown)', () => route(table, event, deps));
    } catch (error) {
      throw toTaskError(error, nodeIdOf(event));
    }
  };
  return async (event, deps) => {
    // A node named by reference gets its description first: everything after reads the event whole.
    let described: unknown;
    try {
      described = await withNodeDescription(event, deps.nodeTables);
    } catch (error) {
      throw toTaskError(error, nodeIdOf(event));
    }
    // A step span around it while tracing; the run's trace context passed on either way.
    return tracedTask(described, deps, run);
  };
}
