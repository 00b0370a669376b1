/**
 * The in-process entry point with every node type's functions: a Task input in, the next envelope
 * out. The local runtime and tests call it directly with their own clients. Lambda entries build
 * their own, smaller dispatch with `createDispatch` (dispatch-table.ts) so each bundle carries only
 * its node type's code; a new action goes into its function's table (handlers/actions/).
 */
import { ALL_FUNCTIONS } from '../nodes/index.ts';
import { createDispatch, type Dispatch } from './dispatch-table.ts';

export { createDispatch, type Dispatch, type DispatchTable } from './dispatch-table.ts';

/**
 * Runs one Task. Throws only errors named for the ASL's Retry/Catch (`stepthread.NodeFailed`,
 * `stepthread.Transient`), or unexpected errors unchanged; a join's decision or timeout is a result
 * (functions/nodes/join.ts), not an error.
 */
export const dispatch: Dispatch = createDispatch(ALL_FUNCTIONS);
