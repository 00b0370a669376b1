/**
 * functions/local/polyfills.ts: on a Node without Promise.withResolvers (Node 20, unsupported but
 * still run), aws-local-stepfunctions' Tasks get one that behaves as Node 22's.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

type WithResolvers = <T>() => {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason?: unknown) => void;
};
const promiseStatics = Promise as unknown as { withResolvers?: WithResolvers };
const native = promiseStatics.withResolvers;

afterEach(() => {
  promiseStatics.withResolvers = native;
});

describe('the Promise.withResolvers polyfill', () => {
  it('defines it where Node lacks it: resolve and reject settle the promise it returns', async () => {
    delete promiseStatics.withResolvers;
    vi.resetModules();
    await import('../../../functions/local/polyfills.ts');
    expect(promiseStatics.withResolvers).toBeTypeOf('function');
    expect(promiseStatics.withResolvers).not.toBe(native);
    // Called on Promise, as the library calls it (like Node's, it needs a constructor for `this`).
    const resolved = promiseStatics.withResolvers!<number>();
    resolved.resolve(7);
    expect(await resolved.promise).toBe(7);
    const rejected = promiseStatics.withResolvers!<number>();
    rejected.reject(new Error('no'));
    await expect(rejected.promise).rejects.toThrow('no');
  });

  it('leaves a native one in place', async () => {
    vi.resetModules();
    await import('../../../functions/local/polyfills.ts');
    expect(promiseStatics.withResolvers).toBe(native);
  });
});
