/**
 * Recognises a write that only adds to the variable it writes (`done + 1`, `1 + done`,
 * `total - cost`): the runtime can then apply it as an atomic increment of a shared global instead
 * of a read-modify-write that 1,000 fork branches would keep losing to each other.
 */
import type { Expression, ExprNode } from './ast.ts';
import { parseExpression } from './parse.ts';

export interface IncrementForm {
  /** What the expression adds to (or, with `negate`, subtracts from) the variable. */
  readonly addend: Expression;
  readonly negate: boolean;
}

/**
 * The addend when `source` is `name + x`, `x + name` or `name - x` where `x` never reads `name`;
 * undefined for anything else (including a source that does not parse).
 */
export function incrementForm(source: string, name: string): IncrementForm | undefined {
  let parsed: Expression;
  try {
    parsed = parseExpression(source);
  } catch {
    return undefined;
  }
  const { root } = parsed;
  if (root.kind !== 'binary' || (root.operator !== '+' && root.operator !== '-')) return undefined;
  const isName = (node: ExprNode) => node.kind === 'identifier' && node.name === name;
  let addend: ExprNode;
  if (isName(root.left)) addend = root.right;
  else if (root.operator === '+' && isName(root.right)) addend = root.left;
  else return undefined;
  if (reads(addend, name)) return undefined;
  return {
    addend: { source: parsed.source, root: addend, identifiers: parsed.identifiers },
    negate: root.operator === '-',
  };
}

/** Whether the expression reads the scope name `name` anywhere. */
function reads(node: ExprNode, name: string): boolean {
  switch (node.kind) {
    case 'literal':
      return false;
    case 'identifier':
      return node.name === name;
    case 'member':
      return reads(node.object, name);
    case 'index':
      return reads(node.object, name) || reads(node.key, name);
    case 'array':
      return node.elements.some((element) => reads(element, name));
    case 'unary':
      return reads(node.argument, name);
    case 'binary':
    case 'logical':
      return reads(node.left, name) || reads(node.right, name);
    case 'conditional':
      return reads(node.test, name) || reads(node.consequent, name) || reads(node.alternate, name);
    case 'call':
      return node.args.some((arg) => reads(arg, name));
  }
}
