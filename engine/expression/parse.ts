/**
 * Parsing: jsep turns the source into a generic tree, and `compile` checks it against the
 * allow-list while converting it to our own ExprNode tree. Anything not explicitly allowed —
 * `this`, `new`, assignment, regex, method calls, unknown functions, prototype keys — is an
 * INVALID_EXPRESSION here, before anything is evaluated.
 */
import jsep from 'jsep';
import { type CodedError, StepthreadError } from '../errors.ts';
import type { Expression, ExprNode } from './ast.ts';
import { checkArity, isBuiltinName } from './builtins.ts';
import { builtinSuggestion, filterHint, keywordHints } from './hints.ts';
import { MAX_ARRAY_LENGTH, MAX_AST_DEPTH, MAX_EXPRESSION_LENGTH, PARSE_CACHE_SIZE } from './limits.ts';
import { LruCache } from './lru.ts';
import { type StaticType, StaticTypeError, staticTypeOf } from './static-types.ts';
import { splitTemplate } from './template-syntax.ts';
import { isForbiddenKey } from './values.ts';

const cache = new LruCache<string, Expression>(PARSE_CACHE_SIZE);

/** Internal: a reason plus, when known, the character offset in the parsed source. */
class ParseFailure extends Error {
  constructor(
    readonly reason: string,
    readonly position?: number,
    /** Said after the position: what to write instead. */
    readonly hint?: string,
  ) {
    super(reason);
  }
}

function quote(source: string): string {
  return JSON.stringify(source.length > 80 ? `${source.slice(0, 80)}…` : source);
}

function invalid(source: string, reason: string, position?: number, hint?: string): StepthreadError {
  const at = position === undefined ? '' : ` at character ${position}`;
  const then = hint === undefined ? '' : `; ${hint}`;
  return new StepthreadError(
    'INVALID_EXPRESSION',
    `Invalid expression ${quote(source)}: ${reason}${at}${then}`,
  );
}

/**
 * Rejects bracket nesting past the depth limit before jsep sees it, so its recursive descent
 * never runs deep enough to exhaust the stack.
 */
function checkNesting(source: string): void {
  let depth = 0;
  let i = 0;
  while (i < source.length) {
    const ch = source[i];
    if (ch === '"' || ch === "'") {
      i += 1;
      while (i < source.length && source[i] !== ch) i += source[i] === '\\' ? 2 : 1;
    } else if (ch === '(' || ch === '[') {
      depth += 1;
      if (depth > MAX_AST_DEPTH) throw new ParseFailure(`nested deeper than ${MAX_AST_DEPTH} levels`, i);
    } else if (ch === ')' || ch === ']') {
      depth = Math.max(0, depth - 1);
    }
    i += 1;
  }
}

const EQUALITY = { '==': '===', '===': '===', '!=': '!==', '!==': '!==' } as const;
const ARITHMETIC_OR_COMPARISON = new Set(['+', '-', '*', '/', '%', '<', '<=', '>', '>=']);
const LOGICAL = new Set(['&&', '||', '??']);
const UNARY = new Set(['!', '-', '+']);

type Node = jsep.Expression;

class Compiler {
  readonly identifiers: string[] = [];

  compile(node: Node, depth: number): ExprNode {
    if (depth > MAX_AST_DEPTH) throw new ParseFailure(`nested deeper than ${MAX_AST_DEPTH} levels`);
    const next = depth + 1;
    const core = node as jsep.CoreExpression;
    switch (core.type) {
      case 'Literal': {
        const { value } = core;
        if (value instanceof RegExp) throw new ParseFailure('regular expressions are not supported');
        return Object.freeze({ kind: 'literal', value });
      }
      case 'Identifier':
        return this.identifier(core.name);
      case 'ThisExpression':
        throw new ParseFailure('`this` is not supported; name a variable instead');
      case 'MemberExpression':
        return this.member(core, next);
      case 'CallExpression':
        return this.call(core, next);
      case 'UnaryExpression': {
        if (!UNARY.has(core.operator)) throw new ParseFailure(`operator "${core.operator}" is not supported`);
        const operator = core.operator as '!' | '-' | '+';
        return Object.freeze({ kind: 'unary', operator, argument: this.compile(core.argument, next) });
      }
      case 'BinaryExpression':
        return this.binary(core, next);
      case 'ConditionalExpression':
        return Object.freeze({
          kind: 'conditional',
          test: this.compile(core.test, next),
          consequent: this.compile(core.consequent, next),
          alternate: this.compile(core.alternate, next),
        });
      case 'ArrayExpression': {
        if (core.elements.length > MAX_ARRAY_LENGTH) {
          throw new ParseFailure(`array literal has more than ${MAX_ARRAY_LENGTH} elements`);
        }
        const elements = core.elements.map((element) => {
          if (element === null) throw new ParseFailure('array holes ([1,,2]) are not supported');
          return this.compile(element, next);
        });
        return Object.freeze({ kind: 'array', elements: Object.freeze(elements) });
      }
      case 'Compound': {
        if (core.body.length === 0) throw new ParseFailure('the expression is empty');
        // `a and b` parses as three expressions side by side: say how `and` is written.
        const names = core.body.flatMap((part) => (part.type === 'Identifier' ? [String(part.name)] : []));
        const hints = keywordHints(names);
        throw new ParseFailure(
          hints.length > 0
            ? `expected one expression but found ${core.body.length}: ${hints.join('; ')}`
            : `expected one expression but found ${core.body.length}; ";" and keywords such as new, typeof, in are not supported`,
        );
      }
      case 'SequenceExpression':
        throw new ParseFailure('comma expressions are not supported');
      default:
        throw new ParseFailure(`unsupported syntax (${String(node.type)})`);
    }
  }

