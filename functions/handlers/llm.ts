/** Lambda handler for LLM tasks: only LLM's code is imported, so its bundle carries nothing else. */
import { llmNode } from '../nodes/llm.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('LLM', { execute: stepOf(llmNode) });
