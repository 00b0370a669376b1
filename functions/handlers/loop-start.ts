/** Lambda handler for LOOP_START tasks: only LOOP_START's code is imported, so its bundle carries nothing else. */
import { loopStartNode } from '../nodes/loop.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('LOOP_START', { execute: stepOf(loopStartNode) });
