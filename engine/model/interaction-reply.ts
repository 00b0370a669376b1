/**
 * Replies to a USER_INTERACTION, as a person, an answers file or a config gives them. Pure, so that
 * reading answers (the CLI, before a run) loads no node or store code, and validate can check a
 * config `userInput`.
 */
import { StepthreadError } from '../errors.ts';
import { describeType, findDeclaration, matchesType } from '../thread/variables.ts';
import type { UserInteractionType, VariableDeclaration, VariableType } from './schema.ts';
import { closestKey } from './unknown-keys.ts';

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

const APPROVE_WORDS = new Set<unknown>(['approve', 'approved', 'yes', 'y', 'true']);
const REJECT_WORDS = new Set<unknown>(['reject', 'rejected', 'no', 'n', 'false']);

/**
 * A reply from a plain JSON value (an `--answers` file entry, a config `userInput`): approval takes
 * true/false, "approve"/"reject" (or "approved", "yes", "y", "true" / "rejected", "no", "n", "false", in any case), {approved, reason} or {reject: true, reason}; input takes any value; selection an index or
 * an option. `{ "fail": "reason" }` fails the run at an approval or a selection, whose answers are
 * never such an object; an input's answer may be any JSON, that object included, so there it is the
 * answer (an input question is failed by `respond --fail`).
 */
export function replyFromValue(interactionType: UserInteractionType, value: unknown): InteractionReply {
  if (interactionType !== 'ask_for_input' && interactionType !== 'show_message' && isFailing(value)) {
    const reason = value.fail;
    return { kind: 'fail', ...(typeof reason === 'string' ? { reason } : {}) };
  }
  switch (interactionType) {
    case 'ask_for_approval': {
      // Words a person or a file may use for yes and no, in any case.
      const word = typeof value === 'string' ? value.trim().toLowerCase() : value;
      if (value === true || APPROVE_WORDS.has(word)) return { kind: 'approve' };
      if (value === false || REJECT_WORDS.has(word)) return { kind: 'reject' };
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
      // `{"reject": true, "reason": "…"}` (or `{"approve": true}`): the form the console sends.
      const marked = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
      if ((marked.reject === true) !== (marked.approve === true) && !('approved' in marked)) {
        const { reason } = marked;
        return {
          kind: marked.reject === true ? 'reject' : 'approve',
          ...(typeof reason === 'string' ? { reason } : {}),
        };
      }
      throw new StepthreadError(
        'INVALID_INTERACTION_ANSWER',
        `an approval answer must be true, false, "approve", "reject" (or yes/no, y/n, approved/rejected) {"approved": boolean, "reason"?: string} or {"reject": true, "reason"?: string}; got ${JSON.stringify(value)}`,
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

/** The failing form, `{"fail": …}`: an object with a `fail` key. */
function isFailing(value: unknown): value is { fail: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'fail' in value;
}

/**
 * The option index a choice names: an index, an option, or an index written as digits ("1") when no
 * option reads that way; -1 when it names none. The caller checks it is in range.
 */
export function selectionIndex(options: readonly string[], choice: number | string): number {
  if (typeof choice === 'number') return choice;
  const byOption = options.indexOf(choice);
  if (byOption >= 0 || !/^\d+$/.test(choice)) return byOption;
  return Number(choice);
}

/**
 * Why `choice` names none of `options`, listing them with their indexes and, for an option written
 * in another case or with a close typo ("Red" for "red"), the one it likely meant; undefined when it
 * names one. Every way to answer a selection (respond, --answers, the console, a config
 * `userInput`) checks it here, so they refuse alike.
 */
export function selectionProblem(options: readonly string[], choice: number | string): string | undefined {
  const index = selectionIndex(options, choice);
  if (Number.isInteger(index) && index >= 0 && index < options.length) return undefined;
  const listed = options.map((option, i) => `${i}: ${option}`).join(', ');
  const meant = typeof choice === 'string' ? closestKey(choice.trim(), options) : undefined;
  return `${JSON.stringify(choice)} is not one of the ${options.length} options (${listed}) nor an index of one${meant === undefined ? '' : `; did you mean ${JSON.stringify(meant)}?`}`;
}

/**
 * The variable an interaction's answer is stored in (its `outputVariable`) with the type declared for
 * it: what every answer must fit. Kept with the question when it is asked, so whoever checks an
 * answer (respond, the console, the run's own prompt) needs no workflow at hand.
 */
export interface AnswerVariable {
  readonly name: string;
  readonly type: VariableType;
}

/**
 * What bounds the answer of a node storing it in `outputVariable`, as `declarations` (the ones the
 * node sees, innermost first) declare it; undefined when any value fits (no outputVariable, no
 * declaration, no type, or `any`). The same lookup the write itself makes (setVariable).
 */
export function answerVariableOf(
  outputVariable: string | undefined,
  declarations: readonly VariableDeclaration[] | undefined,
): AnswerVariable | undefined {
  if (outputVariable === undefined) return undefined;
  const type = findDeclaration(declarations ?? [], outputVariable, undefined)?.type;
  return type === undefined || type === 'any' ? undefined : { name: outputVariable, type };
}

/** Why `value` cannot be stored in the answer's variable; undefined when it fits. */
export function answerVariableProblem(
  variable: AnswerVariable | undefined,
  value: unknown,
): string | undefined {
  if (variable === undefined || matchesType(value, variable.type)) return undefined;
  const { name, type } = variable;
  return `the answer is stored in variable "${name}", declared ${type}, so it must be ${ARTICLE[type]} ${type}; got ${shortJson(value)} (${describeType(value)})`;
}

const ARTICLE: Readonly<Record<VariableType, string>> = {
  string: 'a',
  number: 'a',
  boolean: 'a',
  array: 'an',
  object: 'an',
  any: 'any',
};

/** A value as JSON, cut short: an error message quotes it, however large the answer. */
function shortJson(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length <= 80 ? json : `${json.slice(0, 77)}...`;
}

/**
 * Why a config `userInput` cannot answer its interaction, or undefined when it can (or when it is a
 * template, known only at run time). `{"fail": …}` fits: it fails an approval or a selection on
 * purpose, and answers an input.
 */
export function userInputProblem(
  interactionType: UserInteractionType,
  options: readonly string[] | undefined,
  value: unknown,
  variable?: AnswerVariable,
): string | undefined {
  if (typeof value === 'string' && value.includes('{{')) return undefined;
  let reply: InteractionReply;
  try {
    reply = replyFromValue(interactionType, value);
  } catch (error) {
    if (error instanceof StepthreadError) return error.message;
    throw error;
  }
  if (reply.kind === 'input') return answerVariableProblem(variable, reply.value);
  if (reply.kind !== 'select' || options === undefined) return undefined;
  return selectionProblem(options, reply.choice);
}
