/** Lambda handler for VARIABLE tasks: only VARIABLE's code is imported, so its bundle carries nothing else. */
import { variableNode } from '../nodes/variable.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('VARIABLE', { execute: stepOf(variableNode) });
