/**
 * The types a declared variable's value can have wherever an expression reads it, for the type
 * checks of expressions (static-types.ts): `acc > 1` with `acc` declared an array fails every run.
 *
 * Every write of a declared variable is checked against its declared type as the run makes it
 * (thread/variables.ts), so a name declared with one type, and never given a value of its own
 * elsewhere, holds a value of that type or nothing yet. A name is left unknown (anything) when any
 * part of the workflow could make it hold something else under the same name:
 * - it is declared without a type, as `any`, or with two different types;
 * - a loop iterates with it, or a FORK over a list names its items or their index with it;
 * - a node or mapping writes it at a level that does not declare it (a child workflow's write goes
 *   to its own frame, untyped), or a VARIABLE writes it in another scope than the declared one;
 * - a SUBGRAPH's inputMapping seeds it in a child that does not declare it;
 * - some node could not be read (its writes are unknown).
 * It may also be undefined: declared without `initial`, in the `loop` scope (outside an iteration
 * there is none) or in a child workflow (its caller never sees it).
 */
import type { StaticType, ValueType } from '../expression/index.ts';
import type { VariableDeclaration, VariableType } from '../model/schema.ts';
import { declaredScope } from '../thread/variables.ts';
import type { WorkflowView } from './view.ts';

/** The values each variable type holds (thread/variables.ts matchesType: no null, no undefined). */
export const VALUE_TYPE_OF: Readonly<Record<Exclude<VariableType, 'any'>, ValueType>> = {
  string: 'string',
  number: 'number',
  boolean: 'boolean',
  array: 'array',
  object: 'object',
};

interface Seen {
  types: Set<VariableType | undefined>;
  mayBeUndefined: boolean;
}

export function declaredVariableTypes(root: WorkflowView): ReadonlyMap<string, StaticType> {
  const seen = new Map<string, Seen>();
  // Names the scope itself gives (engine/scope.ts: they win over variables), and the loop's `index`.
  const untyped = new Set<string>(['input', 'nodes', 'thread', 'index']);
  let unreadable = false;

  const visit = (level: WorkflowView, isChild: boolean): void => {
    const own = new Map<string, VariableDeclaration>();
    for (const { declaration } of level.variables) {
      own.set(declaration.name, declaration);
      const entry = seen.get(declaration.name) ?? { types: new Set(), mayBeUndefined: false };
      entry.types.add(declaration.type);
      entry.mayBeUndefined ||=
        declaration.initial === undefined || declaredScope(declaration) === 'loop' || isChild;
      seen.set(declaration.name, entry);
    }
    const writesOwn = (name: unknown, scope?: VariableDeclaration['scope']) => {
      if (typeof name !== 'string') return;
      const declaration = own.get(name);
      if (declaration === undefined || (scope !== undefined && scope !== declaredScope(declaration))) {
        untyped.add(name);
      }
    };
    for (const { node, child } of level.nodes) {
      if (node === undefined) {
        unreadable = true;
        continue;
      }
      switch (node.type) {
        case 'LOOP_START':
          untyped.add(node.config.iterationVariable ?? 'item');
          break;
        case 'FORK':
          if (node.config.forEach !== undefined) {
            const item = node.config.itemVariable ?? 'item';
            untyped.add(item);
            untyped.add(`${item}Index`);
          }
          break;
        case 'VARIABLE':
          writesOwn(node.config.variableName, node.config.scope);
          break;
        case 'SUBGRAPH': {
          for (const name of Object.keys(node.config.outputMapping ?? {})) writesOwn(name);
          const childDeclares = new Set((node.config.workflow.variables ?? []).map((d) => d.name));
          for (const name of Object.keys(node.config.inputMapping ?? {})) {
            if (!childDeclares.has(name)) untyped.add(name);
          }
          break;
        }
        default:
          break;
      }
      const outputVariable =
        'config' in node ? (node.config as { outputVariable?: unknown }).outputVariable : undefined;
      writesOwn(outputVariable);
      if (child) visit(child, true);
    }
  };
  visit(root, false);
  const known = new Map<string, StaticType>();
  if (unreadable) return known;
  for (const [name, { types, mayBeUndefined }] of seen) {
    if (untyped.has(name) || types.size !== 1) continue;
    const [type] = types;
    if (type === undefined || type === 'any') continue;
    known.set(
      name,
      new Set<ValueType>([VALUE_TYPE_OF[type], ...(mayBeUndefined ? (['undefined'] as const) : [])]),
    );
  }
  return known;
}
