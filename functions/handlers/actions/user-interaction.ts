/**
 * What USER_INTERACTION's function serves. A waitForTaskToken Task carries its token and records the
 * question; without a token (show_message, a config `userInput`) the node runs as an ordinary step.
 */
import {
  requestInteraction,
  runInteractionAnswer,
  userInteractionNode,
} from '../../nodes/user-interaction.ts';
import type { ActionTable } from '../dispatch-table.ts';
import { runNodeStep } from '../pipeline.ts';

export const USER_INTERACTION_ACTIONS: ActionTable = {
  execute: (event, deps) => {
    const { taskToken } = event;
    if (typeof taskToken === 'string') return requestInteraction({ ...event, taskToken }, deps);
    return runNodeStep(event, deps, userInteractionNode);
  },
  // After the waitForTaskToken Task: commits the answer it received (see nodes/user-interaction.ts).
  answer: runInteractionAnswer,
};
