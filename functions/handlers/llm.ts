/** Lambda handler for LLM tasks: only LLM's code is imported, so its bundle carries nothing else. */
import { publishingReplies, replyPublisherFromEnvironment } from '../events/appsync-publisher.ts';
import { llmNode } from '../nodes/llm.ts';
import { stepOf } from './dispatch-table.ts';
import { createNodeHandler } from './lambda.ts';

// On a stack with streaming, the replies stream to its AppSync Events API (functions/events/appsync-publisher.ts).
export const handler = createNodeHandler('LLM', {
  execute: publishingReplies(stepOf(llmNode), replyPublisherFromEnvironment(process.env)),
});
