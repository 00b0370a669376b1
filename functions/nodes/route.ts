/** ROUTE: the first route whose condition holds (priority descending, ties in declaration order). */
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
    // No target: the Choice state's Default (a Fail state) reports the dead end.
    if (target !== undefined) ctx.out.route = target;
    return { output: { targetNodeId: target ?? null, matched: chosen !== undefined } };
  },
};
