/** Lambda handler for END tasks: only END's code is imported, so its bundle carries nothing else. */
import { END_ACTIONS } from './actions/end.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('END', END_ACTIONS);
