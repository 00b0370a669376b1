/**
 * The only functions an expression can call. Each is pure, checks its argument types, and
 * bounds what it builds. They are looked up by name with Object.hasOwn, so names such as
 * `toString` or `constructor` never resolve to anything inherited.
 */
import { charge, sizeOf } from './budget.ts';
import {
  characterCount,
  containsCharacters,
  endsWithCharacters,
  sliceCharacters,
  splitCharacters,
  startsWithCharacters,
} from './characters.ts';
import { MAX_ARRAY_LENGTH } from './limits.ts';
import { checkStringLength, isForbiddenKey, isRecord, runtimeError, toText, typeName } from './values.ts';

interface Builtin {
  readonly minArgs: number;
  readonly maxArgs: number;
  /** Shown in arity errors and the README, e.g. `join(array, separator?)`. */
  readonly signature: string;
  readonly call: (args: readonly unknown[]) => unknown;
}

function argumentError(fn: string, position: number, expected: string, got: unknown): Error {
  return runtimeError(`${fn}() expects ${expected} as argument ${position + 1}, got ${typeName(got)}`);
}

/** Text arguments: null/undefined count as the empty string, other non-strings are an error. */
function textArg(fn: string, args: readonly unknown[], position: number): string {
  const value = args[position];
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') throw argumentError(fn, position, 'a string', value);
  return value;
}

function numberArg(fn: string, args: readonly unknown[], position: number): number {
  const value = args[position];
  if (typeof value !== 'number') throw argumentError(fn, position, 'a number', value);
  return value;
}

function integerArg(fn: string, args: readonly unknown[], position: number): number {
  const value = args[position];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw argumentError(fn, position, 'an integer', value);
  }
  return value;
}

function collectionArg(fn: string, args: readonly unknown[]): object | undefined {
  const value = args[0];
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'object') throw argumentError(fn, 0, 'an object or array', value);
  return value;
}

/** min/max take numbers, or one array of numbers. */
function numbersArg(fn: string, args: readonly unknown[]): number[] {
  const list = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  if (list.length === 0) throw runtimeError(`${fn}() needs at least one number`);
  return list.map((value, position) => {
    if (typeof value !== 'number') throw argumentError(fn, position, 'numbers', value);
    return value;
  });
}

