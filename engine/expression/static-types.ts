/**
 * What a parsed expression's values can be, known before it runs: literals, array literals,
 * operators and built-ins have fixed result types, while names read from the scope (variables,
 * `input`, `nodes`) and their members can be anything. An operator or built-in given an operand
 * that can only be of a type it refuses (`len(len(1))`, `'a' * 2`, `upper(5)`) would fail every
 * time it is evaluated, so parse.ts reports it as INVALID_EXPRESSION and `validate` shows it
 * before anything runs. Anything that might be right at run time is left to the evaluator.
 */
import type { ExprNode } from './ast.ts';
import type { BuiltinName } from './builtins.ts';

export type ValueType = 'string' | 'number' | 'boolean' | 'null' | 'undefined' | 'array' | 'object';

/** The types a value may have; `unknown` when it may be anything. */
export type StaticType = ReadonlySet<ValueType> | 'unknown';

const only = (...types: ValueType[]): ReadonlySet<ValueType> => new Set(types);
const NUMBER = only('number');
const STRING = only('string');
const BOOLEAN = only('boolean');
const ARRAY = only('array');
const TEXT = only('string', 'null', 'undefined');
const NUMERIC_OR_TEXT = only('number', 'string');

/** Internal: a type problem, turned into INVALID_EXPRESSION by the parser. */
export class StaticTypeError extends Error {}

const ARTICLE: Record<ValueType, string> = {
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
  null: 'null',
  undefined: 'undefined',
  array: 'an array',
  object: 'an object',
};

function describe(type: ReadonlySet<ValueType>): string {
  return [...type].map((t) => ARTICLE[t]).join(' or ');
}

function union(a: StaticType, b: StaticType): StaticType {
  if (a === 'unknown' || b === 'unknown') return 'unknown';
  return new Set([...a, ...b]);
}

/** True when every type the value may have is outside `accepted`: it can never be right. */
function neverAccepted(type: StaticType, accepted: ReadonlySet<ValueType>): type is ReadonlySet<ValueType> {
  return type !== 'unknown' && [...type].every((t) => !accepted.has(t));
}

function within(type: StaticType, allowed: ReadonlySet<ValueType>): boolean {
  return type !== 'unknown' && [...type].every((t) => allowed.has(t));
}

/** The literal value's type. */
function literalType(value: string | number | boolean | null): ReadonlySet<ValueType> {
  if (value === null) return only('null');
  return only(typeof value as 'string' | 'number' | 'boolean');
}

interface BuiltinTypes {
  /** Accepted types per argument position (the last entry applies to the rest); undefined: anything. */
  readonly args: readonly (ReadonlySet<ValueType> | undefined)[];
  /** What it accepts, as the evaluator's own error says it (`a string, array or object`). */
  readonly expects?: readonly (string | undefined)[];
  readonly result: (args: readonly StaticType[]) => StaticType;
}

const fixed = (type: StaticType) => (): StaticType => type;

const LEN = only('string', 'array', 'object', 'null', 'undefined');
const COLLECTION = only('array', 'object', 'null', 'undefined');

