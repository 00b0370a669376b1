/** Lambda handler for USER_INTERACTION tasks: only USER_INTERACTION's code is imported, so its bundle carries nothing else. */
import { USER_INTERACTION_ACTIONS } from './actions/user-interaction.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('USER_INTERACTION', USER_INTERACTION_ACTIONS);
