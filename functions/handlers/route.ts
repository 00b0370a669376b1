/** Lambda handler for ROUTE tasks (every action the ASL sends this function; see dispatch.ts). */
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('ROUTE');
