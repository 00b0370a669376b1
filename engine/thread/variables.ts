/**
 * Variable scopes of a thread: global, thread, and the subgraph and loop stacks.
 *
 * Lookup is innermost first: loop frames (innermost first, so a nested loop's body reads the outer
 * loop's item) → subgraph frames (innermost first, so a nested SUBGRAPH's child reads the variables of
 * the SUBGRAPH that called it, as validation and docs/workflow-file.md promise) → thread → global.
 * Writes to the loop or subgraph scope go to the innermost frame.
 *
 * These functions mutate the scopes they are given, on purpose: a fork shares one `global` object
 * between its children (seed 000), and a write through any of them must be seen by all of them.
 */
import { StepthreadError } from '../errors.ts';
import type { VariableDeclaration, VariableScope, VariableType } from '../model/schema.ts';
import { deepCopy } from './clone.ts';
import type { ReadonlyMarks, VariableScopes, Variables } from './types.ts';

export type StackScope = 'subgraph' | 'loop';

const DEFAULT_SCOPE: VariableScope = 'thread';

export function declaredScope(declaration: VariableDeclaration): VariableScope {
  return declaration.scope ?? DEFAULT_SCOPE;
}

/** Scopes holding the declared `global` and `thread` variables with deep-copied initial values. */
export function initialScopes(declarations: readonly VariableDeclaration[] = []): VariableScopes {
  const scopes: VariableScopes = { global: {}, thread: {}, subgraph: [], loop: [] };
  for (const declaration of declarations) {
    const scope = declaredScope(declaration);
    if (scope === 'global' || scope === 'thread') initialiseDeclared(scopes[scope], declaration, scope);
  }
  return scopes;
}

function initialiseDeclared(frame: Variables, declaration: VariableDeclaration, scope: VariableScope): void {
  if (declaration.initial === undefined) return;
  assertType(declaration.name, declaration.initial, declaration.type, scope);
  defineOwn(frame, declaration.name, deepCopy(declaration.initial));
}

/** True when `value` fits the declared variable type (`any` or no type accepts everything). */
export function matchesType(value: unknown, type: VariableType | undefined): boolean {
  switch (type) {
    case undefined:
    case 'any':
      return true;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'string':
    case 'boolean':
      return typeof value === type;
  }
}

/** A value's JSON type, as a type error names what it was given. */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  // A number JSON cannot hold (1/0, 0/0): say which, or "declared number but was given number" puzzles.
  if (typeof value === 'number' && !Number.isFinite(value)) return `${value}, not a finite number`;
  return typeof value;
}

function assertType(
  name: string,
  value: unknown,
  type: VariableType | undefined,
  scope: VariableScope,
  nodeOption: { nodeId?: string } = {},
): void {
  if (!matchesType(value, type)) {
    throw new StepthreadError(
      'INVALID_VARIABLE',
      `variable "${name}" (${scope}) is declared ${type} but was given ${describeType(value)}`,
      nodeOption,
    );
  }
}

/** Own-property write that also works for names like `__proto__`. */
function defineOwn(frame: Variables, name: string, value: unknown): void {
  Object.defineProperty(frame, name, { value, writable: true, enumerable: true, configurable: true });
}

function hasValue(frame: Variables | undefined, name: string): boolean {
  return frame !== undefined && Object.hasOwn(frame, name) && frame[name] !== undefined;
}

/** The frame a scope name refers to right now (top of stack for subgraph/loop), if any. */
function frameOf(scopes: VariableScopes, scope: VariableScope): Variables | undefined {
  switch (scope) {
    case 'global':
      return scopes.global;
    case 'thread':
      return scopes.thread;
    case 'subgraph':
      return scopes.subgraph.at(-1);
    case 'loop':
      return scopes.loop.at(-1);
  }
}

const LOOKUP_ORDER: readonly VariableScope[] = ['loop', 'subgraph', 'thread', 'global'];

