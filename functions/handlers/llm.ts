/** Lambda handler for LLM tasks: only LLM's code is imported, so its bundle carries nothing else. */
import { llmNode } from '../nodes/llm.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler, preloadConversationClient } from './lambda.ts';

// Every step reads the conversation: load the S3 client during init rather than on the first step.
await preloadConversationClient();

export const handler = createNodeHandler('LLM', { execute: stepOf(llmNode) });
