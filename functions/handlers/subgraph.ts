/** Lambda handler for SUBGRAPH tasks: only SUBGRAPH's code is imported, so its bundle carries nothing else. */
import { subgraphBoundaryNode } from '../nodes/subgraph.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('SUBGRAPH', { execute: stepOf(subgraphBoundaryNode) });