function roundTo(value: number, digits: number): number {
  if (digits === 0) return Math.round(value);
  // Shifting through the decimal exponent avoids binary artefacts such as round(1.005, 2) = 1.
  const shifted = Number(`${Math.round(Number(`${value}e${digits}`))}e-${digits}`);
  if (Number.isFinite(shifted)) return shifted;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function parseJson(text: string): unknown {
  try {
    // Dropping prototype-shaped keys keeps the result safe for naive deep-merge code downstream.
    return JSON.parse(text, (key, value: unknown) => (isForbiddenKey(key) ? undefined : value));
  } catch (error) {
    throw runtimeError(`parseJson() got invalid JSON: ${(error as Error).message}`, error);
  }
}

const builtins = {
  len: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'len(value)',
    call: ([value]) => {
      if (value === null || value === undefined) return 0;
      if (typeof value === 'string') return characterCount(value);
      if (Array.isArray(value)) return value.length;
      if (isRecord(value)) return Object.keys(value).length;
      throw argumentError('len', 0, 'a string, array or object', value);
    },
  },
  lower: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'lower(text)',
    call: (a) => textArg('lower', a, 0).toLowerCase(),
  },
  upper: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'upper(text)',
    call: (a) => textArg('upper', a, 0).toUpperCase(),
  },
  trim: { minArgs: 1, maxArgs: 1, signature: 'trim(text)', call: (a) => textArg('trim', a, 0).trim() },
  contains: {
    minArgs: 2,
    maxArgs: 2,
    signature: 'contains(textOrArray, item)',
    call: ([haystack, needle]) => {
      if (haystack === null || haystack === undefined) return false;
      if (Array.isArray(haystack)) return haystack.some((item) => item === needle);
      if (typeof haystack !== 'string') throw argumentError('contains', 0, 'a string or array', haystack);
      if (typeof needle !== 'string') throw argumentError('contains', 1, 'a string', needle);
      return containsCharacters(haystack, needle);
    },
  },
  startsWith: {
    minArgs: 2,
    maxArgs: 2,
    signature: 'startsWith(text, prefix)',
    call: (a) => startsWithCharacters(textArg('startsWith', a, 0), textArg('startsWith', a, 1)),
  },
  endsWith: {
    minArgs: 2,
    maxArgs: 2,
    signature: 'endsWith(text, suffix)',
    call: (a) => endsWithCharacters(textArg('endsWith', a, 0), textArg('endsWith', a, 1)),
  },
  keys: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'keys(object)',
    call: (a) => {
      const value = collectionArg('keys', a);
      return value === undefined ? [] : Object.keys(value);
    },
  },
  values: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'values(object)',
    call: (a) => {
      const value = collectionArg('values', a);
      return value === undefined ? [] : Object.values(value);
    },
  },
  number: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'number(value)',
    call: ([value]) => {
      if (typeof value === 'number') return value;
      if (typeof value === 'boolean') return value ? 1 : 0;
      if (typeof value === 'string' && value.trim() !== '') {
        const parsed = Number(value);
        if (!Number.isNaN(parsed)) return parsed;
        throw runtimeError(`number() cannot convert ${JSON.stringify(value.slice(0, 40))} to a number`);
      }
      throw argumentError('number', 0, 'a number, boolean or numeric string', value);
    },
  },
  string: { minArgs: 1, maxArgs: 1, signature: 'string(value)', call: ([value]) => toText(value) },
  boolean: { minArgs: 1, maxArgs: 1, signature: 'boolean(value)', call: ([value]) => Boolean(value) },
  json: {
    minArgs: 1,
    maxArgs: 2,
    signature: 'json(value, indent?)',
    call: (a) => {
      const indent = a.length > 1 ? integerArg('json', a, 1) : 0;
      if (indent < 0 || indent > 10) throw runtimeError('json() indent must be between 0 and 10');
      let text: string | undefined;
      try {
        text = JSON.stringify(a[0], null, indent);
      } catch (error) {
        throw runtimeError(`json() cannot serialise the value: ${(error as Error).message}`, error);
      }
      const result = text ?? 'null';
      checkStringLength(result.length, 'json() result');
      return result;
    },
  },
  parseJson: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'parseJson(text)',
    call: (a) => parseJson(textArg('parseJson', a, 0)),
  },
  abs: { minArgs: 1, maxArgs: 1, signature: 'abs(number)', call: (a) => Math.abs(numberArg('abs', a, 0)) },
  floor: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'floor(number)',
    call: (a) => Math.floor(numberArg('floor', a, 0)),
  },
  ceil: {
    minArgs: 1,
    maxArgs: 1,
    signature: 'ceil(number)',
    call: (a) => Math.ceil(numberArg('ceil', a, 0)),
  },
  round: {
    minArgs: 1,
    maxArgs: 2,
    signature: 'round(number, digits?)',
    call: (a) => {
      const digits = a.length > 1 ? integerArg('round', a, 1) : 0;
      if (digits < 0 || digits > 15) throw runtimeError('round() digits must be between 0 and 15');
      return roundTo(numberArg('round', a, 0), digits);
    },
  },
  min: {
    minArgs: 1,
    maxArgs: Number.POSITIVE_INFINITY,
    signature: 'min(numbers…) or min(array)',
    call: (a) => Math.min(...numbersArg('min', a)),
  },
  max: {
    minArgs: 1,
    maxArgs: Number.POSITIVE_INFINITY,
    signature: 'max(numbers…) or max(array)',
    call: (a) => Math.max(...numbersArg('max', a)),
  },
  join: {
    minArgs: 1,
    maxArgs: 2,
    signature: 'join(array, separator?)',
    call: (a) => {
      const [list] = a;
      if (list === null || list === undefined) return '';
      if (!Array.isArray(list)) throw argumentError('join', 0, 'an array', list);
      const separator = a.length > 1 ? textArg('join', a, 1) : ',';
      const parts: string[] = [];
      let length = 0;
      for (const item of list) {
        const text = toText(item);
        length += text.length + (parts.length > 0 ? separator.length : 0);
        checkStringLength(length, 'join() result');
        parts.push(text);
      }
      return parts.join(separator);
    },
  },
  split: {
    minArgs: 2,
    maxArgs: 2,
    signature: 'split(text, separator)',
    call: (a) => {
      const text = textArg('split', a, 0);
      const separator = textArg('split', a, 1);
      // An empty separator splits into characters (code points, so emoji stay whole).
      const parts = splitCharacters(text, separator, MAX_ARRAY_LENGTH + 1);
      if (parts.length > MAX_ARRAY_LENGTH) {
        throw runtimeError(`split() would produce more than ${MAX_ARRAY_LENGTH} parts`);
      }
      return parts;
    },
  },
  slice: {
    minArgs: 2,
    maxArgs: 3,
    signature: 'slice(textOrArray, start, end?)',
    call: (a) => {
      // A missing text slices as "", as every text argument reads null/undefined.
      const value = a[0] === null || a[0] === undefined ? '' : a[0];
      if (typeof value !== 'string' && !Array.isArray(value)) {
        throw argumentError('slice', 0, 'a string or array', value);
      }
      const start = integerArg('slice', a, 1);
      const end = a.length > 2 ? integerArg('slice', a, 2) : undefined;
      return typeof value === 'string' ? sliceCharacters(value, start, end) : value.slice(start, end);
    },
  },
  replace: {
    minArgs: 3,
    maxArgs: 3,
    signature: 'replace(text, search, replacement)',
    call: (a) => {
      const text = textArg('replace', a, 0);
      const search = textArg('replace', a, 1);
      const replacement = textArg('replace', a, 2);
      if (search === '') throw runtimeError('replace() search text must not be empty');
      const pieces = splitCharacters(text, search);
      checkStringLength(
        text.length + (pieces.length - 1) * (replacement.length - search.length),
        'replace() result',
      );
      // Literal replacement: join avoids replaceAll's `$&`-style patterns.
      return pieces.join(replacement);
    },
  },
  concat: {
    minArgs: 1,
    maxArgs: 8,
    signature: 'concat(array, ...arrays)',
    call: (a) => {
      const lists = a.map((value, position) => {
        if (!Array.isArray(value)) throw argumentError('concat', position, 'an array', value);
        return value as unknown[];
      });
      const length = lists.reduce((total, list) => total + list.length, 0);
      if (length > MAX_ARRAY_LENGTH)
        throw runtimeError(`concat() would produce more than ${MAX_ARRAY_LENGTH} items`);
      return lists.flat(1);
    },
  },
  type: { minArgs: 1, maxArgs: 1, signature: 'type(value)', call: ([value]) => typeName(value) },
} as const satisfies Record<string, Builtin>;

