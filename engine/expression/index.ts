/**
 * stepthread's expression language — safe by construction: parsed with jsep, checked against an
 * allow-list, evaluated by our own interpreter. No eval, no Function, no prototype access.
 *
 * - Literals: numbers, 'strings' / "strings", true, false, null, arrays [1, 'a', x].
 *   (No object literals, regex, template literals.)
 * - Identifiers read the scope's own properties; unknown names are undefined.
 * - Member access a.b, a[0], a["k"], a[expr]; null/undefined objects give undefined (optional
 *   chaining always on; `?.` is accepted too). Objects expose own properties only; strings and
 *   arrays expose `length` and indices (a string's, like every text function, count code points). `__proto__`, `constructor`, `prototype` are rejected.
 * - Operators: unary ! - +; * / %; + -; < <= > >=; == != (strict, as === !==); &&; || ??; ?:
 *   Arithmetic and comparison need numbers (or two strings for comparison); + with a string
 *   side concatenates, converting the other side as templates do.
 * - Calls only to built-ins: len lower upper trim contains startsWith endsWith keys values
 *   number string boolean json parseJson abs floor ceil round min max join split slice replace type.
 * - A whole expression may be wrapped in one {{ }} ("{{items}}" is the expression items).
 * - Limits: 4096 characters, depth 64, strings built ≤ 1 MiB, arrays built ≤ 100,000 elements.
 * Errors: INVALID_EXPRESSION when parsing, EXPRESSION_ERROR when evaluating.
 * See README.md in this folder for the full reference.
 */
import type { CodedError } from '../errors.ts';
import type { Expression } from './ast.ts';
import { evaluateParsed, type Scope } from './evaluate.ts';
import { parseExpression, validateExpression } from './parse.ts';

export type { Expression, ExprNode } from './ast.ts';
export { BUILTIN_NAMES, type BuiltinName } from './builtins.ts';
export type { Scope } from './evaluate.ts';
export { type IncrementForm, incrementForm } from './increment.ts';
export * from './limits.ts';
export { type NodeReferences, nodeReferences } from './node-references.ts';
export { staticTypeOfSource } from './parse.ts';
export {
  describeStaticType,
  type NameTypes,
  type StaticType,
  StaticTypeError,
  staticTypeOf,
  type ValueType,
} from './static-types.ts';
export { renderString, renderTemplate, validateTemplate } from './template.ts';
export { isWholeTemplate, templateExpressionSources } from './template-syntax.ts';
export type { CodedError };
export { parseExpression, validateExpression };

/** Evaluates an expression (source or already parsed). Throws INVALID_EXPRESSION or EXPRESSION_ERROR. */
export function evaluate(expression: string | Expression, scope: Scope): unknown {
  const parsed = typeof expression === 'string' ? parseExpression(expression) : expression;
  return evaluateParsed(parsed, scope);
}

/** Evaluates an expression and applies JavaScript truthiness to the result. */
export function evaluateCondition(expression: string | Expression, scope: Scope): boolean {
  return Boolean(evaluate(expression, scope));
}
