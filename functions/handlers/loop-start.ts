/** Lambda handler for LOOP_START tasks (every action the ASL sends this function; see dispatch.ts). */
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('LOOP_START');
