/** VARIABLE: evaluates its expression and stores the value in the chosen scope. */
import { createEvent } from '../../engine/events.ts';
import { evaluate } from '../../engine/expression/index.ts';
import { variableConfigSchema } from '../../engine/model/schema.ts';
import { deepCopy, setVariable } from '../../engine/thread/index.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';

export const variableNode: NodeBehaviour = {
  logic(ctx) {
    const { node, thread } = ctx;
    const config = parseConfig(variableConfigSchema, node);
    const value = evaluate(config.expression, ctx.scope());
    const change = setVariable(
      thread.variables,
      config.variableName,
      deepCopy(value),
      config.scope,
      node.variables,
      {
        type: config.variableType,
        nodeId: node.id,
        ...(config.readonly ? { readonly: true } : {}),
      },
    );
    const event = createEvent('VARIABLE_CHANGED', {
      threadId: thread.id,
      workflowId: thread.workflowId,
      at: ctx.deps.env.now(),
      nodeId: node.id,
      name: change.name,
      scope: change.scope,
    });
    return { output: value, events: [event] };
  },
};
