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
 * Integer literals in JSON text that a JavaScript number cannot hold exactly (beyond 2^53, such as
 * `12345678901234567891`): JSON.parse would silently round them. Returns the first one, if any.
 * Scans the text once, skipping strings.
 */
export function inexactIntegerIn(text: string): string | undefined {
  const literal = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
  for (let match = literal.exec(text); match !== null; match = literal.exec(text)) {
    const token = match[0];
    if (token.startsWith('"') || /[.eE]/.test(token)) continue;
    const digits = token.replace(/^-?0*/, '');
    if (digits.length < 16) continue;
    const number = Number(token);
    if (!Number.isFinite(number) || BigInt(token) !== BigInt(number)) return token;
  }
  return undefined;
}
