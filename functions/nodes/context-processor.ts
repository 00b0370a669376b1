/** CONTEXT_PROCESSOR: one of the five operations over the conversation's index (seed 004). */
import { applyContextOperation, setToolDescription } from '../../engine/conversation/index.ts';
import { createEvent } from '../../engine/events.ts';
import { contextProcessorConfigSchema } from '../../engine/model/schema.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';

export const contextProcessorNode: NodeBehaviour = {
  readsConversation: true,
  logic(ctx) {
    const { node, thread } = ctx;
    const config = parseConfig(contextProcessorConfigSchema, node);
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
