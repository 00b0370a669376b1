/**
 * USER_INTERACTION: ask_for_approval / ask_for_input / ask_for_selection wait for a person;
 * show_message and a config `userInput` complete at once.
 *
 * Design (the simplest correct one we found): the node's step — answer as a user message, answer
 * in `outputVariable`, the node result — is committed when the ANSWER arrives, not when the
 * question is asked.
 *
 * 1. The Task is `lambda:invoke.waitForTaskToken`. The handler (`requestInteraction`) writes one
 *    item, PENDING, with the token, the question and what resuming needs (envelope, node
 *    description); the thread is not touched, so the request costs one GetItem and one PutItem.
 * 2. `respondToInteraction` (the `stepthread respond` CLI on AWS, the embedded runner locally)
 *    moves the item PENDING → ANSWERED | FAILED with one conditional update (two answers cannot
 *    both win), then runs the node step through the ordinary pipeline with that answer — so it is
 *    idempotent by step like every other node — and finally sends SendTaskSuccess with the next
 *    envelope, or SendTaskFailure (a `--fail`, or no answer available locally) which takes the
 *    Task's Catch and fails the thread with the coded reason.
 * 3. Re-running respond after a crash finishes delivering the stored answer; a retried request
 *    handler that finds its step already answered delivers it with its own (new) token.
 *
 * Rejection is an answer, not a failure: ask_for_approval with `--reject` stores `false` in the
 * output variable and the run continues, so a ROUTE decides what a rejection means.
 */

import { DEFAULT_INTERACTION_TIMEOUT_SECONDS } from '../../engine/asl/compile.ts';
import type { IncomingEnvelope } from '../../engine/asl/task-input.ts';
import type { Message } from '../../engine/conversation/types.ts';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';
import { createEvent, type StepthreadEvent } from '../../engine/events.ts';
import { renderString } from '../../engine/expression/index.ts';
import {
  type UserInteractionConfig,
  type UserInteractionType,
  userInteractionConfigSchema,
} from '../../engine/model/schema.ts';
import type { ExpressionScope } from '../../engine/scope.ts';
import { buildExpressionScope } from '../../engine/scope.ts';
import { isTerminalStatus, setVariable } from '../../engine/thread/index.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import type { HandlerDeps, TaskTokenSender } from '../handlers/deps.ts';
import { type NodeBehaviour, runNodeStep, type StepContext } from '../handlers/pipeline.ts';
import { TASK_ERROR_NAMES, type TaskEvent, type TaskNode } from '../handlers/task.ts';
import {
  type Interaction,
  type InteractionAnswer,
  InteractionConflict,
  type InteractionResolution,
  type InteractionStore,
  interactionIdOf,
} from '../stores/interaction-store.ts';
import { parseConfig } from './config.ts';

/** What a person (or an answers file) replies; checked against the interaction by `answerFor`. */
export type InteractionReply =
  | { readonly kind: 'approve'; readonly reason?: string }
  | { readonly kind: 'reject'; readonly reason?: string }
  | { readonly kind: 'input'; readonly value: unknown }
  /** An index into `options` (0-based) or the option itself. */
  | { readonly kind: 'select'; readonly choice: number | string }
  /** Fails the run (SendTaskFailure). */
  | {
      readonly kind: 'fail';
      readonly reason?: string;
      readonly code?: 'USER_INTERACTION_FAILED' | 'USER_INPUT_REQUIRED';
    };

/** A USER_INTERACTION Task event as the waitForTaskToken Payload delivers it. */
export type InteractionTaskEvent = TaskEvent & { taskToken: string };

/** Kept after the answer for a week, so `pending`/inspect can still show what happened. */
const RESOLVED_RETENTION_SECONDS = 7 * 86_400;

function invalidAnswer(
  interaction: Pick<Interaction, 'nodeId' | 'interactionType'>,
  why: string,
): StepthreadError {
  return new StepthreadError(
    'INVALID_INTERACTION_ANSWER',
    `node ${interaction.nodeId} (${interaction.interactionType}): ${why}`,
    { nodeId: interaction.nodeId },
  );
}

