/** What END's function serves: the node itself and `fail`, the catch-all that fails a thread. */
import { endNode } from '../../nodes/end.ts';
import { runFail } from '../../nodes/fail.ts';
import { type ActionTable, stepOf } from '../dispatch-table.ts';

export const END_ACTIONS: ActionTable = {
  execute: stepOf(endNode),
  fail: runFail,
};
