/**
 * The CODE sandbox: untrusted JavaScript in QuickJS (WebAssembly) inside a worker thread, with a
 * deadline, a memory limit, a stack limit and no I/O. Used by CODE nodes and `code` tools.
 */

import { StepthreadError } from '../../engine/errors.ts';
import { failed, WorkerPool } from './pool.ts';
import type { Sandbox, SandboxJob, SandboxOptions, SandboxRequest, SandboxResult } from './types.ts';

export type {
  Sandbox,
  SandboxError,
  SandboxErrorCode,
  SandboxOptions,
  SandboxRequest,
  SandboxResult,
} from './types.ts';
export { SANDBOX_ERROR_CODES } from './types.ts';
export { BUNDLED_WORKER_FILE, WORKER_ENV_VARIABLE } from './worker-location.ts';

export const DEFAULT_TIMEOUT_MS = 1000;
export const DEFAULT_MEMORY_LIMIT_MB = 32;
export const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;
/** Upper bounds match the CODE node schema (engine/model/schema.ts). */
const MAX_TIMEOUT_MS = 900_000;
const MAX_MEMORY_LIMIT_MB = 1024;
const MAX_OUTPUT_BYTES_LIMIT = 64 * 1024 * 1024;

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const pool = new WorkerPool(options);
  return {
    async run(request) {
      const job = toJob(request);
      return 'ok' in job ? job : pool.submit(job);
    },
    close: () => pool.close(),
  };
}

let shared: Sandbox | undefined;

/**
 * Most workers of the process-wide sandbox: parallel CODE nodes (the embedded runtime runs every
 * branch in this process) run concurrently up to this many, and within the memory budget
 * (pool.ts defaultMemoryBudgetMb). `STEPTHREAD_SANDBOX_WORKERS` overrides it.
 */
export const DEFAULT_SHARED_WORKERS = 8;

/** Runs on the process-wide warm workers, started on first use; they never keep the process alive. */
export function runCode(request: SandboxRequest): Promise<SandboxResult> {
  shared ??= createSandbox({ workers: sharedWorkers() });
  return shared.run(request);
}

function sharedWorkers(): number {
  const configured = Number(process.env.STEPTHREAD_SANDBOX_WORKERS);
  return Number.isInteger(configured) && configured >= 1 ? configured : DEFAULT_SHARED_WORKERS;
}

/** Applies defaults and checks limits; an input that is not JSON is the input's fault, not a bug. */
function toJob(request: SandboxRequest): SandboxJob | SandboxResult {
  if (typeof request.code !== 'string') throw invalid('code must be a string');
  const timeoutMs = limit('timeoutMs', request.timeoutMs, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
  const memoryLimitMb = limit(
    'memoryLimitMb',
    request.memoryLimitMb,
    DEFAULT_MEMORY_LIMIT_MB,
    MAX_MEMORY_LIMIT_MB,
  );
  const maxOutputBytes = limit(
    'maxOutputBytes',
    request.maxOutputBytes,
    DEFAULT_MAX_OUTPUT_BYTES,
    MAX_OUTPUT_BYTES_LIMIT,
  );

  let inputJson: string | undefined;
  try {
    inputJson = request.input === undefined ? undefined : JSON.stringify(request.input);
    if (request.input !== undefined && inputJson === undefined)
      throw new TypeError(`a ${typeof request.input}`);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return failed('CODE_INVALID_INPUT', `the input is not JSON-serialisable: ${reason}`, 0);
  }
  return {
    code: request.code,
    inputJson,
    timeoutMs,
    memoryLimitBytes: memoryLimitMb * 1048576,
    maxOutputBytes,
    ...(request.compileOnly ? { compileOnly: true } : {}),
  };
}

function limit(name: string, value: number | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0 || value > max) throw invalid(`${name} must be in (0, ${max}]`);
  return value;
}

function invalid(message: string): StepthreadError {
  return new StepthreadError('INVALID_NODE_CONFIG', `sandbox request: ${message}`);
}
