/** Lambda handler for CONTEXT_PROCESSOR tasks: only CONTEXT_PROCESSOR's code is imported, so its bundle carries nothing else. */
import { contextProcessorNode } from '../nodes/context-processor.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('CONTEXT_PROCESSOR', { execute: stepOf(contextProcessorNode) });