/** Every built-in's argument and result types (builtins.ts checks the same at run time). */
const BUILTIN_TYPES: Record<BuiltinName, BuiltinTypes> = {
  len: { args: [LEN], expects: ['a string, array or object'], result: fixed(NUMBER) },
  lower: { args: [TEXT], expects: ['a string'], result: fixed(STRING) },
  upper: { args: [TEXT], expects: ['a string'], result: fixed(STRING) },
  trim: { args: [TEXT], expects: ['a string'], result: fixed(STRING) },
  contains: {
    args: [only('string', 'array', 'null', 'undefined'), undefined],
    expects: ['a string or array'],
    result: fixed(BOOLEAN),
  },
  startsWith: { args: [TEXT, TEXT], expects: ['a string', 'a string'], result: fixed(BOOLEAN) },
  endsWith: { args: [TEXT, TEXT], expects: ['a string', 'a string'], result: fixed(BOOLEAN) },
  keys: { args: [COLLECTION], expects: ['an object or array'], result: fixed(ARRAY) },
  values: { args: [COLLECTION], expects: ['an object or array'], result: fixed(ARRAY) },
  number: {
    args: [only('number', 'boolean', 'string')],
    expects: ['a number, boolean or numeric string'],
    result: fixed(NUMBER),
  },
  string: { args: [undefined], result: fixed(STRING) },
  boolean: { args: [undefined], result: fixed(BOOLEAN) },
  json: { args: [undefined, NUMBER], expects: [undefined, 'an integer'], result: fixed(STRING) },
  parseJson: { args: [TEXT], expects: ['a string'], result: fixed('unknown') },
  abs: { args: [NUMBER], expects: ['a number'], result: fixed(NUMBER) },
  floor: { args: [NUMBER], expects: ['a number'], result: fixed(NUMBER) },
  ceil: { args: [NUMBER], expects: ['a number'], result: fixed(NUMBER) },
  round: { args: [NUMBER, NUMBER], expects: ['a number', 'an integer'], result: fixed(NUMBER) },
  // min/max take one array or several numbers: checked in minMaxProblem.
  min: { args: [undefined], result: fixed(NUMBER) },
  max: { args: [undefined], result: fixed(NUMBER) },
  join: {
    args: [only('array', 'null', 'undefined'), TEXT],
    expects: ['an array', 'a string'],
    result: fixed(STRING),
  },
  split: { args: [TEXT, TEXT], expects: ['a string', 'a string'], result: fixed(ARRAY) },
  slice: {
    args: [only('string', 'array', 'null', 'undefined'), NUMBER, NUMBER],
    expects: ['a string or array', 'an integer', 'an integer'],
    result: ([value]) => {
      if (value !== undefined && within(value, only('string', 'null', 'undefined'))) return STRING;
      if (value !== undefined && within(value, ARRAY)) return ARRAY;
      return only('string', 'array');
    },
  },
  replace: {
    args: [TEXT, TEXT, TEXT],
    expects: ['a string', 'a string', 'a string'],
    result: fixed(STRING),
  },
  concat: { args: [ARRAY], expects: ['an array'], result: fixed(ARRAY) },
  type: { args: [undefined], result: fixed(STRING) },
};

/** The type of a name read from the scope, when the workflow fixes it (declared variables); else unknown. */
export type NameTypes = (name: string) => StaticType | undefined;

function callType(callee: BuiltinName, args: readonly StaticType[]): StaticType {
  const types = BUILTIN_TYPES[callee];
  args.forEach((arg, position) => {
    const last = types.args.length - 1;
    const accepted = types.args[Math.min(position, last)];
    if (accepted === undefined || !neverAccepted(arg, accepted)) return;
    const expected = types.expects?.[Math.min(position, last)] ?? describe(accepted);
    throw new StaticTypeError(
      `${callee}() expects ${expected} as argument ${position + 1}, but it is always ${describe(arg)}`,
    );
  });
  if (callee === 'min' || callee === 'max') minMaxProblem(callee, args);
  // contains(text, x) needs a string x; on an array any item can be looked for.
  if (callee === 'contains' && args[0] !== undefined && within(args[0], STRING)) {
    const needle = args[1];
    if (needle !== undefined && neverAccepted(needle, STRING)) {
      throw new StaticTypeError(
        `contains() on a string expects a string as argument 2, but it is always ${describe(needle)}`,
      );
    }
  }
  return types.result(args);
}

function minMaxProblem(callee: 'min' | 'max', args: readonly StaticType[]): void {
  const accepted = args.length === 1 ? only('number', 'array') : NUMBER;
  args.forEach((arg, position) => {
    if (!neverAccepted(arg, accepted)) return;
    throw new StaticTypeError(
      `${callee}() expects numbers, or one array of numbers, as argument ${position + 1}, but it is always ${describe(arg)}`,
    );
  });
}