  private identifier(name: string): ExprNode {
    if (isForbiddenKey(name)) throw new ParseFailure(`"${name}" is not accessible`);
    if (!this.identifiers.includes(name)) this.identifiers.push(name);
    return Object.freeze({ kind: 'identifier', name });
  }

  private member(node: jsep.MemberExpression, depth: number): ExprNode {
    const object = this.compile(node.object, depth);
    const property = node.property as jsep.CoreExpression;
    let key: string | undefined;
    if (!node.computed) {
      if (property.type !== 'Identifier') throw new ParseFailure('invalid property name');
      key = property.name;
    } else if (property.type === 'Literal') {
      // A literal key is as static as `.name`, so it is checked now rather than at run time.
      if (typeof property.value !== 'string' && typeof property.value !== 'number') {
        throw new ParseFailure('a property key must be a string or a number');
      }
      key = String(property.value);
    }
    if (key === undefined) {
      return Object.freeze({ kind: 'index', object, key: this.compile(property, depth) });
    }
    if (isForbiddenKey(key)) throw new ParseFailure(`property "${key}" is not accessible`);
    return Object.freeze({ kind: 'member', object, key });
  }

  private call(node: jsep.CallExpression, depth: number): ExprNode {
    const callee = node.callee as jsep.CoreExpression;
    if (callee.type === 'MemberExpression') {
      const method = callee.computed ? undefined : (callee.property as jsep.CoreExpression);
      const suggestion = method?.type === 'Identifier' ? builtinSuggestion(method.name) : undefined;
      throw new ParseFailure(
        `method calls are not supported; ${suggestion ?? 'use a built-in function such as lower(text)'}`,
      );
    }
    if (callee.type !== 'Identifier') throw new ParseFailure('only built-in functions can be called');
    if (!isBuiltinName(callee.name)) {
      const hint = builtinSuggestion(callee.name) ?? keywordHints([callee.name])[0];
      throw new ParseFailure(`unknown function "${callee.name}"${hint === undefined ? '' : `; ${hint}`}`);
    }
    const arityProblem = checkArity(callee.name, node.arguments.length);
    if (arityProblem !== undefined) throw new ParseFailure(arityProblem);
    const args = node.arguments.map((argument) => this.compile(argument, depth));
    return Object.freeze({ kind: 'call', callee: callee.name, args: Object.freeze(args) });
  }

  private binary(node: jsep.BinaryExpression, depth: number): ExprNode {
    const { operator } = node;
    // Jinja's `x | upper`: refused before its right side is compiled as an unknown name or call.
    if (operator === '|') {
      const hint = filterHint(filterName(node.right));
      throw new ParseFailure(`operator "|" is not supported${hint === undefined ? '' : `; ${hint}`}`);
    }
    const left = this.compile(node.left, depth);
    const right = this.compile(node.right, depth);
    if (Object.hasOwn(EQUALITY, operator)) {
      const strict = EQUALITY[operator as keyof typeof EQUALITY];
      return Object.freeze({ kind: 'binary', operator: strict, left, right });
    }
    if (ARITHMETIC_OR_COMPARISON.has(operator)) {
      const op = operator as '+' | '-' | '*' | '/' | '%' | '<' | '<=' | '>' | '>=';
      return Object.freeze({ kind: 'binary', operator: op, left, right });
    }
    if (LOGICAL.has(operator)) {
      return Object.freeze({ kind: 'logical', operator: operator as '&&' | '||' | '??', left, right });
    }
    throw new ParseFailure(`operator "${operator}" is not supported`);
  }
}

