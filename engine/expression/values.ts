/**
 * How expression values behave: which properties may be read, how values become text, and the
 * type names used in error messages. Everything the evaluator reads from host data goes
 * through `readProperty`, so the prototype chain is never reached.
 */
import { StepthreadError } from '../errors.ts';
import { characterAt, characterCount } from './characters.ts';
import { MAX_STRING_LENGTH } from './limits.ts';

/** Keys that lead to prototypes or constructors; never readable, whatever the object. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN_KEYS.has(key);
}

export function runtimeError(message: string, cause?: unknown): StepthreadError {
  return new StepthreadError('EXPRESSION_ERROR', message, cause === undefined ? {} : { cause });
}

/** `null`, `undefined`, `string`, `number`, `boolean`, `array`, `object` (and `function` etc. for host values). */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A canonical array index (`0`, `1`, … as number or string), or undefined. */
function arrayIndex(key: string | number): number | undefined {
  if (typeof key === 'number') return Number.isSafeInteger(key) && key >= 0 ? key : undefined;
  if (!/^(0|[1-9]\d{0,15})$/.test(key)) return undefined;
  const index = Number(key);
  return Number.isSafeInteger(index) ? index : undefined;
}

/**
 * Reads `target[key]` under the language's rules: nullish targets give undefined (optional
 * chaining), strings and arrays expose `length` and indices (a string's count characters, as
 * characters.ts does), objects expose own properties only, and anything else (numbers,
 * functions, …) exposes nothing.
 */
export function readProperty(target: unknown, key: string | number): unknown {
  if (typeof key === 'string' && isForbiddenKey(key)) {
    throw runtimeError(`property "${key}" is not accessible`);
  }
  if (target === null || target === undefined) return undefined;
  if (typeof target === 'string') {
    if (key === 'length') return characterCount(target);
    const index = arrayIndex(key);
    return index === undefined ? undefined : characterAt(target, index);
  }
  if (Array.isArray(target)) {
    if (key === 'length') return target.length;
    const index = arrayIndex(key);
    return index !== undefined && index < target.length ? target[index] : undefined;
  }
  if (typeof target === 'object') {
    const name = String(key);
    return Object.hasOwn(target, name) ? (target as Record<string, unknown>)[name] : undefined;
  }
  return undefined;
}

/** Fails when a string the evaluator is about to build would pass the size cap. */
export function checkStringLength(length: number, what: string): void {
  if (length > MAX_STRING_LENGTH) {
    throw runtimeError(`${what} would be ${length} characters; the limit is ${MAX_STRING_LENGTH}`);
  }
}

/**
 * The one conversion of values to text, used by interpolation, `+` with a string, `string()`
 * and `join()`: strings as they are, null/undefined as empty, other primitives as JavaScript
 * prints them, arrays and objects as JSON.
 */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (typeof value === 'object') {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      throw runtimeError(`cannot convert ${typeName(value)} to text: ${(error as Error).message}`, error);
    }
    const text = json ?? '';
    checkStringLength(text.length, 'text');
    return text;
  }
  // Functions and symbols have no meaningful text form.
  return '';
}
