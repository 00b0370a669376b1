/** How failures leave a handler: the error names the ASL's Retry and Catch match on. */
import { StepthreadError } from '../../engine/errors.ts';
import { nodeFailed, TASK_ERROR_NAMES, TaskError } from './task.ts';

/** SDK error names that mean "try again later", not "this request is wrong". */
const TRANSIENT_ERROR_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'Throttling',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'SlowDown',
  'InternalServerError',
  'InternalError',
  'ServiceUnavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
  'TransactionConflictException',
]);
const TRANSIENT_NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);

/** Whether a retry of the whole Task may succeed: write conflicts, throttling, 5xx, network blips. */
export function isTransient(error: unknown): boolean {
  if (error instanceof StepthreadError) return error.code === 'VERSION_CONFLICT';
  if (!(error instanceof Error)) return false;
  if (TRANSIENT_ERROR_NAMES.has(error.name)) return true;
  const { $metadata, code } = error as Error & { $metadata?: { httpStatusCode?: number }; code?: string };
  if (($metadata?.httpStatusCode ?? 0) >= 500) return true;
  return code !== undefined && TRANSIENT_NETWORK_CODES.has(code);
}

/**
 * The error a Task throws for `error`: our own TaskErrors pass through, transient ones become
 * `stepthread.Transient` (retried by the ASL), coded ones `stepthread.NodeFailed`. Anything else
 * (a bug, an injected crash) is rethrown unchanged.
 */
export function toTaskError(error: unknown): unknown {
  if (error instanceof TaskError) return error;
  if (isTransient(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new TaskError(TASK_ERROR_NAMES.transient, message, { cause: error });
  }
  if (error instanceof StepthreadError) return nodeFailed(error.toJSON());
  return error;
}
