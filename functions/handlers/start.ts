/** Lambda handler for START tasks: only START's code is imported, so its bundle carries nothing else. */
import { runStart } from '../nodes/start.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('START', { execute: runStart });
