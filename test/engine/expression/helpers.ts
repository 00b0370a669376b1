import { expect } from 'vitest';
import type { ErrorCode } from '../../../engine/errors.ts';
import { StepthreadError } from '../../../engine/errors.ts';

/** Runs `fn` and asserts it throws a StepthreadError with `code`; returns the error for further checks. */
export function expectCoded(fn: () => unknown, code: ErrorCode): StepthreadError {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(StepthreadError);
  expect((thrown as StepthreadError).code).toBe(code);
  return thrown as StepthreadError;
}
