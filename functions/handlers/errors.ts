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
export function toTaskError(error: unknown, nodeId?: string): unknown {
  if (error instanceof TaskError) return error;
  if (isTransient(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new TaskError(TASK_ERROR_NAMES.transient, message, { cause: error });
  }
  if (error instanceof StepthreadError) {
    const coded = error.toJSON();
    return nodeFailed(coded.nodeId === undefined && nodeId !== undefined ? { ...coded, nodeId } : coded);
  }
  const stored = storageError(error, nodeId);
  if (stored) return nodeFailed(stored.toJSON());
  return error;
}

/** Messages of the DynamoDB document marshaller refusing a value (it throws plain Errors). */
const MARSHALL_FAILURES = [
  /^Unsupported type passed/,
  /Number\.MAX_SAFE_INTEGER|Number\.MIN_SAFE_INTEGER/,
  /^Pass options\./,
];

/**
 * A storage service or its client refusing a request for good (an item over 400 KB, a value the
 * marshaller cannot hold, a request DynamoDB or S3 calls invalid), or a value too deep for the code
 * handling it: a coded error naming the node, never the raw service error.
 */
export function storageError(error: unknown, nodeId: string | undefined): StepthreadError | undefined {
  if (!(error instanceof Error)) return undefined;
  const where = nodeId === undefined ? '' : `node ${nodeId}: `;
  const options = nodeId === undefined ? { cause: error } : { nodeId, cause: error };
  if (error instanceof RangeError) {
    return new StepthreadError(
      'VALUE_TOO_DEEP',
      `${where}a value is nested too deeply to process (${error.message})`,
      options,
    );
  }
  const service = (error as Error & { $metadata?: unknown }).$metadata !== undefined;
  if (!service && !MARSHALL_FAILURES.some((pattern) => pattern.test(error.message))) return undefined;
  return new StepthreadError(
    'STORAGE_ERROR',
    `${where}the thread's data could not be stored or read (${error.name}: ${error.message})`,
    options,
  );
}
