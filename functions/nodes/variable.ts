/** VARIABLE: evaluates its expression and stores the value in the chosen scope. */
import { createEvent } from '../../engine/events.ts';
import { evaluate, incrementForm } from '../../engine/expression/index.ts';
import { variableConfigSchema } from '../../engine/model/schema.ts';
import { deepCopy, setVariable } from '../../engine/thread/index.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';

export const variableNode: NodeBehaviour = {
  logic(ctx) {
    const { node, thread } = ctx;
    const config = parseConfig(variableConfigSchema, node);
    const scope = ctx.scope();
    const value = evaluate(config.expression, scope);
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
    if (change.scope === 'global' && typeof change.previous === 'number' && typeof value === 'number') {
      // `done + 1` in a fork branch: the root applies it as an increment, which siblings cannot lose.
      const form = incrementForm(config.expression, config.variableName);
      const addend = form ? evaluate(form.addend, scope) : undefined;
      const delta = typeof addend === 'number' && form?.negate ? -addend : addend;
      if (typeof delta === 'number' && change.previous + delta === value) {
        ctx.increment = { name: change.name, delta };
      }
    }
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
