/**
 * Subgraph boundaries (the graph build inlines a SUBGRAPH between an ENTER and EXIT node).
 * ENTER pushes the subgraph scope seeded by inputMapping (child variable → expression over the
 * caller's variables) and the child's declarations; EXIT renders the child's output, applies
 * outputMapping (caller variable → expression over the child's variables and `output`) and pops.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent, type StepthreadEvent } from '../../engine/events.ts';
import { evaluate, renderTemplate } from '../../engine/expression/index.ts';
import type { VariableDeclaration } from '../../engine/model/schema.ts';
import { popScope, pushScope, setVariable } from '../../engine/thread/index.ts';
import type { Variables } from '../../engine/thread/types.ts';
import type { NodeBehaviour, StepContext } from '../handlers/pipeline.ts';

interface EnterConfig {
  variables?: VariableDeclaration[];
  inputMapping?: Record<string, string>;
}
interface ExitConfig {
  output?: unknown;
  outputMapping?: Record<string, string>;
}

function mapped(mapping: Record<string, string> | undefined, scope: Record<string, unknown>): Variables {
  const values: Variables = {};
  for (const [name, expression] of Object.entries(mapping ?? {})) {
    Object.defineProperty(values, name, {
      value: evaluate(expression, scope),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return values;
}

/** The child workflow's own variables live in the subgraph frame, whatever scope it declared. */
function asSubgraphDeclarations(declarations: readonly VariableDeclaration[] = []): VariableDeclaration[] {
  return declarations.filter((d) => d.scope !== 'global').map((d) => ({ ...d, scope: 'subgraph' }));
}

function enter(ctx: StepContext) {
  const config = (ctx.node.config ?? {}) as EnterConfig;
  const initial = mapped(config.inputMapping, ctx.scope());
  pushScope(ctx.thread.variables, 'subgraph', initial, asSubgraphDeclarations(config.variables));
  return { output: initial };
}

function exit(ctx: StepContext) {
  const { node, thread } = ctx;
  const config = (node.config ?? {}) as ExitConfig;
  const scope = ctx.scope();
  const output = config.output === undefined ? undefined : renderTemplate(config.output, scope);
  const values = mapped(config.outputMapping, { ...scope, output });
  popScope(thread.variables, 'subgraph');
  const events: StepthreadEvent[] = [];
  for (const [name, value] of Object.entries(values)) {
    const change = setVariable(thread.variables, name, value, undefined, node.variables, { nodeId: node.id });
    events.push(
      createEvent('VARIABLE_CHANGED', {
        threadId: thread.id,
        workflowId: thread.workflowId,
        at: ctx.deps.env.now(),
        nodeId: node.id,
        name: change.name,
        scope: change.scope,
      }),
    );
  }
  return { ...(output === undefined ? {} : { output }), events };
}

export const subgraphBoundaryNode: NodeBehaviour = {
  logic(ctx) {
    switch (ctx.node.boundary) {
      case 'ENTER':
        return enter(ctx);
      case 'EXIT':
        return exit(ctx);
      default:
        throw new StepthreadError(
          'INVALID_TASK_INPUT',
          `SUBGRAPH node ${ctx.node.id} must be an ENTER or EXIT boundary (subgraphs are inlined by the graph build)`,
          { nodeId: ctx.node.id },
        );
    }
  },
};
