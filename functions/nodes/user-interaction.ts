/**
 * USER_INTERACTION: ask_for_approval / ask_for_input / ask_for_selection wait for a person;
 * show_message and a config `userInput` complete at once.
 *
 * Design — the person who answers needs only to hand over the answer; the workflow's own function
 * commits it (least privilege: an operator holds states:SendTaskSuccess/Failure and table reads,
 * no table writes, no S3):
 *
 * 1. show_message and a config `userInput` need nobody: the compiler makes them a plain Task
 *    (`userInteractionNode`), so no task token is issued and this function never calls Step Functions.
 * 2. Otherwise the node is two Tasks. `<id>` is `lambda:invoke.waitForTaskToken`: its handler
 *    (`requestInteraction`) renders the question and writes one PENDING item with the task token
 *    (one thread read, one PutItem; the thread is not touched). Its result path is `$.answer`, so
 *    whoever sends the token supplies an answer but never the envelope the run continues with.
 * 3. `respond` (or the embedded runner) reads the item and sends SendTaskSuccess with
 *    `{ reply, requestedAt }` (an `InteractionTaskResult`), or SendTaskFailure (`--fail`) with the
 *    coded reason. The token is single-use: of two racing answers Step Functions takes one and
 *    refuses the other (TaskTimedOut), which respond reports as already answered.
 * 4. `<id>:answer` (`runInteractionAnswer`) runs the node's step through the ordinary idempotent
 *    pipeline: the checked answer becomes a user message and `outputVariable`, with the
 *    REQUESTED/RESPONDED events. A failure, timeout or invalid answer — caught by the wait Task's
 *    Catch into `$.error`, or an unusable reply — is committed as the node's failure and takes the
 *    answer Task's Catch. After the commit (and again on a replayed retry) the item is closed
 *    PENDING → ANSWERED | FAILED with a conditional update on that visit's step, which drops it
 *    from the open-interactions index. The next envelope carries no answer.
 *
 * Rejection is an answer, not a failure: ask_for_approval with `--reject` stores `false` in the
 * output variable and the run continues, so a ROUTE decides what a rejection means.
 */