function operandProblem(
  operator: string,
  expected: string,
  left: StaticType,
  right: StaticType,
): StaticTypeError {
  return new StaticTypeError(
    `operator "${operator}" expects ${expected}, but gets ${describeStaticType(left)} and ${describeStaticType(right)}`,
  );
}

/**
 * An array built by the expression itself (`[]`, `split(s, ',')`) is a new array, and arrays
 * compare by identity, so `x == []` is always false whatever `x` holds: refused, with what was meant.
 */
function freshArrayComparison(
  node: Extract<ExprNode, { kind: 'binary' }>,
  left: StaticType,
  right: StaticType,
): void {
  const fresh = (side: ExprNode, type: StaticType) =>
    side.kind === 'array' || (side.kind === 'call' && type !== 'unknown' && within(type, only('array')));
  if (!fresh(node.left, left) && !fresh(node.right, right)) return;
  const always = node.operator === '===' ? '== (and ===) is always false' : '!= (and !==) is always true';
  throw new StaticTypeError(
    `an array the expression builds is never equal to another value, so ${always}: arrays compare by identity, not by content; test an empty array with len(x) == 0, an item with contains(x, item), or compare items (x[0] == 'a')`,
  );
}

const PRIMITIVE = only('string', 'number', 'boolean');

/**
 * `==` is strict (no conversion), so two operands that can only be of different primitive types
 * (`fee == "30"` with `fee` a number) are never equal: refused, with the comparison that was meant.
 * A side that may be anything or null (`x == null`) is left alone; `undefined` (a declared variable
 * not set yet) is never equal to a primitive, so it does not make the comparison meaningful.
 */
function mismatchedPrimitives(
  node: Extract<ExprNode, { kind: 'binary' }>,
  left: StaticType,
  right: StaticType,
): void {
  if (left === 'unknown' || right === 'unknown' || left.has('null') || right.has('null')) return;
  if ([...left].some((t) => right.has(t))) return;
  const values = withoutUndefined(left);
  const others = withoutUndefined(right);
  if (values.size === 0 || others.size === 0) return;
  if (!within(values, PRIMITIVE) || !within(others, PRIMITIVE)) return;
  const written = node.operator === '===' ? '==' : '!=';
  const always = node.operator === '===' ? '== (and ===) is always false' : '!= (and !==) is always true';
  const meant = meantComparison(node, written, values, others);
  throw new StaticTypeError(
    `${describe(values)} is never equal to ${describe(others)} (== does not convert types), so ${always}: ${meant ? `write ${meant}, or ` : ''}convert one side first, as in number(x) == 30 or string(x) == '30'`,
  );
}

/** `fee == 30` for `fee == "30"`: the literal side written as the other side's type, when it converts. */
function meantComparison(
  node: Extract<ExprNode, { kind: 'binary' }>,
  written: string,
  left: ReadonlySet<ValueType>,
  right: ReadonlySet<ValueType>,
): string | undefined {
  const sides = [
    { literal: node.right, other: node.left, type: left },
    { literal: node.left, other: node.right, type: right },
  ];
  for (const { literal, other, type } of sides) {
    if (literal.kind !== 'literal' || type.size !== 1) continue;
    const converted = convertLiteral(literal.value, [...type][0]!);
    const shown = pathText(other);
    if (converted !== undefined && shown !== undefined) return `${shown} ${written} ${converted}`;
  }
  return undefined;
}

function withoutUndefined(type: ReadonlySet<ValueType>): ReadonlySet<ValueType> {
  return new Set([...type].filter((t) => t !== 'undefined'));
}

