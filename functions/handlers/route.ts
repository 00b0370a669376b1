/** Lambda handler for ROUTE tasks: only ROUTE's code is imported, so its bundle carries nothing else. */
import { routeNode } from '../nodes/route.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('ROUTE', { execute: stepOf(routeNode) });
