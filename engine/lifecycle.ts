/**
 * The life of one node execution (seed 003 §2.1), shared by every node type's handler:
 * NODE_STARTED → BEFORE_EXECUTE hooks → node logic → AFTER_EXECUTE hooks → NODE_COMPLETED | NODE_FAILED.
 * A SUBGRAPH, inlined, runs no step of its own: its boundary nodes and failures inside it carry its
 * NODE_STARTED (before ENTER's), NODE_COMPLETED (after EXIT's) or NODE_FAILED (after the failed node's).
 *
 * Failures of the node logic become a FAILED NodeResult (and NODE_FAILED) rather than an exception,
 * so the handler can record them and let the state machine route on the result.
 */
import { type CodedError, StepthreadError } from './errors.ts';
import { createEvent, type StepthreadEvent } from './events.ts';
import { runHooks } from './hooks.ts';
import type { Hook, WorkflowNode } from './model/schema.ts';
import type { EngineEnv, NodeResult } from './thread/types.ts';

export interface NodeLogicResult {
  output?: unknown;
  /** SKIPPED: the node decided not to act (e.g. a branch not taken). Default COMPLETED. */
  status?: 'COMPLETED' | 'SKIPPED';
  /** Events the logic produced (VARIABLE_CHANGED, CONTEXT_PROCESSED, ...), recorded between the hooks. */
  events?: readonly StepthreadEvent[];
  /**
   * Events recorded after NODE_COMPLETED: the status the node ended its thread with (END's
   * THREAD_COMPLETED), as a failure's THREAD_FAILED follows NODE_FAILED. The seed's END sets no
   * status; its thread completes once the node has.
   */
  eventsAfter?: readonly StepthreadEvent[];
}

/**
 * A failure of the node logic after something observable already happened (e.g. a token limit
 * passed): its events are recorded before NODE_FAILED, though the node's other work is dropped.
 */
export class NodeLogicFailure extends StepthreadError {
  readonly events: readonly StepthreadEvent[];

  constructor(error: StepthreadError, events: readonly StepthreadEvent[]) {
    super(error.code, error.message, { ...(error.nodeId ? { nodeId: error.nodeId } : {}), cause: error });
    this.events = events;
  }
}

/**
 * A SUBGRAPH a node's failure fails: one the node sits in, or the one a boundary node opens or closes.
 * `hooks` are its AFTER_EXECUTE hooks still to run then (an EXIT runs its SUBGRAPH's as its own).
 */
export interface EnclosingSubgraph {
  subgraphId: string;
  hooks?: Hook[];
}

/** The node's own work; it may do I/O through adapters the handler closes over. */
export type NodeLogic = () => NodeLogicResult | Promise<NodeLogicResult>;

export interface NodeLifecycleOptions {
  node: Pick<WorkflowNode, 'id' | 'type' | 'hooks'>;
  threadId: string;
  workflowId: string;
  /**
   * Expression scope for hooks (variables, input, ...). AFTER hooks also see `result`. Built only for
   * a node with hooks, before its logic runs: most nodes have none, and a scope copies every variable.
   */
  scope: () => Record<string, unknown>;
  /**
   * The scope as the node left it, for AFTER hooks when it completed (variables it set included). A
   * failed node keeps nothing, so its AFTER hooks see `scope`.
   */
  scopeAfter?: () => Record<string, unknown>;
  env: Pick<EngineEnv, 'now'>;
  /** Lambda/Step Functions attempt number, recorded on the result. */
  attempt?: number;
  /**
   * When the node started, if before this step: a USER_INTERACTION started when its question was
   * asked, though the step that records it runs with the answer. NODE_STARTED and the BEFORE hooks
   * carry this time, and the result's `startedAt`, so its duration covers the wait.
   */
  startedAt?: string;
  /**
   * The SUBGRAPHs the node's failure fails, innermost first, and how many of those this thread entered
   * (a FORK's branches start outside them: their failure is the JOIN's to judge, not the subgraph's).
   * Each ends as a node of its own after the node's NODE_FAILED: its AFTER hooks, seeing the failure,
   * then its NODE_FAILED with the same error.
   */
  enclosing?: { subgraphs: readonly EnclosingSubgraph[]; entered: number };
  /**
   * The SUBGRAPH a boundary node opens (ENTER: its NODE_STARTED comes first) or closes (EXIT: its
   * NODE_COMPLETED comes last), so the SUBGRAPH starts and ends under its own id.
   */
  subgraph?: { opens: string } | { closes: string };
  logic: NodeLogic;
}