/** The checked answer a reply gives for an interaction; INVALID_INTERACTION_ANSWER otherwise. */
export function answerFor(
  interaction: Pick<Interaction, 'nodeId' | 'interactionType' | 'options'>,
  reply: Exclude<InteractionReply, { kind: 'fail' }>,
): InteractionAnswer {
  const type = interaction.interactionType;
  const expected: Record<UserInteractionType, string> = {
    ask_for_approval: 'expects --approve or --reject',
    ask_for_input: 'expects --input <json>',
    ask_for_selection: 'expects --select <n>',
    show_message: 'needs no answer',
  };
  switch (reply.kind) {
    case 'approve':
    case 'reject':
      if (type !== 'ask_for_approval') throw invalidAnswer(interaction, expected[type]);
      return {
        kind: 'approval',
        approved: reply.kind === 'approve',
        ...(reply.reason === undefined ? {} : { reason: reply.reason }),
      };
    case 'input':
      if (type !== 'ask_for_input') throw invalidAnswer(interaction, expected[type]);
      return { kind: 'input', value: reply.value };
    case 'select': {
      if (type !== 'ask_for_selection') throw invalidAnswer(interaction, expected[type]);
      const options = interaction.options ?? [];
      const index = typeof reply.choice === 'number' ? reply.choice : options.indexOf(reply.choice);
      const option = Number.isInteger(index) ? options[index] : undefined;
      if (option === undefined) {
        const listed = options.map((o, i) => `${i}: ${o}`).join(', ');
        throw invalidAnswer(
          interaction,
          `${JSON.stringify(reply.choice)} is not one of the options (${listed})`,
        );
      }
      return { kind: 'selection', index, option };
    }
  }
}

/**
 * A reply from a plain JSON value (an `--answers` file entry, a config `userInput`): approval takes
 * true/false, "approve"/"reject" or {approved, reason}; input takes any value; selection an index or
 * an option; `{ "fail": "reason" }` fails the run.
 */
export function replyFromValue(interactionType: UserInteractionType, value: unknown): InteractionReply {
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'fail' in value) {
    const reason = (value as { fail: unknown }).fail;
    return { kind: 'fail', ...(typeof reason === 'string' ? { reason } : {}) };
  }
  switch (interactionType) {
    case 'ask_for_approval': {
      if (value === true || value === 'approve' || value === 'yes') return { kind: 'approve' };
      if (value === false || value === 'reject' || value === 'no') return { kind: 'reject' };
      if (
        typeof value === 'object' &&
        value !== null &&
        typeof (value as { approved?: unknown }).approved === 'boolean'
      ) {
        const { approved, reason } = value as { approved: boolean; reason?: unknown };
        return {
          kind: approved ? 'approve' : 'reject',
          ...(typeof reason === 'string' ? { reason } : {}),
        };
      }
      throw new StepthreadError(
        'INVALID_INTERACTION_ANSWER',
        `an approval answer must be true, false, "approve", "reject" or {"approved": boolean, "reason"?: string}; got ${JSON.stringify(value)}`,
      );
    }
    case 'ask_for_selection':
      if (typeof value === 'number' || typeof value === 'string') return { kind: 'select', choice: value };
      throw new StepthreadError(
        'INVALID_INTERACTION_ANSWER',
        `a selection answer must be an option index or the option itself; got ${JSON.stringify(value)}`,
      );
    case 'ask_for_input':
    case 'show_message':
      return { kind: 'input', value };
  }
}

function contentOf(answer: InteractionAnswer): string {
  switch (answer.kind) {
    case 'approval':
      return `${answer.approved ? 'Approved.' : 'Rejected.'}${answer.reason ? ` ${answer.reason}` : ''}`;
    case 'input':
      return typeof answer.value === 'string' ? answer.value : JSON.stringify(answer.value);
    case 'selection':
      return answer.option;
    case 'acknowledged':
      return '';
  }
}

