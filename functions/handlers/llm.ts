/** Lambda handler for LLM tasks: only LLM's code is imported, so its bundle carries nothing else. */
import { LLM_ACTIONS } from './actions/llm.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('LLM', LLM_ACTIONS);
