/**
 * Approval of one tool call: a tool declared with `requiresApproval` (true, or an expression over the
 * call's `args`) makes an LLM node stop before that call until a person answers, as a USER_INTERACTION
 * `ask_for_approval` does (`pending`, `respond`, `resume --answers`, the terminal, the console).
 *
 * Design — the compiled LLM node is its Task `<id>`, a Choice and a waitForTaskToken Task (engine/asl):
 *
 * 1. `<id>` runs the request. At a held call the tool loop stops (ApprovalNeeded); the logic keeps
 *    where it was — every reply and result so far — as the node's held turn (`holdTurn`), and the step
 *    ends uncommitted: its Task returns the envelope marked `approval: {ask, tool}`.
 * 2. The Choice sends a marked envelope to `<id>:approval`, whose handler (`requestApproval`, this
 *    function's `approval` action) records the PENDING interaction with the task token, the tool, its
 *    arguments and the model's message. What SendTaskSuccess carries lands at `$.answer`; a
 *    SendTaskFailure or timeout at `$.error`. Either way the run goes back to `<id>`.
 * 3. `<id>` again: the held turn and the answer continue the request where it stopped
 *    (`approvalResumeOf`) — an approved call runs once, a rejected one gets a refusal tool result with
 *    the reason, and the model is not asked that turn again. The interaction is closed then. A later
 *    held call of the same request asks the next question (`ask` + 1), one after the other.
 *
 * A run resumed (or a Task retried) with no answer at hand finds the held turn of its visit and asks
 * again — or takes the answer the interaction item already recorded — without calling the model.
 */
import { DEFAULT_INTERACTION_TIMEOUT_SECONDS } from '../../engine/asl/compile.ts';
import { HISTORY_EVENTS } from '../../engine/asl/continuation.ts';
import type { ApprovalMark, IncomingEnvelope } from '../../engine/asl/task-input.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent } from '../../engine/events.ts';
import { evaluateCondition } from '../../engine/expression/index.ts';
import type { ToolDefinition, UserInteractionConfig } from '../../engine/model/schema.ts';
import { isTerminalStatus } from '../../engine/thread/index.ts';
import { publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import type { TaskRunner } from '../handlers/dispatch-table.ts';
import type { StepContext } from '../handlers/pipeline.ts';
import type { TaskEvent, TaskNode } from '../handlers/task.ts';
import type { ApprovalDecision, ApprovalNeeded, ToolLoopState } from '../llm/tool-loop.ts';
import { canonicalJson, shortHash } from '../stores/canonical-json.ts';
import {
  type HeldToolCall,
  type HeldTurn,
  type Interaction,
  type InteractionResolution,
  type InteractionStore,
  interactionIdOf,
} from '../stores/interaction-store.ts';
import { isValueRef, type ValueRef } from '../stores/value-refs.ts';
import { RESOLVED_RETENTION_SECONDS, resolutionOf } from './user-interaction.ts';

/** How long a held call waits for its answer (as a USER_INTERACTION without timeoutSeconds). */
export const APPROVAL_TIMEOUT_SECONDS = DEFAULT_INTERACTION_TIMEOUT_SECONDS;

/** A held turn's JSON above this goes to the value store (a DynamoDB item holds 400 KB). */
const INLINE_TURN_BYTES = 200_000;

/** The config an approval is answered as: an ask_for_approval without options. */
const APPROVAL_QUESTION: UserInteractionConfig = { userInteractionType: 'ask_for_approval' };

/**
 * Whether a call waits for approval, by its tool's `requiresApproval`; undefined when no tool has one.
 * An expression that cannot be evaluated on the call's arguments holds the call: a gate fails closed.
 */
export function approvalRule(
  tools: Readonly<Record<string, ToolDefinition>>,
): ((name: string, args: Record<string, unknown>) => boolean) | undefined {
  const gated = Object.values(tools).some((tool) => tool.requiresApproval && tool.requiresApproval !== '');
  if (!gated) return undefined;
  return (name, args) => {
    const rule = Object.hasOwn(tools, name) ? tools[name]!.requiresApproval : undefined;
    if (rule === undefined || rule === false) return false;
    if (rule === true) return true;
    try {
      return evaluateCondition(rule, { args });
    } catch {
      return true;
    }
  };
}

/** Thrown by the LLM logic once its turn is held: the step ends uncommitted, its Task returns the mark. */
export class HeldForApproval extends Error {
  readonly mark: ApprovalMark;
  constructor(mark: ApprovalMark) {
    super(`tool ${mark.tool} waits for approval (question ${mark.ask})`);
    this.name = 'HeldForApproval';
    this.mark = mark;
  }
}

function requireStore(deps: HandlerDeps): InteractionStore {
  if (deps.interactions === undefined)
    throw new StepthreadError('INVALID_TASK_INPUT', 'no interaction store configured');
  return deps.interactions;
}

function epochSeconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}