/** Where `name` resolves, innermost first; undefined when no visible scope holds it. */
export function resolveVariable(
  scopes: VariableScopes,
  name: string,
): { scope: VariableScope; value: unknown } | undefined {
  for (let depth = scopes.loop.length - 1; depth >= 0; depth--) {
    const frame = scopes.loop[depth];
    if (frame !== undefined && Object.hasOwn(frame, name)) return { scope: 'loop', value: frame[name] };
  }
  for (let depth = scopes.subgraph.length - 1; depth >= 0; depth--) {
    const frame = scopes.subgraph[depth];
    if (frame !== undefined && Object.hasOwn(frame, name)) return { scope: 'subgraph', value: frame[name] };
  }
  for (const scope of LOOKUP_ORDER) {
    if (scope === 'loop' || scope === 'subgraph') continue;
    const frame = frameOf(scopes, scope);
    if (frame !== undefined && Object.hasOwn(frame, name)) return { scope, value: frame[name] };
  }
  return undefined;
}

export function getVariable(scopes: VariableScopes, name: string): unknown {
  return resolveVariable(scopes, name)?.value;
}

/** A flat object of every visible variable, inner scopes shadowing outer ones (for the evaluator). */
export function variableView(scopes: VariableScopes): Record<string, unknown> {
  // Spread and defineOwn (not Object.assign) define own properties, so `__proto__` stays data.
  const view: Record<string, unknown> = { ...scopes.global, ...scopes.thread };
  for (const frame of [...scopes.subgraph, ...scopes.loop]) {
    for (const [name, value] of Object.entries(frame)) defineOwn(view, name, value);
  }
  return view;
}

function marksOf(scopes: VariableScopes): ReadonlyMarks {
  scopes.readonlyMarks ??= {
    global: [],
    thread: [],
    subgraph: scopes.subgraph.map(() => []),
    loop: scopes.loop.map(() => []),
  };
  return scopes.readonlyMarks;
}

function markedReadonly(scopes: VariableScopes, scope: VariableScope, name: string): boolean {
  const marks = scopes.readonlyMarks;
  if (marks === undefined) return false;
  const list = scope === 'global' || scope === 'thread' ? marks[scope] : marks[scope].at(-1);
  return list?.includes(name) ?? false;
}

function addMark(scopes: VariableScopes, scope: VariableScope, name: string): void {
  const marks = marksOf(scopes);
  let list: string[];
  if (scope === 'global' || scope === 'thread') {
    list = marks[scope];
  } else {
    const stack = marks[scope];
    // Marks may predate frames pushed without them (hand-built scopes): pad to the stack depth.
    while (stack.length < scopes[scope].length) stack.push([]);
    list = stack[scopes[scope].length - 1]!;
  }
  if (!list.includes(name)) list.push(name);
}

export interface SetVariableOptions {
  /** Mark the variable readonly from now on (a VARIABLE node with `readonly: true`). */
  readonly?: boolean;
  /** Type the writer declares (a VARIABLE node's variableType); checked like a declaration's. */
  type?: VariableType;
  nodeId?: string;
}

export interface VariableChange {
  name: string;
  scope: VariableScope;
  previous: unknown;
  value: unknown;
}

/** The declaration a write of `name` in `scope` (any scope when absent) is checked against. */
export function findDeclaration(
  declarations: readonly VariableDeclaration[],
  name: string,
  scope: VariableScope | undefined,
): VariableDeclaration | undefined {
  return declarations.find((d) => d.name === name && (scope === undefined || declaredScope(d) === scope));
}

/**
 * Writes `name` in `scope` (default: its declared scope, else the innermost scope that already holds
 * it, else thread; inside a subgraph, thread means the subgraph's frame). Throws READONLY_VARIABLE when the declaration or an earlier write marked it
 * readonly and it already has a value, and INVALID_VARIABLE on a type mismatch or when the target
 * stack scope has no frame. The value is stored as given; callers deep-copy if they keep a reference.
 */
