/** Lambda handler for JOIN tasks: only JOIN's code is imported, so its bundle carries nothing else. */
import { JOIN_ACTIONS } from './actions/join.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('JOIN', JOIN_ACTIONS);
