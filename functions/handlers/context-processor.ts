/** Lambda handler for CONTEXT_PROCESSOR tasks: only CONTEXT_PROCESSOR's code is imported, so its bundle carries nothing else. */
import { contextProcessorNode } from '../nodes/context-processor.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler, preloadConversationClient } from './lambda.ts';

// Every step reads the conversation: load the S3 client during init rather than on the first step.
await preloadConversationClient();

export const handler = createNodeHandler('CONTEXT_PROCESSOR', { execute: stepOf(contextProcessorNode) });