/** Keeps where the request stopped (question `ask` of this visit), then ends the step with the mark. */
export async function holdTurn(ctx: StepContext, needed: ApprovalNeeded, ask: number): Promise<never> {
  const { deps, node, envelope } = ctx;
  const reply = needed.state.appended[needed.state.appended.length - 1 - needed.state.nextCall];
  const call: HeldToolCall = {
    id: needed.call.id,
    name: needed.call.name,
    arguments: needed.call.arguments,
    message: reply?.content ?? '',
  };
  const json = canonicalJson(needed.state);
  let stored: Pick<HeldTurn, 'turn' | 'turnRef'> = { turn: json };
  if (Buffer.byteLength(json) > INLINE_TURN_BYTES && deps.values !== undefined) {
    const hash = shortHash(json);
    const objectId = await deps.values.putValues(new Map([[hash, needed.state]]));
    stored = {
      turnRef: {
        '$stepthread:ref': `v:${objectId}/${hash}`,
        bytes: Buffer.byteLength(json),
      } satisfies ValueRef,
    };
  }
  const expires = Date.parse(deps.env.now()) / 1000 + APPROVAL_TIMEOUT_SECONDS + RESOLVED_RETENTION_SECONDS;
  await requireStore(deps).holdTurn(
    { threadId: ctx.thread.id, nodeId: node.id, step: envelope.step, ask, call, ...stored },
    { expiresAt: Math.floor(expires) },
  );
  throw new HeldForApproval({ ask, tool: call.name });
}

async function turnStateOf(deps: HandlerDeps, held: HeldTurn): Promise<ToolLoopState> {
  if (held.turn !== undefined) return JSON.parse(held.turn) as ToolLoopState;
  if (!isValueRef(held.turnRef) || deps.values === undefined) {
    throw new StepthreadError('VALUE_NOT_FOUND', `the held turn of node ${held.nodeId} cannot be read`, {
      nodeId: held.nodeId,
    });
  }
  const values = await deps.values.read([held.turnRef]);
  return values.get(held.turnRef['$stepthread:ref']) as ToolLoopState;
}

/** Where a node's request goes on from after an approval question: its held turn and the decision. */
export interface ApprovalResume {
  readonly state: ToolLoopState;
  /** The question answered (the next one asks ask + 1). */
  readonly ask: number;
  readonly decision: ApprovalDecision;
}

function decisionOf(resolution: InteractionResolution, nodeId: string): ApprovalDecision {
  if (resolution.outcome === 'FAILED') {
    throw new StepthreadError(resolution.code, resolution.reason, { nodeId });
  }
  const { answer } = resolution;
  if (answer.kind !== 'approval') {
    throw new StepthreadError('INVALID_INTERACTION_ANSWER', `node ${nodeId}: expects an approval`, {
      nodeId,
    });
  }
  return answer.approved
    ? { approved: true }
    : { approved: false, ...(answer.reason === undefined ? {} : { reason: answer.reason }) };
}

/**
 * How this run of the node goes on: undefined for a fresh request (no turn held on this visit);
 * the held turn and the person's decision when it was answered (the answer in the envelope, or one
 * the interaction item recorded before a resume); HeldForApproval again when the question still waits.
 * A failed or timed-out question fails the node with its code.
 */
export async function approvalResumeOf(ctx: StepContext): Promise<ApprovalResume | undefined> {
  const { deps, node, envelope } = ctx;
  if (deps.interactions === undefined) return undefined;
  const held = await deps.interactions.getHeldTurn(ctx.thread.id, node.id);
  if (held === undefined || held.step !== envelope.step) return undefined;
  const visit = { threadId: ctx.thread.id, nodeId: node.id, step: held.step, ask: held.ask };
  const answered = envelope.answer !== undefined || envelope.error !== undefined;
  let resolution: InteractionResolution | undefined;
  if (envelope.approval?.ask === held.ask && answered) {
    resolution = resolutionOf(node, APPROVAL_QUESTION, envelope);
    await deps.interactions.close(visit, resolution, deps.env.now());
  } else {
    // No answer here (a resumed run, a retried Task): the item may hold the one given before.
    const asked = await deps.interactions.getInteraction(ctx.thread.id, node.id).catch(() => undefined);
    const recorded =
      asked?.step === held.step && asked.ask === held.ask && asked.status !== 'PENDING'
        ? asked.resolution
        : undefined;
    if (recorded === undefined || !('answer' in recorded || recorded.outcome === 'FAILED')) {
      throw new HeldForApproval({ ask: held.ask, tool: held.call.name });
    }
    resolution = recorded as InteractionResolution;
  }
  const decision = decisionOf(resolution, node.id);
  return { state: await turnStateOf(deps, held), ask: held.ask, decision };
}

