/**
 * Limits on the JSON values a run carries (inputs, variables, CODE outputs, tool results): any JSON
 * value round-trips, keys such as `__proto__` and `constructor` included, up to MAX_VALUE_DEPTH levels
 * of nesting. Deeper values are refused with VALUE_TOO_DEEP where they enter (the run's input, a
 * CODE node's output, a tool's result, any value a step stores).
 */
import { StepthreadError } from '../errors.ts';

/** Arrays and objects nested at most this deep (a scalar is depth 0, `{"a": 1}` depth 1). */
export const MAX_VALUE_DEPTH = 64;

/**
 * The nesting depth of `value`, counting at most to `limit + 1` (so a huge value costs no more than
 * its first `limit + 1` levels). Iterative: a value 100,000 levels deep cannot overflow the stack.
 */
export function valueDepth(value: unknown, limit = MAX_VALUE_DEPTH): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    const here = depth + 1;
    if (here > deepest) deepest = here;
    if (deepest > limit) return deepest;
    for (const inner of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof inner === 'object' && inner !== null) stack.push([inner, here]);
    }
  }
  return deepest;
}

/** Throws VALUE_TOO_DEEP when `value` nests deeper than MAX_VALUE_DEPTH. `what` names it. */
export function checkValueDepth(
  value: unknown,
  what: string,
  nodeId?: string,
  limit = MAX_VALUE_DEPTH,
): void {
  if (valueDepth(value, limit) <= limit) return;
  throw valueTooDeep(what, limit, nodeId);
}

/** The VALUE_TOO_DEEP error for `what`, nested more than `limit` levels. */
export function valueTooDeep(what: string, limit: number, nodeId?: string): StepthreadError {
  return new StepthreadError(
    'VALUE_TOO_DEEP',
    `${nodeId === undefined ? '' : `node ${nodeId}: `}${what} nests arrays and objects more than ${limit} levels deep`,
    nodeId === undefined ? {} : { nodeId },
  );
}

/**
 * Number literals in JSON text that a JavaScript number cannot hold: an integer beyond 2^53, such as
 * `12345678901234567891`, which JSON.parse would silently round, a number beyond a double's range,
 * such as `1e400`, which it would make Infinity (and JSON then writes null), or a non-zero one below
 * its smallest (5e-324), such as `1e-400`, which it would make 0. Returns the first one, if any.
 * Scans the text once, skipping strings. A decimal a double only rounds (`0.1`) passes: every
 * decimal fraction does, and it stays the number it was, nearly; a zero does not.
 */
export function inexactNumberIn(text: string): string | undefined {
  // A scan by index, not one regular expression: an alternation repeated over a string of megabytes
  // overflows V8's regex stack.
  const number = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  let at = 0;
  while (at < text.length) {
    const char = text.charCodeAt(at);
    if (char === QUOTE) {
      at = endOfString(text, at + 1);
      continue;
    }
    if (char !== MINUS && (char < ZERO || char > NINE)) {
      at += 1;
      continue;
    }
    number.lastIndex = at;
    const token = number.exec(text)?.[0];
    if (token === undefined) {
      at += 1;
      continue;
    }
    at += token.length;
    if (/[.eE]/.test(token)) {
      const value = Number(token);
      if (!Number.isFinite(value) || (value === 0 && /[1-9]/.test(token.split(/[eE]/)[0]!))) return token;
      continue;
    }
    const digits = token.replace(/^-?0*/, '');
    if (digits.length < 16) continue;
    const value = Number(token);
    if (!Number.isFinite(value) || BigInt(token) !== BigInt(value)) return token;
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/** The index after the string whose content starts at `from` (after its opening quote). */
function endOfString(text: string, from: number): number {
  let at = from;
  while (at < text.length) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let backslashes = 0;
    for (let i = quote - 1; i >= from && text.charCodeAt(i) === BACKSLASH; i -= 1) backslashes += 1;
    if (backslashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
  return text.length;
}
