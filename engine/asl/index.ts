/** The ASL compiler: workflow → Amazon States Language (runtime-design.md), plus the Task contract. */
export {
  type CompiledWorkflow,
  type CompileOptions,
  compileGraph,
  compileProblems,
  compileWorkflow,
  DEFAULT_INTERACTION_TIMEOUT_SECONDS,
  FAIL_TASK,
  FAILED_STATE,
  MAX_DEFINITION_BYTES,
  waitsForAnswer,
} from './compile.ts';
export { type CopyStartInput, type CopyStartPoint, copyStartInput, isCopyStart } from './copy-start.ts';
export { MAX_STATE_NAME_LENGTH } from './names.ts';
export * from './node-table.ts';
export {
  forEachState,
  resourceFor,
  substituteResources,
  substitutionKey,
  type TaskStateEntry,
  taskStateIndex,
} from './resources.ts';
export * from './task-input.ts';
export * from './types.ts';
