/**
 * withCancelWatch (functions/cancel/watch.ts), the wait of an LLM or TOOL function on its call: what a
 * wait costs in looks at the cancel mark (one per interval while the work runs, none after), and how
 * the mark ends the work. Pure timing logic, so fake timers and an in-memory mark.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CancelMark } from '../../../functions/cancel/marks.ts';
import { RunCancelled, withCancelWatch } from '../../../functions/cancel/watch.ts';
import { LAMBDA_CANCEL_POLL_MS } from '../../../functions/handlers/lambda.ts';

const MARK: CancelMark = {
  rootThreadId: 't-root',
  executionId: 'e-1',
  at: '2026-01-01T00:00:00Z',
  reason: 'stop',
};

/** A mark that is there once `cancelled` is set; every look is counted. */
function marks() {
  const state = { looks: 0, cancelled: false, failing: false };
  return {
    state,
    marks: {
      get: async (rootThreadId: string) => {
        state.looks += 1;
        expect(rootThreadId).toBe('t-root');
        if (state.failing) throw new Error('throttled');
        return state.cancelled ? MARK : undefined;
      },
    },
  };
}

/** Work that ends when its signal aborts (with the abort's reason) or when `finish` is called. */
function work() {
  let finish: (value: string) => void = () => {};
  const run = (signal: AbortSignal | undefined) =>
    new Promise<string>((resolve, reject) => {
      finish = resolve;
      signal?.addEventListener('abort', () => reject(signal.reason));
    });
  return { run, finish: (value: string) => finish(value) };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('withCancelWatch', () => {
  it('looks once per interval while the work runs (a Lambda: every 2 s), and never after it ends', async () => {
    const { state, marks: store } = marks();
    const { run, finish } = work();
    const watched = withCancelWatch(
      { marks: store, intervalMs: LAMBDA_CANCEL_POLL_MS },
      't-root',
      undefined,
      run,
    );
    expect(LAMBDA_CANCEL_POLL_MS).toBe(2000);
    await vi.advanceTimersByTimeAsync(1999);
    expect(state.looks).toBe(0);
    // A minute of waiting on a model: 30 looks, half a read unit each.
    await vi.advanceTimersByTimeAsync(60_001);
    expect(state.looks).toBe(31);
    finish('done');
    await expect(watched).resolves.toBe('done');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(state.looks).toBe(31);
  });

  it('work that ends before the first interval never looks', async () => {
    const { state, marks: store } = marks();
    const result = await withCancelWatch(
      { marks: store, intervalMs: 2000 },
      't-root',
      undefined,
      async () => 'quick',
    );
    expect(result).toBe('quick');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.looks).toBe(0);
  });

  it('aborts the work with RunCancelled at the first look that finds the mark, and tells onCancelled', async () => {
    const { state, marks: store } = marks();
    const { run } = work();
    const seen: CancelMark[] = [];
    const watched = withCancelWatch(
      { marks: store, intervalMs: 2000, onCancelled: (mark) => seen.push(mark) },
      't-root',
      undefined,
      run,
    );
    watched.catch(() => {});
    await vi.advanceTimersByTimeAsync(4000);
    state.cancelled = true;
    await vi.advanceTimersByTimeAsync(2000);
    await expect(watched).rejects.toBeInstanceOf(RunCancelled);
    await expect(watched).rejects.toThrow('the run was cancelled: stop');
    expect(seen).toEqual([MARK]);
    expect(state.looks).toBe(3);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.looks).toBe(3);
  });

  it('a look that fails is a missed one: the work goes on and the next look still sees the mark', async () => {
    const { state, marks: store } = marks();
    const { run } = work();
    state.failing = true;
    const watched = withCancelWatch({ marks: store, intervalMs: 2000 }, 't-root', undefined, run);
    watched.catch(() => {});
    await vi.advanceTimersByTimeAsync(2000);
    expect(state.looks).toBe(1);
    state.failing = false;
    state.cancelled = true;
    await vi.advanceTimersByTimeAsync(2000);
    await expect(watched).rejects.toBeInstanceOf(RunCancelled);
  });

  it('still ends with its own signal (the Lambda’s timeout), and without a root thread only watches that', async () => {
    const { state, marks: store } = marks();
    const own = new AbortController();
    const { run } = work();
    const watched = withCancelWatch({ marks: store, intervalMs: 2000 }, undefined, own.signal, run);
    watched.catch(() => {});
    own.abort(new Error('timed out'));
    await expect(watched).rejects.toThrow('timed out');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.looks).toBe(0);
  });
});