export function setVariable(
  scopes: VariableScopes,
  name: string,
  value: unknown,
  scope: VariableScope | undefined,
  declarations: readonly VariableDeclaration[] = [],
  options: SetVariableOptions = {},
): VariableChange {
  const declaration = findDeclaration(declarations, name, scope);
  const target = insideSubgraph(
    scopes,
    scope ??
      (declaration ? declaredScope(declaration) : undefined) ??
      resolveVariable(scopes, name)?.scope ??
      DEFAULT_SCOPE,
  );
  const frame = frameOf(scopes, target);
  const nodeOption = options.nodeId ? { nodeId: options.nodeId } : {};
  if (frame === undefined) {
    throw new StepthreadError(
      'INVALID_VARIABLE',
      // Outside a loop or subgraph, or in a FORK's branch: each branch starts with none (seed 000 §3).
      `cannot set "${name}": no ${target} scope is active (a FORK's branches start with empty loop and subgraph scopes: write a thread variable there)`,
      nodeOption,
    );
  }
  const isReadonly = declaration?.readonly === true || markedReadonly(scopes, target, name);
  if (isReadonly && hasValue(frame, name)) {
    throw new StepthreadError('READONLY_VARIABLE', `variable "${name}" (${target}) is readonly`, nodeOption);
  }
  assertType(name, value, declaration?.type, target, nodeOption);
  assertType(name, value, options.type, target, nodeOption);
  const previous = frame[name];
  defineOwn(frame, name, value);
  if (options.readonly) addMark(scopes, target, name);
  return { name, scope: target, previous, value };
}

/**
 * Inside a subgraph, the thread scope is its caller's: a child's writes to it go to the child's own
 * frame instead, as its declared variables do, so they reach the caller only through outputMapping.
 * (Reads still see the caller's variables; `global` stays shared.)
 */
function insideSubgraph(scopes: VariableScopes, target: VariableScope): VariableScope {
  return target === 'thread' && scopes.subgraph.length > 0 ? 'subgraph' : target;
}

/**
 * Pushes a fresh frame onto the loop or subgraph stack, seeded with `initial` (deep-copied) and the
 * declared variables of that scope that have an initial value.
 */
export function pushScope(
  scopes: VariableScopes,
  kind: StackScope,
  initial: Variables = {},
  declarations: readonly VariableDeclaration[] = [],
): Variables {
  const frame: Variables = {};
  for (const declaration of declarations) {
    if (declaredScope(declaration) === kind) initialiseDeclared(frame, declaration, kind);
  }
  for (const [name, value] of Object.entries(initial)) {
    // A subgraph's inputMapping seeds its child's declared variables: their types hold as for any write.
    const declaration = declarations.find((d) => d.name === name && declaredScope(d) === kind);
    if (declaration !== undefined) assertType(name, value, declaration.type, kind);
    defineOwn(frame, name, deepCopy(value));
  }
  scopes[kind].push(frame);
  const marks = scopes.readonlyMarks?.[kind];
  if (marks !== undefined) {
    // One mark list per frame, the new frame's empty (padding covers hand-built scopes).
    const depth = scopes[kind].length;
    marks.length = Math.min(marks.length, depth - 1);
    while (marks.length < depth) marks.push([]);
  }
  return frame;
}

/** Pops the innermost loop or subgraph frame (and its readonly marks) and returns it. */
export function popScope(scopes: VariableScopes, kind: StackScope): Variables {
  const frame = scopes[kind].pop();
  if (frame === undefined) {
    throw new StepthreadError('INVALID_VARIABLE', `no ${kind} scope to leave`);
  }
  const marks = scopes.readonlyMarks?.[kind];
  if (marks !== undefined && marks.length > scopes[kind].length) marks.length = scopes[kind].length;
  return frame;
}
