/** Lambda handler for LOOP_END tasks: only LOOP_END's code is imported, so its bundle carries nothing else. */
import { loopEndNode } from '../nodes/loop.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('LOOP_END', { execute: stepOf(loopEndNode) });
