/**
 * Where a local run's USER_INTERACTION answers come from: an `--answers` file (keyed by node id; a
 * list answers successive visits of a node), else the terminal when stdin is a TTY, else nobody —
 * and the run stops with USER_INPUT_REQUIRED.
 */

import { nodesAskingApproval } from '../engine/asl/compile.ts';
import { declarationsOf } from '../engine/asl/node-description.ts';
import { type CodedError, StepthreadError } from '../engine/errors.ts';
import { buildGraph } from '../engine/graph/build.ts';
import {
  type AnswerVariable,
  answerVariableOf,
  answerVariableProblem,
  selectionProblem,
} from '../engine/model/interaction-reply.ts';
import { inexactNumberIn, MAX_VALUE_DEPTH, valueDepth } from '../engine/model/json-values.ts';
import type { Workflow } from '../engine/model/schema.ts';
import { toolCallLines } from '../functions/local/interaction-hints.ts';
import { AnsweredElsewhere } from '../functions/local/offered-replies.ts';
import { type InteractionReply, replyFromValue } from '../functions/nodes/interaction-reply.ts';
import type { Interaction } from '../functions/stores/interaction-store.ts';

export type AnswerSource = (
  interaction: Interaction,
  options: { signal?: AbortSignal },
) => Promise<InteractionReply | undefined>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Answers from a parsed `--answers` file: `{ "<nodeId>": answer | [answer, ...] }`. An array is one
 * answer per visit, in order; to give an array as a single answer, wrap it: `[[1, 2]]`.
 */
export function fileAnswers(data: unknown): AnswerSource {
  if (!isRecord(data)) {
    throw new StepthreadError(
      'INVALID_INTERACTION_ANSWER',
      'the answers file must be a JSON object keyed by node id',
    );
  }
  const used = new Map<string, number>();
  return async (interaction) => {
    const key = [interaction.nodeId, interaction.authorNodeId].find((id) => Object.hasOwn(data, id));
    if (key === undefined) return undefined;
    const entry = data[key];
    let value = entry;
    if (Array.isArray(entry)) {
      const visit = used.get(key) ?? 0;
      used.set(key, visit + 1);
      if (visit >= entry.length) return undefined;
      value = entry[visit];
    }
    return replyFromValue(interaction.interactionType, value);
  };
}

/**
 * Checks `--answers` against the workflow before anything runs: every key names a USER_INTERACTION
 * node (its id, or its id inside a subgraph), and every answer has the shape its question takes
 * (a selection within the options, an input of the type its outputVariable is declared). Otherwise
 * the run would fail only on reaching the node, after the LLM calls before it.
 */
export function checkAnswers(data: unknown, workflow: Workflow): CodedError[] {
  if (!isRecord(data)) return [];
  const questions = new Map<
    string,
    { type: string; options?: readonly string[]; answerVariable?: AnswerVariable }
  >();
  const graph = buildGraph(workflow);
  const asking = new Set(nodesAskingApproval(graph));
  const approvals = asking.size > 0;
  for (const node of graph.nodes.values()) {
    if (asking.has(node)) {
      // An LLM node whose tool calls may wait for approval: answered as an ask_for_approval.
      questions.set(node.id, { type: 'ask_for_approval' });
      if (!questions.has(node.authorId)) questions.set(node.authorId, { type: 'ask_for_approval' });
      continue;
    }
    if (node.type !== 'USER_INTERACTION') continue;
    const config = node.config as {
      userInteractionType: string;
      options?: string[];
      outputVariable?: string;
    };
    const written = config.outputVariable === undefined ? [] : [config.outputVariable];
    const answerVariable = answerVariableOf(
      config.outputVariable,
      declarationsOf(graph, node, written).variables,
    );
    const question = {
      type: config.userInteractionType,
      ...(config.options ? { options: config.options } : {}),
      ...(answerVariable ? { answerVariable } : {}),
    };
    questions.set(node.id, question);
    if (!questions.has(node.authorId)) questions.set(node.authorId, question);
  }
  const errors: CodedError[] = [];
  for (const [key, entry] of Object.entries(data)) {
    const question = questions.get(key);
    if (question === undefined) {
      const known = [...questions.keys()];
      errors.push({
        code: 'INVALID_INTERACTION_ANSWER',
        message: `--answers names "${key}", which is no USER_INTERACTION node${approvals ? ' (nor LLM node with a tool that requires approval)' : ''} of ${workflow.id}${known.length > 0 ? ` (they are: ${known.join(', ')})` : ' (it has none)'}`,
        nodeId: key,
      });
      continue;
    }
    for (const value of Array.isArray(entry) ? entry : [entry]) {
      // The answer is stored with the thread, which refuses deeper values: say so before running.
      if (valueDepth(value) > MAX_VALUE_DEPTH) {
        errors.push({
          code: 'VALUE_TOO_DEEP',
          message: `--answers "${key}" nests arrays and objects more than ${MAX_VALUE_DEPTH} levels deep`,
          nodeId: key,
        });
        continue;
      }
      try {
        const reply = replyFromValue(question.type as Interaction['interactionType'], value);
        const unfit =
          reply.kind === 'input' ? answerVariableProblem(question.answerVariable, reply.value) : undefined;
        if (unfit !== undefined) throw new StepthreadError('INVALID_INTERACTION_ANSWER', unfit);
        // As answerFor checks it when the run reaches the question.
        const unknown =
          reply.kind === 'select' && question.options
            ? selectionProblem(question.options, reply.choice)
            : undefined;
        if (unknown !== undefined) throw new StepthreadError('INVALID_INTERACTION_ANSWER', unknown);
      } catch (error) {
        if (!(error instanceof StepthreadError)) throw error;
        errors.push({
          code: 'INVALID_INTERACTION_ANSWER',
          message: `--answers "${key}": ${error.message}`,
          nodeId: key,
        });
      }
    }
  }
  return errors;
}