/** The value stored in outputVariable: approval → boolean, input → the value, selection → the option. */
export function variableValueOf(answer: InteractionAnswer): unknown {
  switch (answer.kind) {
    case 'approval':
      return answer.approved;
    case 'input':
      return answer.value;
    case 'selection':
      return answer.option;
    case 'acknowledged':
      return undefined;
  }
}

function outputOf(answer: InteractionAnswer): unknown {
  switch (answer.kind) {
    case 'approval':
      return { approved: answer.approved, ...(answer.reason ? { reason: answer.reason } : {}) };
    case 'selection':
      return { index: answer.index, option: answer.option };
    default:
      return variableValueOf(answer);
  }
}

function renderedMessage(config: UserInteractionConfig, scope: ExpressionScope): string | undefined {
  return config.showMessage === undefined ? undefined : renderString(config.showMessage, scope);
}

/** The answer a config `userInput` (or show_message) gives at once; undefined when a person must answer. */
function immediateAnswer(
  config: UserInteractionConfig,
  node: TaskNode,
  scope: ExpressionScope,
): InteractionAnswer | undefined {
  if (config.userInteractionType === 'show_message') return { kind: 'acknowledged' };
  if (config.userInput === undefined) return undefined;
  const value =
    typeof config.userInput === 'string' ? renderString(config.userInput, scope) : config.userInput;
  const reply = replyFromValue(config.userInteractionType, value);
  if (reply.kind === 'fail') {
    throw new StepthreadError(
      'USER_INTERACTION_FAILED',
      reply.reason ?? `node ${node.id}: userInput fails the run`,
      {
        nodeId: node.id,
      },
    );
  }
  return answerFor(
    {
      nodeId: node.id,
      interactionType: config.userInteractionType,
      ...(config.options ? { options: config.options } : {}),
    },
    reply,
  );
}

/**
 * The node step with an answer: the answer joins the conversation (a user message; show_message's
 * text as an assistant message) and outputVariable. `requested` is the request event kept with the
 * pending item, recorded with the thread now that the step commits.
 */
function answeringNode(
  answerOf: (ctx: StepContext, config: UserInteractionConfig) => InteractionAnswer,
  requested?: StepthreadEvent,
): NodeBehaviour {
  return {
    readsConversation: true,
    logic(ctx) {
      const { node, thread, deps } = ctx;
      const config = parseConfig(userInteractionConfigSchema, node);
      const answer = answerOf(ctx, config);
      const view = ctx.conversation!;
      const at = deps.env.now();
      const base = { threadId: thread.id, workflowId: thread.workflowId, at, nodeId: node.id };
      const events: StepthreadEvent[] = requested ? [requested] : [];
      if (answer.kind === 'acknowledged') {
        const text = renderedMessage(config, ctx.scope()) ?? '';
        if (text !== '') view.append({ role: 'assistant', content: text } satisfies Message);
        return { output: text, events };
      }
      view.append({ role: 'user', content: contentOf(answer) });
      events.push(
        createEvent('USER_INTERACTION_RESPONDED', { ...base, interactionType: config.userInteractionType }),
      );
      if (config.outputVariable !== undefined) {
        const change = setVariable(
          thread.variables,
          config.outputVariable,
          variableValueOf(answer),
          undefined,
          node.variables,
          { nodeId: node.id },
        );
        events.push(createEvent('VARIABLE_CHANGED', { ...base, name: change.name, scope: change.scope }));
      }
      return { output: outputOf(answer), events };
    },
  };
}

/**
 * NODE_BEHAVIOURS entry: a USER_INTERACTION run as a plain Task (no token) completes only when it
 * needs nobody; otherwise it fails with USER_INPUT_REQUIRED.
 */
export const userInteractionNode: NodeBehaviour = answeringNode((ctx, config) => {
  const answer = immediateAnswer(config, ctx.node, ctx.scope());
  if (answer !== undefined) return answer;
  throw new StepthreadError(
    'USER_INPUT_REQUIRED',
    `node ${ctx.node.id} (${config.userInteractionType}) waits for an answer, but it ran without a task token`,
    { nodeId: ctx.node.id },
  );
});

