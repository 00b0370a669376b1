/** Lambda handler for TOOL tasks: only TOOL's code is imported, so its bundle carries nothing else. */
import { toolNode } from '../nodes/tool.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('TOOL', { execute: stepOf(toolNode) });
