/** What JOIN's function serves: the join itself and the bookkeeping of its branches and timer. */
import { joinNode, runBranchReport, runJoinTimeout } from '../../nodes/join.ts';
import { type ActionTable, stepOf } from '../dispatch-table.ts';

export const JOIN_ACTIONS: ActionTable = {
  execute: stepOf(joinNode),
  'branch-done': (event, deps) => runBranchReport(event, deps, 'COMPLETED'),
  'branch-failed': (event, deps) => runBranchReport(event, deps, 'FAILED'),
  timeout: runJoinTimeout,
};