/** The name of a filter `x | name` or `x | name(args)`, if it is one. */
function filterName(node: Node): string | undefined {
  const core = node as jsep.CoreExpression;
  if (core.type === 'Identifier') return core.name;
  if (core.type === 'CallExpression' && (core.callee as jsep.CoreExpression).type === 'Identifier')
    return (core.callee as jsep.Identifier).name;
  return undefined;
}

/**
 * An operand or argument that can only be of a type its operator or built-in refuses fails every
 * evaluation, so it is refused with the syntax errors (static-types.ts).
 */
function checkStaticTypes(root: ExprNode): void {
  try {
    staticTypeOf(root);
  } catch (error) {
    if (error instanceof StaticTypeError) throw new ParseFailure(error.message);
    throw error;
  }
}

/**
 * A whole string of the form `{{ expr }}` is accepted as the expression `expr`, since workflow
 * fields documented as "a template or an expression" are written either way.
 * Returns the inner source and its offset in the original.
 */
function unwrapTemplate(source: string): { body: string; offset: number } {
  const trimmed = source.trimStart();
  if (!trimmed.startsWith('{{')) return { body: source, offset: 0 };
  let segments: ReturnType<typeof splitTemplate>;
  try {
    segments = splitTemplate(trimmed.trimEnd());
  } catch {
    return { body: source, offset: 0 };
  }
  const [only] = segments;
  if (segments.length !== 1 || only?.kind !== 'expression') return { body: source, offset: 0 };
  return { body: only.source, offset: source.length - trimmed.length + only.start };
}

/** An expression field given text with templates in it (`Hello {{name}}`), as a prompt is written. */
const TEXT_WITH_TEMPLATES =
  "an expression is one expression, not text with {{ }} in it: join text with + ('Hello ' + input.name), or wrap the whole expression in one {{ }}";

function parseUncached(source: string): Expression {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw invalid(source, `longer than ${MAX_EXPRESSION_LENGTH} characters (${source.length})`);
  }
  const { body, offset } = unwrapTemplate(source);
  const compiler = new Compiler();
  let root: ExprNode;
  try {
    checkNesting(body);
    let tree: Node;
    try {
      tree = jsep(body);
    } catch (error) {
      if (error instanceof RangeError) throw new ParseFailure(`nested deeper than ${MAX_AST_DEPTH} levels`);
      const { description, index } = error as { description?: unknown; index?: unknown };
      const reason = typeof description === 'string' ? description : String((error as Error).message);
      throw new ParseFailure(
        reason,
        typeof index === 'number' ? index : undefined,
        body.includes('{{') ? TEXT_WITH_TEMPLATES : undefined,
      );
    }
    root = compiler.compile(tree, 1);
    checkStaticTypes(root);
  } catch (error) {
    if (!(error instanceof ParseFailure)) throw error;
    const position = error.position === undefined ? undefined : error.position + offset;
    throw invalid(source, error.reason, position, error.hint);
  }
  return Object.freeze({ source, root, identifiers: Object.freeze(compiler.identifiers) });
}

/**
 * Parses and checks an expression. Results are cached by source (bounded LRU), because the same
 * conditions are evaluated on every loop iteration. Throws StepthreadError INVALID_EXPRESSION.
 */
export function parseExpression(source: string): Expression {
  if (typeof source !== 'string') {
    throw new StepthreadError('INVALID_EXPRESSION', `An expression must be a string, got ${typeof source}`);
  }
  const cached = cache.get(source);
  if (cached !== undefined) return cached;
  const parsed = parseUncached(source);
  cache.set(source, parsed);
  return parsed;
}

/**
 * The types an expression's value can have (static-types.ts); 'unknown' for one that does not parse,
 * whose INVALID_EXPRESSION its own check reports.
 */
export function staticTypeOfSource(source: string): StaticType {
  try {
    return staticTypeOf(parseExpression(source).root);
  } catch {
    return 'unknown';
  }
}

/** Static check for workflow validation: the coded problem, or undefined when the expression is valid. */
export function validateExpression(source: string): CodedError | undefined {
  try {
    parseExpression(source);
    return undefined;
  } catch (error) {
    if (error instanceof StepthreadError) return error.toJSON();
    throw error;
  }
}
