/** What JOIN's function serves: the join itself and the bookkeeping of its branches and timer. */
import { joinNode, runBranchReport, runJoinTimeout } from '../../nodes/join.ts';
import { type ActionTable, stepOf } from '../dispatch-table.ts';
import type { NodeBehaviour } from '../pipeline.ts';

/**
 * The JOIN with continue-as-new's count: the Parallel state dropped its branches' envelopes, so the
 * parent's `history` gains what each child counted on its path (its last step's envelope, stored on the
 * child thread, which the JOIN loads anyway). The fork's own states were counted by the FORK's Task.
 */
export const countingJoinNode: NodeBehaviour = {
  ...joinNode,
  async logic(ctx) {
    const result = await joinNode.logic(ctx);
    const own = ctx.envelope.history;
    if (own !== undefined) {
      const branches = ctx.related.reduce((sum, child) => sum + (child.thread.lastEnvelope?.history ?? 0), 0);
      ctx.out.history = own + branches;
    }
    return result;
  },
};

export const JOIN_ACTIONS: ActionTable = {
  execute: stepOf(countingJoinNode),
  'branch-done': (event, deps) => runBranchReport(event, deps, 'COMPLETED'),
  'branch-failed': (event, deps) => runBranchReport(event, deps, 'FAILED'),
  timeout: runJoinTimeout,
};
