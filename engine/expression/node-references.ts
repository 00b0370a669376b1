/**
 * Which node outputs (`nodes.<id>`) a node's expressions and templates can read. A step loads only
 * those, so its reads do not grow with the number of nodes that ran before it.
 */
import type { ExprNode } from './ast.ts';
import { parseExpression } from './parse.ts';
import { hasTemplate, splitTemplate } from './template-syntax.ts';

/** Node ids read by name, or 'all' when some expression reads `nodes` as a whole or by a computed key. */
export type NodeReferences = ReadonlySet<string> | 'all';

const NODES = 'nodes';

/**
 * Every `nodes.<id>` read by the strings inside `value` (a node's config, hooks, tool definitions).
 * A string is read as a template when it has `{{`, else as an expression when it parses as one;
 * any other string reads nothing. Conservative: a bare `nodes` or `nodes[expr]` gives 'all'.
 */
export function nodeReferences(value: unknown): NodeReferences {
  const found = new Set<string>();
  const visit = (current: unknown): boolean => {
    if (typeof current === 'string') return current.includes(NODES) ? readString(current, found) : true;
    if (Array.isArray(current)) return current.every(visit);
    if (current !== null && typeof current === 'object') return Object.values(current).every(visit);
    return true;
  };
  return visit(value) ? found : 'all';
}

/** Adds the string's references to `found`; false when it reads all of `nodes`. */
function readString(text: string, found: Set<string>): boolean {
  const sources: string[] = [];
  try {
    if (hasTemplate(text)) {
      for (const segment of splitTemplate(text))
        if (segment.kind === 'expression') sources.push(segment.source);
    } else {
      sources.push(text);
    }
  } catch {
    return true; // not a template: validation reports it, nothing can be read through it
  }
  for (const source of sources) {
    let root: ExprNode;
    try {
      root = parseExpression(source).root;
    } catch {
      continue; // plain text, not an expression
    }
    if (!collect(root, found)) return false;
  }
  return true;
}

/** Walks the tree; false when `nodes` is read other than as `nodes.<literal key>`. */
function collect(node: ExprNode, found: Set<string>): boolean {
  switch (node.kind) {
    case 'literal':
      return true;
    case 'identifier':
      return node.name !== NODES;
    case 'member':
      if (node.object.kind === 'identifier' && node.object.name === NODES) {
        found.add(node.key);
        return true;
      }
      return collect(node.object, found);
    case 'index':
      return collect(node.object, found) && collect(node.key, found);
    case 'array':
      return node.elements.every((element) => collect(element, found));
    case 'unary':
      return collect(node.argument, found);
    case 'binary':
    case 'logical':
      return collect(node.left, found) && collect(node.right, found);
    case 'conditional':
      return collect(node.test, found) && collect(node.consequent, found) && collect(node.alternate, found);
    case 'call':
      return node.args.every((arg) => collect(arg, found));
  }
}
