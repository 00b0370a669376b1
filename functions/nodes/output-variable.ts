/** Stores a node's output in its `outputVariable` (LLM, TOOL, CODE), with the VARIABLE_CHANGED event. */
import { createEvent, type VariableChangedEvent } from '../../engine/events.ts';
import { deepCopy, setVariable } from '../../engine/thread/index.ts';
import type { StepContext } from '../handlers/pipeline.ts';

export function storeOutput(ctx: StepContext, name: string, value: unknown): VariableChangedEvent {
  const { node, thread } = ctx;
  // A copy: the node result keeps the same value, and neither may alias the other.
  const change = setVariable(thread.variables, name, deepCopy(value), undefined, node.variables, {
    nodeId: node.id,
  });
  return createEvent('VARIABLE_CHANGED', {
    threadId: thread.id,
    workflowId: thread.workflowId,
    at: ctx.deps.env.now(),
    nodeId: node.id,
    name: change.name,
    scope: change.scope,
  });
}
