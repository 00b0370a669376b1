import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import type { VariableDeclaration } from '../../../engine/model/schema.ts';
import type { VariableScopes } from '../../../engine/thread/types.ts';
import {
  getVariable,
  initialScopes,
  popScope,
  pushScope,
  resolveVariable,
  setVariable,
  variableView,
} from '../../../engine/thread/variables.ts';
import { workflow } from './fixtures.ts';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof StepthreadError) return error.code;
    throw error;
  }
  return undefined;
}

function layered(): VariableScopes {
  return {
    global: { x: 'global', g: 1 },
    thread: { x: 'thread', t: 2 },
    subgraph: [
      { x: 'outer-subgraph', s0: true },
      { x: 'subgraph', s: 3 },
    ],
    loop: [
      { x: 'outer-loop', l0: true },
      { x: 'loop', l: 4 },
    ],
  };
}

describe('initialScopes', () => {
  it('puts declared global and thread variables in their scopes with deep-copied initial values', () => {
    const declarations = workflow.variables!;
    const scopes = initialScopes(declarations);
    expect(scopes.global).toEqual({ settings: { mode: 'fast' } });
    expect(scopes.thread).toEqual({ ticket: { tags: ['a'] }, count: 0 });
    expect(scopes.subgraph).toEqual([]);
    expect(scopes.loop).toEqual([]);
    (scopes.thread.ticket as { tags: string[] }).tags.push('b');
    expect(declarations[1]!.initial).toEqual({ tags: ['a'] });
  });

  it('rejects an initial value that does not fit its declared type', () => {
    expect(codeOf(() => initialScopes([{ name: 'n', type: 'number', initial: 'one' }]))).toBe(
      'INVALID_VARIABLE',
    );
  });
});

describe('lookup', () => {
  it('resolves innermost first: top loop frame, top subgraph frame, thread, global', () => {
    const scopes = layered();
    expect(resolveVariable(scopes, 'x')).toEqual({ scope: 'loop', value: 'loop' });
    scopes.loop.pop();
    scopes.loop.pop();
    expect(resolveVariable(scopes, 'x')).toEqual({ scope: 'subgraph', value: 'subgraph' });
    scopes.subgraph = [];
    expect(getVariable(scopes, 'x')).toBe('thread');
    scopes.thread = {};
    expect(getVariable(scopes, 'x')).toBe('global');
    expect(resolveVariable(scopes, 'missing')).toBeUndefined();
  });

  it('sees every loop frame (a nested loop reads the outer item) and every subgraph frame (a nested SUBGRAPH reads its caller’s)', () => {
    const scopes = layered();
    expect(getVariable(scopes, 'l0')).toBe(true);
    expect(resolveVariable(scopes, 'l0')?.scope).toBe('loop');
    expect(resolveVariable(scopes, 's0')).toEqual({ scope: 'subgraph', value: true });
  });

  it('does not resolve inherited object properties', () => {
    expect(resolveVariable(layered(), 'toString')).toBeUndefined();
  });

  it('variableView flattens the visible variables with inner scopes shadowing outer ones', () => {
    expect(variableView(layered())).toEqual({ x: 'loop', g: 1, t: 2, s: 3, s0: true, l: 4, l0: true });
  });
});

