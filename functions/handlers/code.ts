/** Lambda handler for CODE tasks: only CODE's code is imported, so its bundle carries nothing else. */
import { codeNode } from '../nodes/code.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('CODE', { execute: stepOf(codeNode) });