import { DEFAULT_INTERACTION_TIMEOUT_SECONDS, waitsForAnswer } from '../../engine/asl/compile.ts';
import type { IncomingEnvelope } from '../../engine/asl/task-input.ts';
import type { Message } from '../../engine/conversation/types.ts';
import { type CodedError, type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import { createEvent, type StepthreadEvent } from '../../engine/events.ts';
import { renderString } from '../../engine/expression/index.ts';
import { NodeLogicFailure } from '../../engine/lifecycle.ts';
import {
  type UserInteractionConfig,
  type UserInteractionType,
  userInteractionConfigSchema,
} from '../../engine/model/schema.ts';
import type { ExpressionScope } from '../../engine/scope.ts';
import { buildExpressionScope } from '../../engine/scope.ts';
import { isTerminalStatus, setVariable } from '../../engine/thread/index.ts';
import type { Envelope, NodeResult, Thread } from '../../engine/thread/types.ts';
import { publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps, TaskTokenSender } from '../handlers/deps.ts';
import {
  loadThread,
  type NodeBehaviour,
  neededNodeResults,
  overlaidNode,
  runNodeStep,
  type StepContext,
} from '../handlers/pipeline.ts';
import { codedErrorFromAsl, TASK_ERROR_NAMES, type TaskEvent, type TaskNode } from '../handlers/task.ts';
import {
  type Interaction,
  type InteractionAnswer,
  type InteractionResolution,
  type InteractionStore,
  interactionIdOf,
} from '../stores/interaction-store.ts';
import { parseConfig } from './config.ts';
import {
  type AnswerVariable,
  answerVariableOf,
  answerVariableProblem,
  type InteractionReply,
  replyFromValue,
  selectionIndex,
  selectionProblem,
} from './interaction-reply.ts';

// In their own module so the CLI can read answers without loading the node (and the stores).
export { type InteractionReply, replyFromValue } from './interaction-reply.ts';

/** What SendTaskSuccess carries for a waiting USER_INTERACTION; the compiled state puts it at `$.answer`. */
export interface InteractionTaskResult {
  readonly reply: Exclude<InteractionReply, { kind: 'fail' }>;
  /** When the question was asked (from the interaction item), for the REQUESTED event. */
  readonly requestedAt?: string;
}

/** A USER_INTERACTION Task event as the waitForTaskToken Payload delivers it. */
export type InteractionTaskEvent = TaskEvent & { taskToken: string };

/** Kept after the answer for a week, so `pending`/inspect can still show what happened. */
export const RESOLVED_RETENTION_SECONDS = 7 * 86_400;

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

/**
 * The checked answer a reply gives for an interaction: of its kind, among its options, and of the
 * type its variable is declared (answerVariable); INVALID_INTERACTION_ANSWER otherwise.
 */
export function answerFor(
  interaction: Pick<Interaction, 'nodeId' | 'interactionType' | 'options' | 'answerVariable'>,
  reply: Exclude<InteractionReply, { kind: 'fail' }>,
): InteractionAnswer {
  const answer = answerOfKind(interaction, reply);
  const problem = answerVariableProblem(interaction.answerVariable, variableValueOf(answer));
  if (problem !== undefined) throw invalidAnswer(interaction, problem);
  return answer;
}

function answerOfKind(
  interaction: Pick<Interaction, 'nodeId' | 'interactionType' | 'options'>,
  reply: Exclude<InteractionReply, { kind: 'fail' }>,
): InteractionAnswer {
  const type = interaction.interactionType;
  const expected: Record<UserInteractionType, string> = {
    // Said to the CLI, the console and the API alike: no one surface's flags.
    ask_for_approval: 'expects an approval or a rejection',
    ask_for_input: 'expects an input (any JSON value)',
    ask_for_selection: 'expects a selection (one of its options, or its index)',
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
      const problem = selectionProblem(options, reply.choice);
      if (problem !== undefined) throw invalidAnswer(interaction, problem);
      const index = selectionIndex(options, reply.choice);
      return { kind: 'selection', index, option: options[index]! };
    }
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

/** What a person is asked when the node has no showMessage: the seed's defaults (seed 003 §4.3). */
export const DEFAULT_QUESTIONS: Readonly<Record<Exclude<UserInteractionType, 'show_message'>, string>> = {
  ask_for_approval: 'Please approve this action',
  ask_for_input: 'Please provide input',
  ask_for_selection: 'Please make a selection',
};

/** The question a waiting interaction asks: its showMessage, else the seed's default for its type. */
function questionOf(config: UserInteractionConfig, scope: ExpressionScope): string | undefined {
  const type = config.userInteractionType;
  return renderedMessage(config, scope) ?? (type === 'show_message' ? undefined : DEFAULT_QUESTIONS[type]);
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
 * Applies an answer as the node's step: the answer joins the conversation (a user message;
 * show_message's text as an assistant message) and outputVariable. `requested` is the request's
 * event, recorded with the thread now that the step commits.
 */
function applyAnswer(
  ctx: StepContext,
  config: UserInteractionConfig,
  answer: InteractionAnswer,
  requested?: StepthreadEvent,
): { output: unknown; events: StepthreadEvent[] } {
  const { node, thread, deps } = ctx;
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
}

/**
 * The plain-Task form (no token): show_message and a config `userInput` complete at once; anything
 * else fails with USER_INPUT_REQUIRED, as nobody could answer it.
 */
export const userInteractionNode: NodeBehaviour = {
  readsConversation: true,
  logic(ctx) {
    const config = parseConfig(userInteractionConfigSchema, ctx.node);
    const answer = immediateAnswer(config, ctx.node, ctx.scope());
    if (answer === undefined) {
      throw new StepthreadError(
        'USER_INPUT_REQUIRED',
        `node ${ctx.node.id} (${config.userInteractionType}) waits for an answer, but it ran without a task token`,
        { nodeId: ctx.node.id },
      );
    }
    return applyAnswer(ctx, config, answer);
  },
};

function requireStore(deps: HandlerDeps): InteractionStore {
  if (deps.interactions === undefined)
    throw new StepthreadError('INVALID_TASK_INPUT', 'no interaction store configured');
  return deps.interactions;
}

function epochSeconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}

/**
 * The waitForTaskToken handler: records the PENDING interaction with this attempt's token and
 * returns (the Task then waits for SendTaskSuccess/Failure; what it returns is not the Task's output).
 * A retried request refreshes the token of its still-PENDING item.
 */
export async function requestInteraction(
  event: InteractionTaskEvent,
  deps: HandlerDeps,
): Promise<IncomingEnvelope> {
  const { envelope, taskToken } = event;
  const given = parseConfig(userInteractionConfigSchema, event.node);
  if (!waitsForAnswer(given)) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `node ${event.node.id} answers at once and runs as a plain Task; it has no task token to wait for`,
      { nodeId: event.node.id },
    );
  }
  const store = requireStore(deps);
  // The root's globals and the node outputs it reads too: the question may quote them.
  const loaded = await loadThread(deps, envelope, [], { nodes: neededNodeResults(event.node) });
  const { thread } = loaded;
  // The question as a copy's edits make it (its message, its options).
  const node = overlaidNode(event.node, loaded);
  const config = node === event.node ? given : parseConfig(userInteractionConfigSchema, node);
  const step = thread.step ?? 0;
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
      { nodeId: node.id },
    );
  }
  const requestedAt = deps.env.now();
  const timeoutSeconds = config.timeoutSeconds ?? DEFAULT_INTERACTION_TIMEOUT_SECONDS;
  const deadline = new Date(Date.parse(requestedAt) + timeoutSeconds * 1000).toISOString();
  const message = questionOf(config, buildExpressionScope(thread, node.nodeAliases));
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
    ...answerVariableField(config, node),
    requestedAt,
    deadline,
    taskToken,
    status: 'PENDING',
  };
  const stored = await store.recordPending(interaction, {
    expiresAt: epochSeconds(deadline) + RESOLVED_RETENTION_SECONDS,
  });
  // Published now, so a rule on the bus can tell whoever answers (nothing commits until the answer,
  // whose step records the same event, `at` included: consumers see it at least once, maybe twice).
  if (stored.status === 'PENDING') {
    const requested = requestedEvent(thread, node.id, config, stored.requestedAt);
    await publishCommitted(deps.events, [requested], { executionId: envelope.executionId });
  }
  return envelope;
}

