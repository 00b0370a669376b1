/** How a local run names a question that waits for an answer, and an `--answers` value for it. */
import type { Interaction } from '../stores/interaction-store.ts';

/** `node <id> (<type>) "<question>" needs an answer`. */
export function waitingMessage(interaction: Interaction): string {
  const asked = interaction.message ? ` "${interaction.message}"` : '';
  return `node ${interaction.nodeId} (${interaction.interactionType})${asked} needs an answer`;
}

/** An `--answers` object answering `interaction`, with a value of the kind it takes. */
export function exampleAnswers(interaction: Interaction): string {
  const example: Record<Interaction['interactionType'], unknown> = {
    ask_for_approval: true,
    ask_for_input: 'your answer',
    ask_for_selection: 0,
    show_message: null,
  };
  return JSON.stringify({ [interaction.authorNodeId]: example[interaction.interactionType] });
}
