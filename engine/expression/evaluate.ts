/**
 * Evaluation of a checked ExprNode tree against a scope. Operators are typed strictly (numbers
 * with numbers, strings with strings) so a missing variable surfaces as an EXPRESSION_ERROR
 * instead of a silent NaN; the only implicit conversion is to text when `+` has a string side.
 */
import { StepthreadError } from '../errors.ts';
import type { Expression, ExprNode } from './ast.ts';
import { charge, withBudget } from './budget.ts';
import { callBuiltin } from './builtins.ts';
import { checkStringLength, readProperty, runtimeError, toText, typeName } from './values.ts';

export type Scope = Readonly<Record<string, unknown>>;

function lookup(scope: Scope, name: string): unknown {
  return Object.hasOwn(scope, name) ? scope[name] : undefined;
}

function operandError(operator: string, expected: string, left: unknown, right: unknown): Error {
  return runtimeError(
    `operator "${operator}" expects ${expected}, got ${typeName(left)} and ${typeName(right)}`,
  );
}

/**
 * A number result JSON can hold: Infinity and NaN (`1/0`, `0/0`, `5 % 0`, `1e308 * 10`) would be
 * stored as null, silently, so they are errors where they arise.
 */
function finite(operator: string, left: number, right: number, result: number): number {
  if (Number.isFinite(result)) return result;
  const why = (operator === '/' || operator === '%') && right === 0 ? ' (division by zero)' : '';
  throw runtimeError(
    `${left} ${operator} ${right} is ${result}${why}, which is not a number a variable or JSON can hold`,
  );
}

function add(left: unknown, right: unknown): number | string {
  if (typeof left === 'number' && typeof right === 'number') return finite('+', left, right, left + right);
  if (typeof left === 'string' || typeof right === 'string') {
    const a = toText(left);
    const b = toText(right);
    checkStringLength(a.length + b.length, 'concatenation');
    charge(a.length + b.length);
    return a + b;
  }
  throw operandError('+', 'two numbers or a string', left, right);
}

function arithmetic(operator: '-' | '*' | '/' | '%', left: unknown, right: unknown): number {
  if (typeof left !== 'number' || typeof right !== 'number') {
    throw operandError(operator, 'two numbers', left, right);
  }
  switch (operator) {
    case '-':
      return finite(operator, left, right, left - right);
    case '*':
      return finite(operator, left, right, left * right);
    case '/':
      return finite(operator, left, right, left / right);
    case '%':
      return finite(operator, left, right, left % right);
  }
}

function compare(operator: '<' | '<=' | '>' | '>=', left: unknown, right: unknown): boolean {
  const comparable =
    (typeof left === 'number' && typeof right === 'number') ||
    (typeof left === 'string' && typeof right === 'string');
  if (!comparable) throw operandError(operator, 'two numbers or two strings', left, right);
  const a = left as number | string;
  const b = right as number | string;
  switch (operator) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
}

function propertyKey(value: unknown): string | number {
  if (typeof value === 'string' || typeof value === 'number') return value;
  throw runtimeError(`a property key must be a string or a number, got ${typeName(value)}`);
}

function evaluateNode(node: ExprNode, scope: Scope): unknown {
  charge(1);
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'identifier':
      return lookup(scope, node.name);
    case 'member':
      return readProperty(evaluateNode(node.object, scope), node.key);
    case 'index': {
      const target = evaluateNode(node.object, scope);
      // Optional chaining: a nullish target short-circuits before the key is evaluated.
      if (target === null || target === undefined) return undefined;
      return readProperty(target, propertyKey(evaluateNode(node.key, scope)));
    }
    case 'array':
      charge(node.elements.length * 8);
      return node.elements.map((element) => evaluateNode(element, scope));
    case 'unary': {
      const value = evaluateNode(node.argument, scope);
      if (node.operator === '!') return !value;
      if (typeof value !== 'number') {
        throw runtimeError(`operator "${node.operator}" expects a number, got ${typeName(value)}`);
      }
      return node.operator === '-' ? -value : value;
    }
    case 'binary': {
      const left = evaluateNode(node.left, scope);
      const right = evaluateNode(node.right, scope);
      switch (node.operator) {
        case '===':
          return left === right;
        case '!==':
          return left !== right;
        case '+':
          return add(left, right);
        case '-':
        case '*':
        case '/':
        case '%':
          return arithmetic(node.operator, left, right);
        default:
          return compare(node.operator, left, right);
      }
    }
    case 'logical': {
      const left = evaluateNode(node.left, scope);
      if (node.operator === '&&') return left && evaluateNode(node.right, scope);
      if (node.operator === '||') return left || evaluateNode(node.right, scope);
      return left ?? evaluateNode(node.right, scope);
    }
    case 'conditional':
      return evaluateNode(node.test, scope)
        ? evaluateNode(node.consequent, scope)
        : evaluateNode(node.alternate, scope);
    case 'call':
      return callBuiltin(
        node.callee,
        node.args.map((arg) => evaluateNode(arg, scope)),
      );
  }
}

/**
 * Evaluates a parsed expression. Every failure — including one raised by host data, such as a
 * throwing getter — becomes a StepthreadError EXPRESSION_ERROR naming the expression.
 */
export function evaluateParsed(expression: Expression, scope: Scope): unknown {
  try {
    return withBudget(() => evaluateNode(expression.root, scope));
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'EXPRESSION_BUDGET_EXCEEDED') throw error;
    const reason =
      error instanceof StepthreadError
        ? error.message
        : `unexpected failure: ${(error as Error)?.message ?? error}`;
    const source = expression.source.length > 80 ? `${expression.source.slice(0, 80)}…` : expression.source;
    throw new StepthreadError('EXPRESSION_ERROR', `Expression ${JSON.stringify(source)} failed: ${reason}`, {
      cause: error,
    });
  }
}