/** The event of a question asked at `at`: published when asked, recorded with the step that resolves it. */
function requestedEvent(
  thread: Pick<Thread, 'id' | 'workflowId'>,
  nodeId: string,
  config: UserInteractionConfig,
  at: string,
): StepthreadEvent {
  return createEvent('USER_INTERACTION_REQUESTED', {
    threadId: thread.id,
    workflowId: thread.workflowId,
    at,
    nodeId,
    interactionType: config.userInteractionType,
    ...(config.options ? { optionCount: config.options.length } : {}),
  });
}

/** `{answerVariable}` when the node's outputVariable is declared of a type that bounds the answer. */
function answerVariableField(
  config: UserInteractionConfig,
  node: TaskNode,
): { answerVariable?: AnswerVariable } {
  const answerVariable = answerVariableOf(config.outputVariable, node.variables);
  return answerVariable === undefined ? {} : { answerVariable };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalReason(value: Record<string, unknown>): { reason?: string } | undefined {
  if (value.reason === undefined) return {};
  return typeof value.reason === 'string' ? { reason: value.reason } : undefined;
}

/** A reply as it arrives over the wire (a task result, an answers file); undefined when malformed. */
export function parseReply(value: unknown): InteractionReply | undefined {
  if (!isRecord(value)) return undefined;
  const reason = optionalReason(value);
  switch (value.kind) {
    case 'approve':
    case 'reject':
      return reason && { kind: value.kind, ...reason };
    case 'input':
      return 'value' in value ? { kind: 'input', value: value.value } : undefined;
    case 'select':
      return typeof value.choice === 'number' || typeof value.choice === 'string'
        ? { kind: 'select', choice: value.choice }
        : undefined;
    case 'fail':
      if (!reason) return undefined;
      if (
        value.code !== undefined &&
        value.code !== 'USER_INTERACTION_FAILED' &&
        value.code !== 'USER_INPUT_REQUIRED'
      )
        return undefined;
      return { kind: 'fail', ...reason, ...(value.code === undefined ? {} : { code: value.code }) };
    default:
      return undefined;
  }
}

/** What the task result or the caught error says about the interaction, as its resolution. */
export function resolutionOf(
  node: TaskNode,
  config: UserInteractionConfig,
  envelope: IncomingEnvelope & { answer?: unknown },
): InteractionResolution {
  const failed = (code: ErrorCode, reason: string): InteractionResolution => ({
    outcome: 'FAILED',
    code,
    reason,
  });
  if (envelope.answer === undefined) {
    if (envelope.error === undefined)
      return failed('INVALID_TASK_INPUT', `node ${node.id}: no answer arrived`);
    if (envelope.error.Error === 'States.Timeout') {
      const seconds = config.timeoutSeconds ?? DEFAULT_INTERACTION_TIMEOUT_SECONDS;
      return failed('INTERACTION_TIMED_OUT', `node ${node.id} was not answered within ${seconds} s`);
    }
    const error = codedErrorFromAsl(envelope.error, node.id);
    return failed(error.code, error.message);
  }
  const result = isRecord(envelope.answer) ? envelope.answer : {};
  const reply = parseReply(result.reply);
  if (reply === undefined) {
    return failed(
      'INVALID_INTERACTION_ANSWER',
      `node ${node.id}: the task result is not an interaction reply`,
    );
  }
  if (reply.kind === 'fail') {
    return failed(
      reply.code ?? 'USER_INTERACTION_FAILED',
      reply.reason ?? `interaction at node ${node.id} was failed by an operator`,
    );
  }
  try {
    const interaction = {
      nodeId: node.id,
      interactionType: config.userInteractionType,
      ...(config.options ? { options: config.options } : {}),
      ...answerVariableField(config, node),
    };
    return { outcome: 'ANSWERED', answer: answerFor(interaction, reply) };
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    return failed(error.code, error.message);
  }
}

/** The answer a committed step applied, read back from its node result (for a replayed retry). */
function answerFromOutput(type: UserInteractionType, output: unknown): InteractionAnswer {
  const value = isRecord(output) ? output : {};
  switch (type) {
    case 'ask_for_approval':
      return {
        kind: 'approval',
        approved: value.approved === true,
        ...(typeof value.reason === 'string' ? { reason: value.reason } : {}),
      };
    case 'ask_for_selection':
      return {
        kind: 'selection',
        index: typeof value.index === 'number' ? value.index : -1,
        option: typeof value.option === 'string' ? value.option : '',
      };
    case 'ask_for_input':
      return { kind: 'input', value: output };
    case 'show_message':
      return { kind: 'acknowledged' };
  }
}

/**
 * How the committed step resolved the interaction: what this invocation decided, or — on a replay,
 * where the logic did not run — what the stored node result says.
 */
function committedResolution(
  thread: Thread,
  stored: NodeResult | undefined,
  node: TaskNode,
  config: UserInteractionConfig,
  decided: InteractionResolution | undefined,
): InteractionResolution {
  const status = thread.lastEnvelope?.last?.status;
  if (decided !== undefined && (decided.outcome === 'ANSWERED') === (status === 'COMPLETED')) return decided;
  if (status === 'COMPLETED') {
    return { outcome: 'ANSWERED', answer: answerFromOutput(config.userInteractionType, stored?.output) };
  }
  const error = stored?.status === 'FAILED' ? stored.error : undefined;
  return {
    outcome: 'FAILED',
    code: error?.code ?? 'NODE_EXECUTION_FAILED',
    reason: error?.message ?? `node ${node.id} failed`,
  };
}

/**
 * When this visit's question was asked, for a failure that carries no task result (a timeout, a
 * SendTaskFailure caught into `$.error`): from the interaction's item, if it is this visit's.
 */
async function requestedAtOfVisit(ctx: StepContext): Promise<string | undefined> {
  try {
    const asked = await requireStore(ctx.deps).getInteraction(ctx.thread.id, ctx.node.id);
    return asked.step === ctx.envelope.step ? asked.requestedAt : undefined;
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'INTERACTION_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * The `answer` action: commits the answer in the task result (or the failure the wait Task's Catch
 * recorded) as the node's step, then closes the interaction. A retry replays the committed step and
 * closes it again, harmlessly; the envelope it returns carries no answer.
 */
export function runInteractionAnswer(event: TaskEvent, deps: HandlerDeps): Promise<Envelope> {
  let decided: InteractionResolution | undefined;
  let requestedAt: string | undefined;
  const behaviour: NodeBehaviour = {
    readsConversation: true,
    // The node started when its question was asked: the task result says when, else (a timeout, a
    // failure sent instead of an answer) the interaction's item.
    async startedAt(ctx) {
      const envelope = ctx.envelope as IncomingEnvelope & { answer?: unknown };
      try {
        decided = resolutionOf(ctx.node, parseConfig(userInteractionConfigSchema, ctx.node), envelope);
      } catch {
        // The logic meets the same error, where it is the node's failure.
        return undefined;
      }
      const answered = isRecord(envelope.answer) ? envelope.answer.requestedAt : undefined;
      requestedAt =
        typeof answered === 'string'
          ? answered
          : decided.outcome === 'FAILED'
            ? await requestedAtOfVisit(ctx)
            : undefined;
      return requestedAt;
    },
    async logic(ctx) {
      const config = parseConfig(userInteractionConfigSchema, ctx.node);
      decided ??= resolutionOf(ctx.node, config, ctx.envelope as IncomingEnvelope & { answer?: unknown });
      const requested =
        requestedAt === undefined ? undefined : requestedEvent(ctx.thread, ctx.node.id, config, requestedAt);
      if (decided.outcome === 'FAILED') {
        // A question that timed out or was failed was still asked: the record says so before NODE_FAILED.
        throw new NodeLogicFailure(
          new StepthreadError(decided.code, decided.reason, { nodeId: ctx.node.id }),
          requested ? [requested] : [],
        );
      }
      return applyAnswer(ctx, config, decided.answer, requested);
    },
    async afterCommit({ deps: committedDeps, node, thread, result, event: committedEvent }) {
      const config = parseConfig(userInteractionConfigSchema, node);
      const resolution = committedResolution(thread, result, node, config, decided);
      const visit = { threadId: thread.id, nodeId: node.id, step: committedEvent.envelope.step };
      await requireStore(committedDeps).close(visit, resolution, committedDeps.env.now());
    },
  };
  return runNodeStep(event, deps, behaviour);
}

/** The coded error a failed reply hands the wait Task's Catch (as the SendTaskFailure cause). */
export function interactionFailure(
  interaction: Pick<Interaction, 'nodeId'>,
  reply: Extract<InteractionReply, { kind: 'fail' }>,
): CodedError {
  return {
    code: reply.code ?? 'USER_INTERACTION_FAILED',
    message: reply.reason ?? `interaction at node ${interaction.nodeId} was failed by an operator`,
    nodeId: interaction.nodeId,
  };
}

/**
 * Hands a reply to the waiting Task: SendTaskSuccess with an `InteractionTaskResult`, or
 * SendTaskFailure with the coded reason. Nothing is written; the `answer` Task commits it.
 */
export async function sendReply(
  sender: TaskTokenSender,
  interaction: Pick<Interaction, 'nodeId' | 'taskToken' | 'requestedAt'>,
  reply: InteractionReply,
): Promise<void> {
  if (reply.kind === 'fail') {
    const error = interactionFailure(interaction, reply);
    await sender.fail(interaction.taskToken, TASK_ERROR_NAMES.nodeFailed, JSON.stringify(error));
    return;
  }
  const result: InteractionTaskResult = { reply, requestedAt: interaction.requestedAt };
  await sender.succeed(interaction.taskToken, result);
}
