/**
 * Every error stepthread reports carries one of these codes. Validation returns them as data;
 * runtime failures throw StepthreadError so handlers and the CLI can report the code.
 */
export const ERROR_CODES = [
  // Workflow file
  'WORKFLOW_PARSE_ERROR',
  'SCHEMA_INVALID',
  'UNKNOWN_KEY',
  'UNKNOWN_NODE_REFERENCE',
  'UNKNOWN_VARIABLE_REFERENCE',
  'DUPLICATE_NODE_ID',
  'UNKNOWN_NODE_TYPE',
  'INVALID_NODE_CONFIG',
  // Fork/join (seed 001)
  'INVALID_FORK_PATH_IDS',
  'MAIN_PATH_ID_NOT_FOUND',
  'FORK_JOIN_MISMATCH',
  'INVALID_JOIN_THRESHOLD',
  'INVALID_JOIN_TIMEOUT',
  // Context processor and user interaction (seed 003)
  'INVALID_CONTEXT_OPERATION',
  'MISSING_OPERATION_CONFIG',
  'INVALID_MESSAGE',
  'INVALID_USER_INTERACTION_TYPE',
  'INVALID_SELECTION_OPTIONS',
  // Graph
  'START_NODE_COUNT',
  'UNREACHABLE_NODE',
  'NO_PATH_TO_END',
  'UNKNOWN_EDGE_TARGET',
  'UNKNOWN_ROUTE_TARGET',
  'UNPAIRED_FORK',
  'UNPAIRED_JOIN',
  'FORK_BRANCH_ESCAPES',
  'UNBOUNDED_CYCLE',
  'INVALID_LOOP',
  'INVALID_MAX_ITERATIONS',
  'UNKNOWN_PROFILE',
  'UNKNOWN_TOOL',
  'INVALID_EXPRESSION',
  'INVALID_VARIABLE',
  'INVALID_EDGE',
  // Runtime (seed 001 and beyond)
  'MAIN_THREAD_NOT_FOUND',
  'CONVERSATION_MANAGER_MERGE_FAILED',
  'INVALID_STATUS_TRANSITION',
  'THREAD_NOT_FOUND',
  'INVALID_CONTEXT_INDEX',
  'ROLLBACK_BATCH_NOT_FOUND',
  'TOKEN_LIMIT_EXCEEDED',
  'READONLY_VARIABLE',
  'EXPRESSION_ERROR',
  'MAX_STEPS_EXCEEDED',
  'THREAD_TOO_LARGE',
  'JOIN_TIMEOUT',
  'JOIN_FAILED',
  'JOIN_ALREADY_DECIDED',
  'NODE_EXECUTION_FAILED',
  'CONVERSATION_LOG_MISMATCH',
  'INVALID_TOKEN_USAGE',
  // Storage and local runtime (functions/)
  'VERSION_CONFLICT',
  'CREATE_CONFLICT',
  'EXECUTION_NOT_FOUND',
  'SEGMENT_NOT_FOUND',
  'SEGMENT_CORRUPT',
  'LOG_LENGTH_MISMATCH',
  'LOCAL_DATA_LOCKED',
  'LOCAL_DATA_NOT_FOUND',
  'LOCAL_DATA_UNWRITABLE',
  'LOCAL_DATA_CORRUPT',
  'LOCAL_DATA_GONE',
  'LOCAL_STORE_SERVER_FAILED',
  'RUN_NOT_RESUMABLE',
  'INVALID_STATE_MACHINE',
  'DEPLOY_CONFIG_INVALID',
  'ASL_COMPILE_ERROR',
  'INVALID_TASK_INPUT',
  'STEP_MISMATCH',
  'COPY_POINT_NOT_FOUND',
  'COPY_POINT_IN_FORK_BRANCH',
  'VALUE_NOT_FOUND',
  'VALUE_TOO_LARGE',
  'CONTINUE_AFTER_EVENTS_INVALID',
  'CONTINUATION_CONFLICT',
  'NOT_IMPLEMENTED',
  'LLM_PROVIDER_ERROR',
  'CODE_TIMEOUT',
  'CODE_MEMORY_LIMIT',
  'CODE_STACK_OVERFLOW',
  'CODE_ERROR',
  'CODE_OUTPUT_TOO_LARGE',
  'CODE_INVALID_OUTPUT',
  'CODE_INVALID_INPUT',
  'CODE_SANDBOX_CRASHED',
  'NODE_NOT_FOUND',
  'INVALID_TOOL_DEFINITION',
  'TOOL_NOT_FOUND',
  'TOOL_ARGUMENTS_INVALID',
  'TOOL_FAILED',
  'TOOL_HTTP_ERROR',
  'TOOL_TIMEOUT',
  'LLM_AUTH_FAILED',
  'LLM_BAD_REQUEST',
  'LLM_RATE_LIMITED',
  'LLM_UNAVAILABLE',
  'LLM_TIMEOUT',
  'LLM_MISSING_API_KEY',
  'TOOL_CALL_LIMIT_EXCEEDED',
  'USER_INPUT_REQUIRED',
  'USER_INTERACTION_FAILED',
  'INTERACTION_NOT_FOUND',
  'INTERACTION_ALREADY_ANSWERED',
  'INVALID_INTERACTION_ANSWER',
  'INTERACTION_NOT_DELIVERED',
  'INTERACTION_TIMED_OUT',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** One coded problem, as validation and the CLI's --json report it. */
export interface CodedError {
  code: ErrorCode;
  message: string;
  nodeId?: string;
  /** JSON-pointer-like path into the workflow file, e.g. `nodes[3].config.forkPathIds`. */
  path?: string;
}

export class StepthreadError extends Error {
  readonly code: ErrorCode;
  readonly nodeId: string | undefined;

  constructor(code: ErrorCode, message: string, options: { nodeId?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'StepthreadError';
    this.code = code;
    this.nodeId = options.nodeId;
  }

  toJSON(): CodedError {
    return { code: this.code, message: this.message, ...(this.nodeId ? { nodeId: this.nodeId } : {}) };
  }
}
