/** Lambda handler for FORK tasks: only FORK's code is imported, so its bundle carries nothing else. */
import { forkNode } from '../nodes/fork.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('FORK', { execute: stepOf(forkNode) });
