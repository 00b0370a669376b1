/**
 * Where a local run's USER_INTERACTION answers come from: an `--answers` file (keyed by node id; a
 * list answers successive visits of a node), else the terminal when stdin is a TTY, else nobody —
 * and the run stops with USER_INPUT_REQUIRED.
 */
import { StepthreadError } from '../engine/errors.ts';
import { type InteractionReply, replyFromValue } from '../functions/nodes/user-interaction.ts';
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
      const index = /^\d+$/.test(text) ? Number(text) : options.indexOf(text);
      if (index < 0 || index >= options.length) return `choose 0-${options.length - 1}`;
      return { kind: 'select', choice: index };
    }
    default:
      try {
        return { kind: 'input', value: JSON.parse(text) as unknown };
      } catch {
        return { kind: 'input', value: line };
      }
  }
}

/** Asks on the terminal, one question at a time however many branches wait at once. */
export function terminalAnswers(
  prompt: (question: string, signal?: AbortSignal) => Promise<string>,
  write: (text: string) => void,
): AnswerSource {
  let queue: Promise<unknown> = Promise.resolve();
  return (interaction, { signal }) => {
    const ask = async (): Promise<InteractionReply> => {
      write(
        `\n? ${interaction.message ?? `node ${interaction.nodeId}`}  [${interaction.nodeId}, ${interaction.interactionType}]\n`,
      );
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
        const reply = parseTerminalReply(interaction, await prompt(hint, signal));
        if (typeof reply !== 'string') return reply;
        write(`  ${reply}\n`);
      }
    };
    const turn = queue.then(ask, ask);
    queue = turn.catch(() => {});
    return turn;
  };
}
