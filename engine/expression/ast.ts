/**
 * The checked syntax tree the evaluator runs. It is built from jsep's tree by parse.ts and can
 * only express what the language allows: no `this`, assignment, `new`, method calls or regex.
 */
import type { BuiltinName } from './builtins.ts';

export type UnaryOperator = '!' | '-' | '+';
export type ArithmeticOperator = '+' | '-' | '*' | '/' | '%';
export type ComparisonOperator = '<' | '<=' | '>' | '>=';
/** `==`/`!=` are parsed as their strict forms. */
export type EqualityOperator = '===' | '!==';
export type LogicalOperator = '&&' | '||' | '??';

export type ExprNode =
  | { readonly kind: 'literal'; readonly value: string | number | boolean | null }
  | { readonly kind: 'identifier'; readonly name: string }
  /** `a.b` or `a["b"]`: the key is known when parsing, so it was checked then. */
  | { readonly kind: 'member'; readonly object: ExprNode; readonly key: string }
  /** `a[expr]`: the key is checked when evaluating. */
  | { readonly kind: 'index'; readonly object: ExprNode; readonly key: ExprNode }
  | { readonly kind: 'array'; readonly elements: readonly ExprNode[] }
  | { readonly kind: 'unary'; readonly operator: UnaryOperator; readonly argument: ExprNode }
  | {
      readonly kind: 'binary';
      readonly operator: ArithmeticOperator | ComparisonOperator | EqualityOperator;
      readonly left: ExprNode;
      readonly right: ExprNode;
    }
  | {
      readonly kind: 'logical';
      readonly operator: LogicalOperator;
      readonly left: ExprNode;
      readonly right: ExprNode;
    }
  | {
      readonly kind: 'conditional';
      readonly test: ExprNode;
      readonly consequent: ExprNode;
      readonly alternate: ExprNode;
    }
  | { readonly kind: 'call'; readonly callee: BuiltinName; readonly args: readonly ExprNode[] };

/** A parsed, checked expression. Immutable and shared through the parse cache. */
export interface Expression {
  /** The source as given (a whole-string `{{ … }}` wrapper included). */
  readonly source: string;
  readonly root: ExprNode;
  /** Scope names the expression reads (roots of paths), in first-use order. */
  readonly identifiers: readonly string[];
}
