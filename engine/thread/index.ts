/** Public API of threads: creation, status, variables, fork/join/copy, node results. */
export { deepCopy } from './clone.ts';
export { type CopyResult, copyThread } from './copy.ts';
export { type CreateThreadOptions, type CreateThreadResult, createThread } from './create.ts';
export { type ForkOptions, type ForkResult, forkThread, lineageOf } from './fork.ts';
export {
  type BranchOutcome,
  type BranchStatus,
  branchStatusOf,
  completedPathEndsAtReport,
  decideJoin,
  type JoinDecision,
  type JoinDecisionInput,
  type JoinOptions,
  type JoinOutcome,
  type JoinResult,
  joinThreads,
} from './join.ts';
export {
  DEFAULT_ITEM_VARIABLE,
  decidesEarly,
  forEachItems,
  type ItemDecisionInput,
  itemIndexOf,
  itemPathId,
  itemVariables,
  type JoinItemsOptions,
  joinItems,
} from './map.ts';
export { maxStepsExceeded, recordNodeResult } from './results.ts';
export {
  canTransition,
  isTerminalStatus,
  TERMINAL_STATUSES,
  type TransitionDetails,
  type TransitionResult,
  transitionThread,
} from './status.ts';
export type * from './types.ts';
export { THREAD_STATUSES } from './types.ts';
export {
  declaredScope,
  getVariable,
  initialScopes,
  matchesType,
  popScope,
  pushScope,
  resolveVariable,
  type SetVariableOptions,
  type StackScope,
  setVariable,
  type VariableChange,
  variableView,
} from './variables.ts';
