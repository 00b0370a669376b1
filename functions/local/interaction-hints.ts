/** How a local run names a question that waits for an answer, and an `--answers` value for it. */
import type { Interaction } from '../stores/interaction-store.ts';

/** `node <id> (<type>) "<question>" needs an answer`. */
export function waitingMessage(interaction: Interaction): string {
  const asked = interaction.message ? ` "${interaction.message}"` : '';
  return `node ${interaction.nodeId} (${interaction.interactionType})${asked} needs an answer`;
}

type Question = Pick<Interaction, 'authorNodeId' | 'interactionType'>;

const EXAMPLE_ANSWER: Record<Interaction['interactionType'], unknown> = {
  ask_for_approval: true,
  ask_for_input: 'your answer',
  ask_for_selection: 0,
  show_message: null,
};

/** An `--answers` object answering `interaction`, with a value of the kind it takes. */
export function exampleAnswers(interaction: Question): string {
  return JSON.stringify(exampleAnswersOf([interaction]));
}

function exampleAnswersOf(questions: readonly Question[]): Record<string, unknown> {
  const answers: Record<string, unknown> = {};
  for (const question of questions) {
    // defineProperty: a node id such as `__proto__` stays a key of its own.
    Object.defineProperty(answers, question.authorNodeId, {
      value: EXAMPLE_ANSWER[question.interactionType],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return answers;
}

/**
 * The command that resumes an interrupted local run, answering the questions it stopped at: a bare
 * `resume` with no terminal to ask in stops at them again. `dataDirArgument` is ` --data-dir <dir>`
 * when the command that prints this was given one, else ''.
 */
export function resumeCommand(
  executionId: string,
  waiting: readonly Question[],
  dataDirArgument: string,
): string {
  const answers =
    waiting.length === 0 ? '' : ` --answers ${shellQuoted(JSON.stringify(exampleAnswersOf(waiting)))}`;
  return `stepthread resume ${executionId}${answers}${dataDirArgument}`;
}

/** `'text'` for a POSIX shell, a `'` in it closed, escaped and reopened. */
function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
