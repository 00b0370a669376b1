/**
 * ROUTE: the first route whose condition holds (priority descending, ties in declaration order),
 * else the default target. With neither, the node fails with NO_ROUTE_MATCHED naming it, so the run's
 * error says which ROUTE had nowhere to go (the Choice state's Default stays as a safety net).
 */
import { StepthreadError } from '../../engine/errors.ts';
import { evaluateCondition } from '../../engine/expression/index.ts';
import { routeConfigSchema } from '../../engine/model/schema.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';

export const routeNode: NodeBehaviour = {
  logic(ctx) {
    const config = parseConfig(routeConfigSchema, ctx.node);
    const scope = ctx.scope();
    // Array.prototype.sort is stable, so equal priorities keep declaration order.
    const ordered = [...config.routes].sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0));
    const chosen = ordered.find((route) => evaluateCondition(route.condition, scope));
    const target = chosen?.targetNodeId ?? config.defaultTargetNodeId;
    if (target === undefined) {
      throw new StepthreadError(
        'NO_ROUTE_MATCHED',
        `ROUTE ${ctx.node.id}: no condition held and there is no defaultTargetNodeId`,
        { nodeId: ctx.node.id },
      );
    }
    ctx.out.route = target;
    return { output: { targetNodeId: target, matched: chosen !== undefined } };
  },
};