/** The envelope an LLM Task returns when its turn is held: marked, so the Choice goes to the wait. */
function markedEnvelope(envelope: IncomingEnvelope, mark: ApprovalMark): IncomingEnvelope {
  const { answer: _answer, error: _error, approval: _approval, ...rest } = envelope;
  // The wait Task's events, counted here: its own result goes to $.answer, not the envelope.
  const history =
    rest.history === undefined ? {} : { history: rest.history + HISTORY_EVENTS.integrationTask };
  return { ...rest, ...history, approval: mark };
}

/** The LLM node's `execute`: a held turn ends the Task with the marked envelope instead of a step. */
export function withApprovals(run: TaskRunner): TaskRunner {
  return async (event, deps) => {
    try {
      return await run(event, deps);
    } catch (error) {
      if (error instanceof HeldForApproval) return markedEnvelope(event.envelope, error.mark);
      throw error;
    }
  };
}

function previewOf(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** The question a held call asks. */
export function approvalQuestion(call: Pick<HeldToolCall, 'name' | 'arguments'>): string {
  return `Approve the call of tool ${call.name} with ${previewOf(call.arguments)}?`;
}

/**
 * The `approval` action (the waitForTaskToken Task `<id>:approval`): records the PENDING question of
 * the held turn with this attempt's token and returns (the Task then waits for SendTaskSuccess/Failure).
 */
export async function requestApproval(event: TaskEvent, deps: HandlerDeps): Promise<IncomingEnvelope> {
  const { node, envelope, taskToken } = event;
  const mark = envelope.approval;
  if (taskToken === undefined || mark === undefined) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `node ${node.id}: an approval needs a task token and a held tool call`,
      { nodeId: node.id },
    );
  }
  const store = requireStore(deps);
  const { thread } = await deps.threads.getThread(envelope.threadId);
  if ((thread.step ?? 0) !== envelope.step || isTerminalStatus(thread.status)) {
    throw new StepthreadError(
      'STEP_MISMATCH',
      `thread ${thread.id} is at step ${thread.step ?? 0} (${thread.status}); node ${node.id} cannot ask at step ${envelope.step}`,
      { nodeId: node.id },
    );
  }
  const held = await store.getHeldTurn(thread.id, node.id);
  if (held === undefined || held.step !== envelope.step || held.ask !== mark.ask) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `node ${node.id}: no tool call of step ${envelope.step} waits for approval ${mark.ask}`,
      { nodeId: node.id },
    );
  }
  const requestedAt = deps.env.now();
  const deadline = new Date(Date.parse(requestedAt) + APPROVAL_TIMEOUT_SECONDS * 1000).toISOString();
  const interaction: Interaction = {
    interactionId: interactionIdOf(thread.id, node.id),
    executionId: envelope.executionId,
    workflowId: envelope.workflowId,
    rootThreadId: envelope.rootThreadId,
    threadId: thread.id,
    nodeId: node.id,
    authorNodeId: (node as TaskNode & { authorId?: string }).authorId ?? node.id,
    step: envelope.step,
    ask: held.ask,
    interactionType: 'ask_for_approval',
    message: approvalQuestion(held.call),
    toolCall: held.call,
    requestedAt,
    deadline,
    taskToken,
    status: 'PENDING',
  };
  const stored = await store.recordPending(interaction, {
    expiresAt: epochSeconds(deadline) + RESOLVED_RETENTION_SECONDS,
  });
  if (stored.status === 'PENDING') {
    const requested = createEvent('USER_INTERACTION_REQUESTED', {
      threadId: thread.id,
      workflowId: thread.workflowId,
      at: stored.requestedAt,
      nodeId: node.id,
      interactionType: 'ask_for_approval',
    });
    await publishCommitted(deps.events, [requested], { executionId: envelope.executionId });
  }
  return envelope;
}