export type BuiltinName = keyof typeof builtins;

export const BUILTIN_NAMES: readonly BuiltinName[] = Object.freeze(Object.keys(builtins) as BuiltinName[]);

export function isBuiltinName(name: string): name is BuiltinName {
  return Object.hasOwn(builtins, name);
}

export function builtinSignature(name: BuiltinName): string {
  return builtins[name].signature;
}

/** Checks an argument count when parsing; returns a reason when it is wrong. */
export function checkArity(name: BuiltinName, count: number): string | undefined {
  const { minArgs, maxArgs, signature } = builtins[name];
  if (count >= minArgs && count <= maxArgs) return undefined;
  const expected =
    minArgs === maxArgs
      ? `${minArgs}`
      : maxArgs === Number.POSITIVE_INFINITY
        ? `at least ${minArgs}`
        : `${minArgs} to ${maxArgs}`;
  return `${signature} takes ${expected} argument(s), got ${count}`;
}

/** Built-ins whose work does not grow with their arguments' size. */
const CONSTANT_WORK = new Set<BuiltinName>([
  'len',
  'type',
  'number',
  'boolean',
  'abs',
  'floor',
  'ceil',
  'round',
  'startsWith',
  'endsWith',
]);

/** Built-ins whose work grows with what they build, not with what they are given. */
const OUTPUT_WORK = new Set<BuiltinName>(['slice']);

export function callBuiltin(name: BuiltinName, args: readonly unknown[]): unknown {
  if (!CONSTANT_WORK.has(name) && !OUTPUT_WORK.has(name)) {
    charge(args.reduce<number>((sum, arg) => sum + sizeOf(arg), 0));
  }
  const result: unknown = builtins[name].call(args);
  if (typeof result === 'string') checkStringLength(result.length, `${name}() result`);
  if (!CONSTANT_WORK.has(name)) charge(sizeOf(result));
  return result;
}