function requireStore(deps: HandlerDeps): InteractionStore {
  if (deps.interactions === undefined)
    throw new StepthreadError('INVALID_TASK_INPUT', 'no interaction store configured');
  return deps.interactions;
}

function requireSender(deps: HandlerDeps): TaskTokenSender {
  if (deps.taskTokens === undefined) {
    throw new StepthreadError(
      'INTERACTION_NOT_DELIVERED',
      'nothing to send the task token to (no Step Functions client)',
    );
  }
  return deps.taskTokens;
}

function epochSeconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}

/** The coded error a failed interaction hands the Task's Catch (as the failure's cause). */
export function interactionFailure(
  interaction: Pick<Interaction, 'nodeId'>,
  resolution: Extract<InteractionResolution, { outcome: 'FAILED' }>,
): CodedError {
  return { code: resolution.code, message: resolution.reason, nodeId: interaction.nodeId };
}

/**
 * Completes the waiting Task of a resolved interaction: runs the answer's node step (a replay when
 * it already landed) and sends its envelope, or sends the failure. Returns the envelope sent.
 */
export async function deliverResolution(
  deps: HandlerDeps,
  interaction: Interaction,
): Promise<Envelope | undefined> {
  const sender = requireSender(deps);
  const resolution = interaction.resolution;
  if (resolution === undefined || interaction.status === 'PENDING') {
    throw new StepthreadError(
      'INTERACTION_NOT_DELIVERED',
      `interaction ${interaction.interactionId} has no answer yet`,
    );
  }
  if (resolution.outcome === 'FAILED') {
    const error = interactionFailure(interaction, resolution);
    await sender.fail(interaction.taskToken, TASK_ERROR_NAMES.nodeFailed, JSON.stringify(error));
    return undefined;
  }
  const requested = createEvent('USER_INTERACTION_REQUESTED', {
    threadId: interaction.threadId,
    workflowId: interaction.workflowId,
    at: interaction.requestedAt,
    nodeId: interaction.nodeId,
    interactionType: interaction.interactionType,
    ...(interaction.options ? { optionCount: interaction.options.length } : {}),
  });
  const event: TaskEvent = { action: 'execute', node: interaction.node, envelope: interaction.envelope };
  let next: Envelope;
  try {
    next = await runNodeStep(
      event,
      deps,
      answeringNode(() => resolution.answer, requested),
    );
  } catch (error) {
    // A node failure (committed on the thread) takes the Task's Catch like any failing node.
    if (error instanceof Error && error.name === TASK_ERROR_NAMES.nodeFailed) {
      await sender.fail(interaction.taskToken, error.name, error.message);
      return undefined;
    }
    throw error;
  }
  await sender.succeed(interaction.taskToken, next);
  return next;
}

export interface RespondResult {
  readonly interaction: Interaction;
  /** The envelope the run continues with (absent when the interaction failed the run). */
  readonly next?: Envelope;
  /** True when this call found the same answer already recorded and only finished delivering it. */
  readonly redelivered: boolean;
}

function sameResolution(a: InteractionResolution | undefined, b: InteractionResolution): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Answers (or fails) a pending interaction and resumes its run. Idempotent: the same answer again
 * finishes delivering it; a different one is INTERACTION_ALREADY_ANSWERED.
 */