function convertLiteral(value: string | number | boolean | null, type: ValueType): string | undefined {
  if (type === 'string' && value !== null) return `'${String(value)}'`; // a number or boolean: no quotes inside
  if (type === 'number' && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return String(Number(value));
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value;
  return undefined;
}

/** `fee`, `input.fee`, `len(tags)`: a short operand as written; undefined for anything longer. */
function pathText(node: ExprNode): string | undefined {
  if (node.kind === 'identifier') return node.name;
  if (node.kind === 'member') {
    const object = pathText(node.object);
    if (object === undefined || !/^[A-Za-z_$][\w$]*$/.test(node.key)) return undefined;
    return `${object}.${node.key}`;
  }
  if (node.kind === 'call' && node.args.length === 1) {
    const argument = pathText(node.args[0]!);
    return argument === undefined ? undefined : `${node.callee}(${argument})`;
  }
  return undefined;
}

function binaryType(node: Extract<ExprNode, { kind: 'binary' }>, names: NameTypes): StaticType {
  const left = staticTypeOf(node.left, names);
  const right = staticTypeOf(node.right, names);
  switch (node.operator) {
    case '===':
    case '!==':
      freshArrayComparison(node, left, right);
      mismatchedPrimitives(node, left, right);
      return BOOLEAN;
    case '+': {
      if (within(left, STRING) || within(right, STRING)) return STRING;
      if (left === 'unknown' || right === 'unknown') return 'unknown';
      // Fails only when no pair of possible types is two numbers or has a string side.
      const canWork =
        left.has('string') || right.has('string') || (left.has('number') && right.has('number'));
      if (!canWork) throw operandProblem('+', 'two numbers or a string', left, right);
      if (!left.has('string') && !right.has('string')) return NUMBER;
      return NUMERIC_OR_TEXT;
    }
    case '-':
    case '*':
    case '/':
    case '%':
      if (neverAccepted(left, NUMBER) || neverAccepted(right, NUMBER)) {
        throw operandProblem(node.operator, 'two numbers', left, right);
      }
      return NUMBER;
    default: {
      // <, <=, >, >=: two numbers or two strings.
      const bad =
        left !== 'unknown' &&
        right !== 'unknown' &&
        !((left.has('number') && right.has('number')) || (left.has('string') && right.has('string')));
      if (bad || neverAccepted(left, NUMERIC_OR_TEXT) || neverAccepted(right, NUMERIC_OR_TEXT)) {
        throw operandProblem(node.operator, 'two numbers or two strings', left, right);
      }
      return BOOLEAN;
    }
  }
}

function withoutNullish(type: StaticType): StaticType {
  if (type === 'unknown') return type;
  return new Set([...type].filter((t) => t !== 'null' && t !== 'undefined'));
}

/**
 * The types `node`'s value may have. Throws StaticTypeError when some operator or built-in in it
 * is given an operand that can never be of a type it accepts.
 */
export function staticTypeOf(node: ExprNode, names: NameTypes = () => undefined): StaticType {
  const of = (child: ExprNode) => staticTypeOf(child, names);
  switch (node.kind) {
    case 'literal':
      return literalType(node.value);
    case 'identifier':
      return names(node.name) ?? 'unknown';
    case 'member':
      of(node.object);
      return 'unknown';
    case 'index':
      of(node.object);
      of(node.key);
      return 'unknown';
    case 'array':
      for (const element of node.elements) of(element);
      return ARRAY;
    case 'unary': {
      const argument = of(node.argument);
      if (node.operator === '!') return BOOLEAN;
      if (neverAccepted(argument, NUMBER)) {
        throw new StaticTypeError(
          `operator "${node.operator}" expects a number, but gets ${describe(argument)}`,
        );
      }
      return NUMBER;
    }
    case 'binary':
      return binaryType(node, names);
    case 'logical': {
      const left = of(node.left);
      const right = of(node.right);
      return node.operator === '??' ? union(withoutNullish(left), right) : union(left, right);
    }
    case 'conditional':
      of(node.test);
      return union(of(node.consequent), of(node.alternate));
    case 'call':
      return callType(node.callee, node.args.map(of));
  }
}

/** For messages: "a string or null", or "anything" for a value read from the scope. */
export function describeStaticType(type: StaticType): string {
  return type === 'unknown' ? 'anything' : describe(type);
}