describe('setVariable', () => {
  const declarations: VariableDeclaration[] = [
    { name: 'count', type: 'number', initial: 0 },
    { name: 'owner', type: 'string', readonly: true },
    { name: 'config', scope: 'global', type: 'object', readonly: true, initial: {} },
    { name: 'item', scope: 'loop' },
  ];

  it('writes to the declared scope by default and reports the change', () => {
    const scopes = initialScopes(declarations);
    const change = setVariable(scopes, 'count', 5, undefined, declarations);
    expect(scopes.thread.count).toBe(5);
    expect(change).toEqual({ name: 'count', scope: 'thread', previous: 0, value: 5 });
  });

  it('writes an undeclared variable where it already lives, else in the thread scope', () => {
    const scopes = { ...layered(), subgraph: [] };
    setVariable(scopes, 'g', 10, undefined);
    expect(scopes.global.g).toBe(10);
    setVariable(scopes, 'fresh', 'new', undefined);
    expect(scopes.thread.fresh).toBe('new');
  });

  it("inside a subgraph, writes what would go to the caller's thread scope to the subgraph's frame", () => {
    const scopes = layered();
    setVariable(scopes, 'fresh', 'new', undefined);
    setVariable(scopes, 't', 20, undefined);
    setVariable(scopes, 'explicit', 1, 'thread');
    expect(scopes.thread).toEqual({ x: 'thread', t: 2 });
    expect(scopes.subgraph[1]).toEqual({ x: 'subgraph', s: 3, fresh: 'new', t: 20, explicit: 1 });
    expect(getVariable(scopes, 't')).toBe(20);
    // Global is shared with the caller, as everywhere.
    setVariable(scopes, 'g', 10, undefined);
    expect(scopes.global.g).toBe(10);
  });

  it('writes an explicit scope, the top frame for stacks', () => {
    const scopes = layered();
    setVariable(scopes, 'x', 'changed', 'subgraph');
    expect(scopes.subgraph[1]!.x).toBe('changed');
    expect(scopes.subgraph[0]!.x).toBe('outer-subgraph');
  });

  it('says which number a number variable was given when it is not finite (1/0, 0/0)', () => {
    const scopes = initialScopes([]);
    for (const [value, shown] of [
      [Number.POSITIVE_INFINITY, 'Infinity'],
      [Number.NaN, 'NaN'],
    ] as const) {
      expect(() => setVariable(scopes, 'n', value, 'thread', [], { type: 'number' })).toThrow(
        `variable "n" (thread) is declared number but was given ${shown}, not a finite number`,
      );
    }
  });

  it('rejects a value of the wrong declared type, leaving the old value', () => {
    const scopes = initialScopes(declarations);
    expect(codeOf(() => setVariable(scopes, 'count', '5', undefined, declarations))).toBe('INVALID_VARIABLE');
    expect(scopes.thread.count).toBe(0);
  });

  it('checks the type a VARIABLE node declares', () => {
    const scopes = initialScopes([]);
    expect(codeOf(() => setVariable(scopes, 'flag', 1, 'thread', [], { type: 'boolean' }))).toBe(
      'INVALID_VARIABLE',
    );
    expect(codeOf(() => setVariable(scopes, 'list', {}, 'thread', [], { type: 'array' }))).toBe(
      'INVALID_VARIABLE',
    );
    expect(codeOf(() => setVariable(scopes, 'obj', [], 'thread', [], { type: 'object' }))).toBe(
      'INVALID_VARIABLE',
    );
    expect(codeOf(() => setVariable(scopes, 'obj', null, 'thread', [], { type: 'object' }))).toBe(
      'INVALID_VARIABLE',
    );
    expect(codeOf(() => setVariable(scopes, 'n', Number.NaN, 'thread', [], { type: 'number' }))).toBe(
      'INVALID_VARIABLE',
    );
    setVariable(scopes, 'anything', [1], 'thread', [], { type: 'any' });
    expect(scopes.thread.anything).toEqual([1]);
  });

  it('lets a declared-readonly variable be set once, then rejects further writes', () => {
    const scopes = initialScopes(declarations);
    setVariable(scopes, 'owner', 'ana', undefined, declarations);
    expect(codeOf(() => setVariable(scopes, 'owner', 'bob', undefined, declarations))).toBe(
      'READONLY_VARIABLE',
    );
    expect(scopes.thread.owner).toBe('ana');
    expect(codeOf(() => setVariable(scopes, 'config', {}, 'global', declarations))).toBe('READONLY_VARIABLE');
  });

  it('honours a readonly mark left by an earlier VARIABLE node', () => {
    const scopes = initialScopes([]);
    setVariable(scopes, 'limit', 3, 'thread', [], { readonly: true });
    expect(codeOf(() => setVariable(scopes, 'limit', 4, 'thread'))).toBe('READONLY_VARIABLE');
    // The mark is per scope: a loop variable of the same name is a different variable.
    pushScope(scopes, 'loop');
    setVariable(scopes, 'limit', 9, 'loop');
    expect(getVariable(scopes, 'limit')).toBe(9);
  });

  it('drops a frame’s readonly marks when the frame is popped', () => {
    const scopes = initialScopes([]);
    pushScope(scopes, 'loop');
    setVariable(scopes, 'acc', 1, 'loop', [], { readonly: true });
    expect(codeOf(() => setVariable(scopes, 'acc', 2, 'loop'))).toBe('READONLY_VARIABLE');
    popScope(scopes, 'loop');
    pushScope(scopes, 'loop');
    setVariable(scopes, 'acc', 1, 'loop');
    setVariable(scopes, 'acc', 2, 'loop');
    expect(getVariable(scopes, 'acc')).toBe(2);
  });

  it('fails with INVALID_VARIABLE when the stack scope has no frame', () => {
    expect(codeOf(() => setVariable(initialScopes([]), 'item', 1, 'loop'))).toBe('INVALID_VARIABLE');
    expect(codeOf(() => setVariable(initialScopes([]), 'item', 1, undefined, declarations))).toBe(
      'INVALID_VARIABLE',
    );
  });

  it('stores a variable named __proto__ as data', () => {
    const scopes = initialScopes([]);
    setVariable(scopes, '__proto__', { polluted: true }, 'thread');
    expect(Object.getPrototypeOf(scopes.thread)).toBe(Object.prototype);
    expect(variableView(scopes).polluted).toBeUndefined();
    expect(Object.hasOwn(variableView(scopes), '__proto__')).toBe(true);
  });
});

describe('pushScope / popScope', () => {
  it('pushes a frame seeded with deep copies and declared defaults, and pops it', () => {
    const scopes = initialScopes([]);
    const items = { list: [1, 2] };
    pushScope(scopes, 'loop', { index: 0, data: items }, [
      { name: 'item', scope: 'loop', initial: null },
      { name: 'notLoop', scope: 'thread', initial: 1 },
    ]);
    expect(scopes.loop).toEqual([{ item: null, index: 0, data: { list: [1, 2] } }]);
    (scopes.loop[0]!.data as { list: number[] }).list.push(3);
    expect(items.list).toEqual([1, 2]);
    pushScope(scopes, 'subgraph', { a: 1 });
    expect(variableView(scopes)).toMatchObject({ a: 1, index: 0 });
    expect(popScope(scopes, 'loop')).toMatchObject({ index: 0 });
    expect(scopes.loop).toEqual([]);
    expect(popScope(scopes, 'subgraph')).toEqual({ a: 1 });
  });

  it('rejects popping an empty stack', () => {
    expect(codeOf(() => popScope(initialScopes([]), 'subgraph'))).toBe('INVALID_VARIABLE');
  });
});
