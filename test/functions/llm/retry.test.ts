import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import {
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  type LlmFailure,
  parseRetryAfter,
  withRetry,
} from '../../../functions/llm/retry.ts';

const transient: LlmFailure = { code: 'LLM_UNAVAILABLE', message: 'down', retryable: true };

function recorder(random = () => 1) {
  const delays: number[] = [];
  return { delays, effects: { sleep: async (ms: number) => void delays.push(ms), random } };
}

describe('withRetry', () => {
  it('retries retryable failures with capped exponential backoff and full jitter', async () => {
    const { delays, effects } = recorder(() => 0.999);
    let attempts = 0;
    const result = await withRetry(
      async () => {
        if (++attempts < 4) throw new Error('flaky');
        return 'ok';
      },
      { classify: () => transient, effects, policy: { maxRetries: 3, baseDelayMs: 200, maxDelayMs: 500 } },
    );
    expect(result).toBe('ok');
    expect(delays).toEqual([199, 399, 499]);
    expect(backoffDelay(0, transient, DEFAULT_RETRY_POLICY, () => 0)).toBe(0);
  });

  it('throws the last failure as a coded error, saying how many attempts were made', async () => {
    const { effects } = recorder();
    let attempts = 0;
    const run = withRetry(
      async () => {
        attempts++;
        throw new Error('x');
      },
      { classify: () => transient, effects, policy: { maxRetries: 2 }, nodeId: 'n' },
    );
    await expect(run).rejects.toMatchObject({
      code: 'LLM_UNAVAILABLE',
      nodeId: 'n',
      message: 'down (after 3 attempts)',
    });
    expect(attempts).toBe(3);
  });

  it('does not retry permanent failures or already-coded errors', async () => {
    const { delays, effects } = recorder();
    await expect(
      withRetry(() => Promise.reject(new Error('no')), {
        classify: () => ({ code: 'LLM_AUTH_FAILED', message: 'bad key', retryable: false }),
        effects,
      }),
    ).rejects.toMatchObject({ code: 'LLM_AUTH_FAILED', message: 'bad key' });
    await expect(
      withRetry(() => Promise.reject(new StepthreadError('LLM_MISSING_API_KEY', 'none')), {
        classify: () => transient,
        effects,
      }),
    ).rejects.toMatchObject({ code: 'LLM_MISSING_API_KEY' });
    expect(delays).toEqual([]);
  });

  it('waits the Retry-After a server asks for, and gives up at once when it is too long', async () => {
    const { delays, effects } = recorder();
    let attempts = 0;
    await withRetry(
      async () => {
        if (++attempts === 1) throw new Error('429');
      },
      { classify: () => ({ ...transient, code: 'LLM_RATE_LIMITED', retryAfterMs: 1500 }), effects },
    );
    expect(delays).toEqual([1500]);
    await expect(
      withRetry(() => Promise.reject(new Error('429')), {
        classify: () => ({ ...transient, code: 'LLM_RATE_LIMITED', retryAfterMs: 120_000 }),
        effects,
      }),
    ).rejects.toThrow('the server asked to wait 120 s');
  });

  it('rethrows the abort reason when the caller aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('run ended');
    const run = withRetry(
      async () => {
        controller.abort(reason);
        throw new Error('aborted fetch');
      },
      { classify: () => transient, signal: controller.signal },
    );
    await expect(run).rejects.toBe(reason);
  });
});

describe('parseRetryAfter', () => {
  const headers = (values: Record<string, string>) => (name: string) => values[name];
  it('reads seconds, HTTP dates and retry-after-ms', () => {
    expect(parseRetryAfter(headers({ 'retry-after': '3' }))).toBe(3000);
    expect(parseRetryAfter(headers({ 'retry-after': '0.5' }))).toBe(500);
    expect(parseRetryAfter(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now)).toBe(7000);
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(headers({}))).toBeUndefined();
  });
});