/** The first source that has an answer. */
export function firstAnswer(...sources: (AnswerSource | undefined)[]): AnswerSource {
  return async (interaction, options) => {
    for (const source of sources) {
      const reply = await source?.(interaction, options);
      if (reply !== undefined) return reply;
    }
    return undefined;
  };
}

function parseTerminalReply(interaction: Interaction, line: string): InteractionReply | string {
  const text = line.trim();
  switch (interaction.interactionType) {
    case 'ask_for_approval': {
      const [word = '', ...rest] = text.split(/\s*:\s*|\s+/);
      const reason = rest.join(' ').trim();
      const withReason = reason === '' ? {} : { reason };
      if (/^(y|yes|approve)$/i.test(word)) return { kind: 'approve', ...withReason };
      if (/^(n|no|reject)$/i.test(word)) return { kind: 'reject', ...withReason };
      return 'answer y or n (optionally followed by a reason)';
    }
    case 'ask_for_selection': {
      const options = interaction.options ?? [];
      // An option as written first (validate refuses options that differ only in surrounding
      // whitespace, so a trimmed match is one), then digits as its index: as --answers reads a choice,
      // so an option that is itself digits ("2024") is chosen by typing it.
      const byText = options.findIndex((option) => option.trim() === text);
      const index = byText >= 0 || !/^\d+$/.test(text) ? byText : Number(text);
      if (index < 0 || index >= options.length) return `choose 0-${options.length - 1}`;
      return { kind: 'select', choice: index };
    }
    default: {
      const reply = inputFromText(line, interaction.answerVariable);
      if (typeof reply === 'string' || reply.kind !== 'input') return reply;
      return answerVariableProblem(interaction.answerVariable, reply.value) ?? reply;
    }
  }
}

/**
 * An ask_for_input answer typed as text, at the terminal's prompt or as `respond --input`: JSON
 * when it parses (`42`, `true`, `{"a": 1}`, `"quoted"`), else the text itself as a string, so that
 * `hello` answers "hello" in both. Into a variable declared `string`, the text itself (`42` answers
 * "42"), a quoted JSON string its content. A number JSON would round or lose (inexactNumberIn) is
 * refused (a string that says why), as `run --input` refuses it: it would not be the answer typed.
 * Whether the answer fits its variable is the caller's check (answerFor, answerVariableProblem).
 */
export function inputFromText(text: string, variable?: AnswerVariable): InteractionReply | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'input', value: text };
  }
  if (variable?.type === 'string') return { kind: 'input', value: typeof value === 'string' ? value : text };
  const inexact = inexactNumberIn(text);
  if (inexact !== undefined) {
    return `${inexact} is a number JSON cannot hold exactly (beyond 2^53 or a double's range): quote it, "${inexact}", to answer it as text`;
  }
  return { kind: 'input', value };
}

/** Asks on the terminal, one question at a time however many branches wait at once. */
export function terminalAnswers(
  prompt: (question: string, signal?: AbortSignal) => Promise<string>,
  write: (text: string) => void,
): AnswerSource {
  let queue: Promise<unknown> = Promise.resolve();
  return (interaction, { signal }) => {
    const ask = async (): Promise<InteractionReply> => {
      // Answered elsewhere while an earlier question held the terminal: not asked at all.
      if (signal?.aborted) throw signal.reason;
      write(
        `\n? ${interaction.message ?? `node ${interaction.nodeId}`}  [${interaction.nodeId}, ${interaction.interactionType}]\n`,
      );
      for (const line of toolCallLines(interaction)) write(`  ${line}\n`);
      if (interaction.interactionType === 'ask_for_selection') {
        (interaction.options ?? []).forEach((option, i) => {
          write(`  ${i}) ${option}\n`);
        });
      }
      const hint =
        interaction.interactionType === 'ask_for_approval'
          ? 'y/n [reason]: '
          : interaction.interactionType === 'ask_for_selection'
            ? 'choice: '
            : 'answer (JSON or text): ';
      for (;;) {
        const line = await prompt(hint, signal).catch((error: unknown) => {
          if (signal?.reason instanceof AnsweredElsewhere) write('\n  answered by stepthread respond\n');
          throw error;
        });
        const reply = parseTerminalReply(interaction, line);
        if (typeof reply !== 'string') return reply;
        write(`  ${reply}\n`);
      }
    };
    const turn = queue.then(ask, ask);
    queue = turn.catch(() => {});
    return turn;
  };
}