export interface NodeLifecycleResult {
  result: NodeResult;
  /** In the order they happened. */
  events: StepthreadEvent[];
}

function nodeFailure(error: unknown, nodeId: string): CodedError {
  if (error instanceof StepthreadError) return { ...error.toJSON(), nodeId: error.nodeId ?? nodeId };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'NODE_EXECUTION_FAILED', message, nodeId };
}

/** What the logic came to: an output, or a coded error — never both, never neither. */
type LogicOutcome =
  | { status: 'COMPLETED' | 'SKIPPED'; output: unknown }
  | { status: 'FAILED'; error: CodedError };

/** The SUBGRAPHs a failure ends, innermost first: those this thread entered. */
function failedSubgraphs(options: NodeLifecycleOptions): readonly EnclosingSubgraph[] {
  const { subgraphs = [], entered = 0 } = options.enclosing ?? {};
  return subgraphs.slice(0, entered);
}

export async function executeNodeLifecycle(options: NodeLifecycleOptions): Promise<NodeLifecycleResult> {
  const { node, threadId, workflowId, env, attempt } = options;
  const base = { threadId, workflowId, nodeId: node.id };
  const hookCtx = { ...base, env };
  const attemptField = attempt === undefined ? {} : { attempt };
  const startedAt = options.startedAt ?? env.now();
  const events: StepthreadEvent[] = [];
  const opened = options.subgraph && 'opens' in options.subgraph ? options.subgraph.opens : undefined;
  if (opened !== undefined) {
    events.push(
      createEvent('NODE_STARTED', { ...base, nodeId: opened, at: startedAt, nodeType: 'SUBGRAPH' }),
    );
  }
  events.push(createEvent('NODE_STARTED', { ...base, at: startedAt, nodeType: node.type, ...attemptField }));
  const ending = failedSubgraphs(options);
  const hooked =
    (node.hooks?.length ?? 0) > 0 || ending.some((subgraph) => (subgraph.hooks?.length ?? 0) > 0);
  const scope = hooked ? options.scope() : {};
  const beforeCtx = options.startedAt === undefined ? hookCtx : { ...base, env: { now: () => startedAt } };
  events.push(...runHooks(node.hooks, 'BEFORE_EXECUTE', scope, beforeCtx));

  let outcome: LogicOutcome;
  let eventsAfter: readonly StepthreadEvent[] = [];
  try {
    const logicResult = await options.logic();
    events.push(...(logicResult.events ?? []));
    eventsAfter = logicResult.eventsAfter ?? [];
    outcome = { status: logicResult.status ?? 'COMPLETED', output: logicResult.output };
  } catch (error) {
    if (error instanceof NodeLogicFailure) events.push(...error.events);
    outcome = { status: 'FAILED', error: nodeFailure(error, node.id) };
  }

  const failed = outcome.status === 'FAILED';
  const left = () => (failed || !options.scopeAfter ? scope : options.scopeAfter());
  const afterScope = hooked ? { ...left(), result: { ...outcome } } : {};
  if (hooked) events.push(...runHooks(node.hooks, 'AFTER_EXECUTE', afterScope, hookCtx));

  const endedAt = env.now();
  const common = { nodeId: node.id, nodeType: node.type, startedAt, endedAt, ...attemptField };
  if (outcome.status === 'FAILED') {
    events.push(
      createEvent('NODE_FAILED', { ...base, at: endedAt, nodeType: node.type, error: outcome.error }),
    );
    for (const { subgraphId, hooks } of ending) {
      const subgraphCtx = { ...hookCtx, nodeId: subgraphId };
      if (hooked) events.push(...runHooks(hooks, 'AFTER_EXECUTE', afterScope, subgraphCtx));
      events.push(
        createEvent('NODE_FAILED', {
          ...base,
          nodeId: subgraphId,
          at: env.now(),
          nodeType: 'SUBGRAPH',
          error: outcome.error,
        }),
      );
    }
    return { result: { ...common, status: 'FAILED', error: outcome.error }, events };
  }
  events.push(
    createEvent('NODE_COMPLETED', { ...base, at: endedAt, nodeType: node.type, status: outcome.status }),
  );
  if (options.subgraph && 'closes' in options.subgraph) {
    events.push(
      createEvent('NODE_COMPLETED', {
        ...base,
        nodeId: options.subgraph.closes,
        at: endedAt,
        nodeType: 'SUBGRAPH',
        status: 'COMPLETED',
      }),
    );
  }
  events.push(...eventsAfter);
  const output = outcome.output === undefined ? {} : { output: outcome.output };
  return { result: { ...common, status: outcome.status, ...output }, events };
}
