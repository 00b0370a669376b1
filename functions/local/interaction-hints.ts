/** How a local run names a question that waits for an answer, and an `--answers` value for it. */
import type { Interaction } from '../stores/interaction-store.ts';

/**
 * How a command printed for the user to run begins and ends, so it runs as printed: the CLI as they
 * ran it, and the stores the printing command read.
 */
export interface CommandForm {
  /** `stepthread`, `npx stepthread` or `npm run stepthread --` (cli/invocation.ts). */
  readonly cli: string;
  /** ` --stack <name>` / ` --data-dir <dir>` as the printing command was given them, else ''. */
  readonly storeArguments: string;
}

/** The installed bin, reading the default stores. */
export const PLAIN_COMMAND_FORM: CommandForm = { cli: 'stepthread', storeArguments: '' };

/** `<cli> <words><store arguments>`: every command printed for the user to run is written by this. */
export function commandLine(form: CommandForm, words: string): string {
  return `${form.cli} ${words}${form.storeArguments}`;
}

/** `node <id> (<type>) "<question>" needs an answer`. */
export function waitingMessage(interaction: Interaction): string {
  const asked = interaction.message ? ` "${interaction.message}"` : '';
  return `node ${interaction.nodeId} (${interaction.interactionType})${asked} needs an answer`;
}

/**
 * How a tool call held for approval reads in the terminal (`pending`, the prompt of `run`): the
 * tool, its arguments, and what the model said when it asked for the call; none for other questions.
 */
export function toolCallLines(interaction: Pick<Interaction, 'toolCall'>): string[] {
  const call = interaction.toolCall;
  if (call === undefined) return [];
  const lines = [
    `tool ${call.name} (call ${call.id}), arguments: ${JSON.stringify(call.arguments) ?? 'null'}`,
  ];
  if (call.message.trim() !== '') lines.push(`the model said: ${JSON.stringify(call.message)}`);
  return lines;
}

type Question = Pick<Interaction, 'authorNodeId' | 'interactionType' | 'answerVariable'>;

const EXAMPLE_ANSWER: Record<Interaction['interactionType'], unknown> = {
  ask_for_approval: true,
  ask_for_input: 'your answer',
  ask_for_selection: 0,
  show_message: null,
};

/** An input of each type a variable may be declared, so an example answer is one its variable takes. */
const EXAMPLE_INPUT: Record<NonNullable<Interaction['answerVariable']>['type'], unknown> = {
  string: 'your answer',
  number: 0,
  boolean: true,
  array: [],
  object: {},
  any: 'your answer',
};

function exampleAnswer(question: Pick<Interaction, 'interactionType' | 'answerVariable'>): unknown {
  const type = question.answerVariable?.type;
  return question.interactionType === 'ask_for_input' && type !== undefined
    ? EXAMPLE_INPUT[type]
    : EXAMPLE_ANSWER[question.interactionType];
}

/** An `--answers` object answering `interaction`, with a value of the kind it takes. */
export function exampleAnswers(interaction: Question): string {
  return JSON.stringify(exampleAnswersOf([interaction]));
}

function exampleAnswersOf(questions: readonly Question[]): Record<string, unknown> {
  const answers: Record<string, unknown> = {};
  for (const question of questions) {
    // defineProperty: a node id such as `__proto__` stays a key of its own.
    Object.defineProperty(answers, question.authorNodeId, {
      value: exampleAnswer(question),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return answers;
}

/**
 * The command that resumes an interrupted local run, answering the questions it stopped at: a bare
 * `resume` with no terminal to ask in stops at them again. The form's store arguments are
 * ` --data-dir <dir>` when the command that prints this was given one, else ''.
 */
export function resumeCommand(executionId: string, waiting: readonly Question[], form: CommandForm): string {
  const answers =
    waiting.length === 0 ? '' : ` --answers ${shellWord(JSON.stringify(exampleAnswersOf(waiting)))}`;
  return commandLine(form, `resume ${executionId}${answers}`);
}

/**
 * `stepthread respond <id> <flags>` with an example answer, runnable as printed: `--approve`,
 * `--select 0`, `--input '"your answer"'` (JSON, which respond's --input reads first). The form's
 * store arguments are the ` --stack …` or ` --data-dir …` the printing command was given, so respond
 * reads the same stores.
 */
export function respondCommand(
  interaction: Pick<Interaction, 'interactionId' | 'interactionType' | 'answerVariable'>,
  form: CommandForm,
): string {
  const example = exampleAnswer(interaction);
  const flags: Record<Interaction['interactionType'], string> = {
    ask_for_approval: ' --approve',
    ask_for_input: ` --input ${shellWord(JSON.stringify(example))}`,
    ask_for_selection: ` --select ${String(example)}`,
    show_message: '',
  };
  return commandLine(form, `respond ${interaction.interactionId}${flags[interaction.interactionType]}`);
}

/** What else `respond` takes for this kind of question than the example answer its command gives. */
export function otherAnswers(
  type: Interaction['interactionType'],
  variable?: Interaction['answerVariable'],
): string | undefined {
  if (type === 'ask_for_approval') return "or --reject to reject; --reason '<text>' to say why";
  if (type === 'ask_for_input' && variable !== undefined) {
    return `--input takes ${/^[aeiou]/.test(variable.type) ? 'an' : 'a'} ${variable.type}, as variable ${variable.name} is declared`;
  }
  if (type === 'ask_for_input') return '--input takes any JSON value, or plain text as a string';
  if (type === 'ask_for_selection') return "--select takes an option's index, from 0";
  return undefined;
}

/** A word for a POSIX shell: as it is when it needs no quoting, else single-quoted (a `'` in it closed, escaped and reopened). */
export function shellWord(word: string): string {
  return /^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
