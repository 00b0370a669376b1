/** CONTEXT_PROCESSOR: one of the five operations over the conversation's index (seed 004). */
import { applyContextOperation, setToolDescription } from '../../engine/conversation/index.ts';
import { createEvent } from '../../engine/events.ts';
import { renderString } from '../../engine/expression/index.ts';
import {
  type ContextProcessorConfig,
  contextProcessorConfigSchema,
  type Message,
} from '../../engine/model/schema.ts';
import type { ExpressionScope } from '../../engine/scope.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';

export const contextProcessorNode: NodeBehaviour = {
  readsConversation: true,
  logic(ctx) {
    const { node, thread } = ctx;
    const config = withRenderedContents(parseConfig(contextProcessorConfigSchema, node), () => ctx.scope());
    const view = ctx.conversation!;
    // Seed 004 §4: clear keeps (and first adds, if it is missing) the message describing the tools.
    if (config.operation === 'clear' && node.toolDescription !== undefined) {
      setToolDescription(view, { role: 'system', content: node.toolDescription });
    }
    const result = applyContextOperation(view, config);
    const event = createEvent('CONTEXT_PROCESSED', {
      threadId: thread.id,
      workflowId: thread.workflowId,
      at: ctx.deps.env.now(),
      nodeId: node.id,
      operation: result.operation,
      visibleCount: result.visibleCount,
    });
    // messageCount is the seed's name for it (seed 003 §3.1: `data: {operation, messageCount}`).
    const output = {
      operation: result.operation,
      messageCount: result.visibleCount,
      visibleCount: result.visibleCount,
    };
    return { output, events: [event] };
  },
};

/**
 * Inserted and replacement contents are `{{ }}` templates, as an LLM prompt is (validate checks the
 * names they read); the scope is built only when a content holds one.
 */
function withRenderedContents(
  config: ContextProcessorConfig,
  scope: () => ExpressionScope,
): ContextProcessorConfig {
  const messages =
    config.operation === 'insert'
      ? config.insert?.messages
      : config.operation === 'replace' && config.replace
        ? [config.replace.message]
        : undefined;
  if (!messages?.some((message) => message.content.includes('{{'))) return config;
  const values = scope();
  const render = (message: Message): Message => ({
    ...message,
    content: renderString(message.content, values),
  });
  if (config.operation === 'insert' && config.insert) {
    return { ...config, insert: { ...config.insert, messages: config.insert.messages.map(render) } };
  }
  if (config.operation === 'replace' && config.replace) {
    return { ...config, replace: { ...config.replace, message: render(config.replace.message) } };
  }
  return config;
}