export async function respondToInteraction(
  deps: HandlerDeps,
  target: { threadId: string; nodeId: string },
  reply: InteractionReply,
): Promise<RespondResult> {
  const store = requireStore(deps);
  let interaction = await store.getInteraction(target.threadId, target.nodeId);
  const resolution: InteractionResolution =
    reply.kind === 'fail'
      ? {
          outcome: 'FAILED',
          code: reply.code ?? 'USER_INTERACTION_FAILED',
          reason: reply.reason ?? `interaction at node ${interaction.nodeId} was failed by an operator`,
        }
      : { outcome: 'ANSWERED', answer: answerFor(interaction, reply) };
  let redelivered = false;
  for (let attempt = 0; ; attempt += 1) {
    if (interaction.status !== 'PENDING') {
      if (!sameResolution(interaction.resolution, resolution)) throw new InteractionConflict(interaction);
      redelivered = true;
      break;
    }
    try {
      interaction = await store.resolve(interaction, resolution, deps.env.now());
      break;
    } catch (error) {
      // A retried request refreshed the token in between: resolve the item as it is now.
      if (!(error instanceof InteractionConflict) || attempt >= 3) throw error;
      interaction = error.current;
    }
  }
  const next = await deliverResolution(deps, interaction);
  return { interaction, redelivered, ...(next ? { next } : {}) };
}

/**
 * The waitForTaskToken handler: answers at once when nobody is needed, else records the pending
 * interaction and returns (the Task waits for `respond`; what it returns is not the Task's output).
 */
export async function requestInteraction(
  event: InteractionTaskEvent,
  deps: HandlerDeps,
): Promise<Envelope | IncomingEnvelope> {
  const { node, envelope, taskToken } = event;
  const config = parseConfig(userInteractionConfigSchema, node);
  if (config.userInteractionType === 'show_message' || config.userInput !== undefined) {
    const next = await runNodeStep(event, deps, userInteractionNode);
    await requireSender(deps).succeed(taskToken, next);
    return next;
  }
  const store = requireStore(deps);
  const { thread } = await deps.threads.getThread(envelope.threadId);
  const step = thread.step ?? 0;
  if (step === envelope.step + 1 && thread.lastEnvelope?.last?.nodeId === node.id) {
    // The answer already landed and this is a retried Task: hand its result to this attempt.
    const stored = await store.getInteraction(thread.id, node.id);
    await deliverResolution(deps, { ...stored, taskToken });
    return thread.lastEnvelope;
  }
  if (step !== envelope.step) {
    throw new StepthreadError(
      'STEP_MISMATCH',
      `thread ${thread.id} is at step ${step}, the envelope at ${envelope.step}`,
      { nodeId: node.id },
    );
  }
  if (isTerminalStatus(thread.status)) {
    throw new StepthreadError(
      'INVALID_STATUS_TRANSITION',
      `thread ${thread.id} is ${thread.status}; node ${node.id} cannot ask`,
      {
        nodeId: node.id,
      },
    );
  }
  const requestedAt = deps.env.now();
  const timeoutSeconds = config.timeoutSeconds ?? DEFAULT_INTERACTION_TIMEOUT_SECONDS;
  const deadline = new Date(Date.parse(requestedAt) + timeoutSeconds * 1000).toISOString();
  const message = renderedMessage(config, buildExpressionScope(thread));
  const { error: _caught, joinEnd: _joinEnd, ...waitingEnvelope } = envelope;
  const interaction: Interaction = {
    interactionId: interactionIdOf(thread.id, node.id),
    executionId: envelope.executionId,
    workflowId: envelope.workflowId,
    rootThreadId: envelope.rootThreadId,
    threadId: thread.id,
    nodeId: node.id,
    authorNodeId: (node as TaskNode & { authorId?: string }).authorId ?? node.id,
    step,
    interactionType: config.userInteractionType,
    ...(message === undefined ? {} : { message }),
    ...(config.options ? { options: config.options } : {}),
    requestedAt,
    deadline,
    taskToken,
    status: 'PENDING',
    envelope: waitingEnvelope,
    node,
  };
  const stored = await store.recordPending(interaction, {
    expiresAt: epochSeconds(deadline) + RESOLVED_RETENTION_SECONDS,
  });
  if (stored.status !== 'PENDING' && stored.step === step) {
    // Answered between a failed attempt and this retry: deliver it with this attempt's token.
    await deliverResolution(deps, { ...stored, taskToken });
  }
  return envelope;
}
