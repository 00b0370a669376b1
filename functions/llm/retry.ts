/**
 * Retries of transient provider failures: exponential backoff with full jitter, honouring a
 * server's Retry-After. Providers classify their own errors (see LlmFailure); this module only
 * decides whether and when to try again, and turns the last failure into a coded error.
 */
import { type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import { abortableDelay } from './scripted.ts';

/** One failed attempt, as the provider understood it. */
export interface LlmFailure {
  readonly code: ErrorCode;
  /** Safe to show: no keys, no request bodies. */
  readonly message: string;
  readonly retryable: boolean;
  /** The server's Retry-After, in milliseconds, when it sent one. */
  readonly retryAfterMs?: number;
}

export interface RetryPolicy {
  /** Attempts after the first (default 3). */
  readonly maxRetries: number;
  /** Backoff cap before jitter for retry n is min(maxDelayMs, baseDelayMs * 2^n) (default 200 ms). */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** A Retry-After longer than this ends the retries at once rather than holding a Lambda idle. */
  readonly maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxRetries: 3,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 20_000,
});

/** Clock effects, injectable so tests wait microseconds and see the chosen delays. */
export interface RetryEffects {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
}

export const realRetryEffects: RetryEffects = { sleep: abortableDelay, random: Math.random };

/** The delay before retry `retry` (0-based): the server's Retry-After, else full jitter. */
export function backoffDelay(
  retry: number,
  failure: LlmFailure,
  policy: RetryPolicy,
  random: () => number,
): number {
  if (failure.retryAfterMs !== undefined) return failure.retryAfterMs;
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.floor(random() * cap);
}

/**
 * Reads Retry-After (seconds or an HTTP date) or the `retry-after-ms` some servers send.
 * Returns undefined when absent or unreadable.
 */
export function parseRetryAfter(
  header: (name: string) => string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  const ms = header('retry-after-ms');
  if (ms !== null && ms !== undefined && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.ceil(value);
  }
  const raw = header('retry-after');
  if (raw === null || raw === undefined || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.ceil(seconds * 1000) : undefined;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

export interface RetryOptions {
  readonly classify: (error: unknown) => LlmFailure;
  readonly policy?: Partial<RetryPolicy>;
  readonly effects?: RetryEffects;
  readonly signal?: AbortSignal;
  readonly nodeId?: string;
}

/**
 * Runs `attempt` until it succeeds, fails for good, or the retries run out; the last failure is
 * thrown as a StepthreadError with its code. An abort from `signal` is rethrown as is (the caller
 * ended the work; it is not a provider failure).
 */
export async function withRetry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const policy = { ...DEFAULT_RETRY_POLICY, ...options.policy };
  const effects = options.effects ?? realRetryEffects;
  const { signal } = options;
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      // Already coded (a missing key, a bad profile): not a call failure, nothing to retry.
      if (error instanceof StepthreadError) throw error;
      const failure = options.classify(error);
      const tries = n + 1;
      const fail = (why = '') =>
        new StepthreadError(
          failure.code,
          `${failure.message}${tries > 1 ? ` (after ${tries} attempts)` : ''}${why}`,
          options.nodeId !== undefined ? { nodeId: options.nodeId } : {},
        );
      if (!failure.retryable || n >= policy.maxRetries) throw fail();
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > policy.maxRetryAfterMs) {
        throw fail(`; the server asked to wait ${Math.ceil(failure.retryAfterMs / 1000)} s`);
      }
      await effects.sleep(backoffDelay(n, failure, policy, effects.random), signal);
    }
  }
}

/**
 * Runs `call` with a per-attempt timeout, linked to the caller's signal. A timeout surfaces as
 * LLM_TIMEOUT (retryable); the caller's abort surfaces as its own reason.
 */
export async function withTimeout<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timer = new AbortController();
  const handle = setTimeout(() => timer.abort(new AttemptTimeout(timeoutMs)), timeoutMs);
  const linked = signal ? AbortSignal.any([signal, timer.signal]) : timer.signal;
  try {
    return await call(linked);
  } catch (error) {
    if (signal?.aborted) throw signal.reason ?? error;
    if (timer.signal.aborted) throw timer.signal.reason;
    throw error;
  } finally {
    clearTimeout(handle);
  }
}

/** Per-attempt timeout of a provider call unless the profile sets `timeoutMs`. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/**
 * One provider call as every provider makes it: a per-attempt timeout inside our retry loop, with
 * the profile's `timeoutMs` / `maxRetries` over the defaults.
 */
export function callProvider<T>(
  profile: { readonly timeoutMs?: number; readonly maxRetries?: number },
  request: { readonly signal?: AbortSignal; readonly nodeId?: string },
  options: { readonly retryPolicy?: Partial<RetryPolicy>; readonly retryEffects?: RetryEffects },
  classify: (error: unknown) => LlmFailure,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeoutMs = profile.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  return withRetry(() => withTimeout(timeoutMs, request.signal, call), {
    classify,
    policy: {
      ...options.retryPolicy,
      ...(profile.maxRetries !== undefined ? { maxRetries: profile.maxRetries } : {}),
    },
    ...(options.retryEffects ? { effects: options.retryEffects } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
    ...(request.nodeId !== undefined ? { nodeId: request.nodeId } : {}),
  });
}

/** An attempt that ran past its timeout; providers classify it as LLM_TIMEOUT. */
export class AttemptTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no response within ${timeoutMs} ms`);
    this.name = 'AttemptTimeout';
  }
}
