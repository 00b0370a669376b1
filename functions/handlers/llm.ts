/** Lambda handler for LLM tasks: only LLM's code is imported, so its bundle carries nothing else. */
import { publishingReplies, replyPublisherFromEnvironment } from '../events/appsync-publisher.ts';
import { LLM_ACTIONS } from './actions/llm.ts';
import { createNodeHandler } from './lambda.ts';

// On a stack with streaming, the replies stream to its AppSync Events API (functions/events/appsync-publisher.ts).
export const handler = createNodeHandler('LLM', {
  ...LLM_ACTIONS,
  execute: publishingReplies(LLM_ACTIONS.execute!, replyPublisherFromEnvironment(process.env)),
});
