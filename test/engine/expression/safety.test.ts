import { afterEach, describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import {
  evaluate,
  MAX_ARRAY_LENGTH,
  MAX_STRING_LENGTH,
  renderTemplate,
} from '../../../engine/expression/index.ts';
import { expectCoded } from './helpers.ts';

const objectPrototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
const arrayPrototypeKeys = Object.getOwnPropertyNames(Array.prototype).sort();

function makeScope(): Record<string, unknown> {
  return { a: { b: 1 }, items: [1, 2], name: 'x', k: '__proto__', fn: () => 'called' };
}

afterEach(() => {
  // Nothing an expression does may reach shared prototypes.
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(([] as unknown as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(objectPrototypeKeys);
  expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(arrayPrototypeKeys);
});

describe('rejected when parsing (INVALID_EXPRESSION)', () => {
  it.each([
    "constructor.constructor('return process')()",
    "a.constructor.constructor('return process')()",
    'a.__proto__',
    "a['__proto__']",
    'a["constructor"]',
    'a.prototype',
    '__proto__',
    'constructor',
    "items['__proto__'].polluted",
    'this',
    'this.process',
    'new X()',
    'new Function("return 1")',
    'a = 1',
    'a.b = 1',
    'a += 1',
    'a++',
    'delete a.b',
    'void 0',
    'typeof a',
    "'x' in a",
    'a => a',
    '/a+/.test(name)',
    '`template \u0024{a}`',
    'eval("1")',
    'Function("return this")()',
    'require("fs")',
    'import("fs")',
    'fn()',
    '(fn)()',
    '[fn][0]()',
    'name.toString()',
    'toString()',
    'hasOwnProperty("a")',
    'items.map(len)',
    'a; process',
  ])('%s', (source) => {
    expectCoded(() => evaluate(source, makeScope()), 'INVALID_EXPRESSION');
  });

  it('rejects a 10,000-deep nesting without overflowing the stack', () => {
    const parens = `${'('.repeat(10_000)}1${')'.repeat(10_000)}`;
    expectCoded(() => evaluate(parens, {}), 'INVALID_EXPRESSION');
    const arrays = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    expectCoded(() => evaluate(arrays, {}), 'INVALID_EXPRESSION');
    const negations = `${'!'.repeat(4000)}a`;
    expectCoded(() => evaluate(negations, { a: 1 }), 'INVALID_EXPRESSION');
    const ternaries = `${'a ? 1 : '.repeat(500)}0`;
    expectCoded(() => evaluate(ternaries, { a: 1 }), 'INVALID_EXPRESSION');
  });

  it('rejects a huge string literal by length', () => {
    expectCoded(() => evaluate(`"${'x'.repeat(100_000)}"`, {}), 'INVALID_EXPRESSION');
  });
});

describe('rejected or undefined when evaluating', () => {
  it.each([
    "a['constr' + 'uctor']",
    "a['__pro' + 'to__']",
    'a[k]',
    "name['constr' + 'uctor']",
    "items['proto' + 'type']",
    "a[k]['polluted']",
  ])('%s → EXPRESSION_ERROR', (source) => {
    expectCoded(() => evaluate(source, makeScope()), 'EXPRESSION_ERROR');
  });

  it('rejects keys built from escapes or arrays', () => {
    expectCoded(() => evaluate('a[["__proto__"]]', makeScope()), 'EXPRESSION_ERROR');
    // jsep has no \x or \u escapes, so these stay harmless literal text.
    expect(evaluate('a["\\x5f_proto__"]', makeScope())).toBeUndefined();
  });

  it.each([
    'process',
    'globalThis',
    'global',
    'window',
    'require',
    'module',
    'Function',
    'Object',
    'undefined',
  ])('%s is just an unknown name → undefined', (source) => {
    expect(evaluate(source, makeScope())).toBeUndefined();
  });

  it('never calls a function from the scope', () => {
    let called = false;
    const scope = {
      fn: () => {
        called = true;
      },
    };
    expect(evaluate('fn', scope)).toBe(scope.fn);
    expect(evaluate('fn.name', scope)).toBeUndefined();
    expect(evaluate('fn.call', scope)).toBeUndefined();
    expectCoded(() => evaluate('fn(1)', scope), 'INVALID_EXPRESSION');
    expect(called).toBe(false);
  });

  it('does not run getters that live on a prototype', () => {
    let touched = false;
    class Host {
      get secret(): string {
        touched = true;
        return 's';
      }
    }
    expect(evaluate('h.secret', { h: new Host() })).toBeUndefined();
    expect(renderTemplate('{{ h.secret }}', { h: new Host() })).toBeUndefined();
    expect(touched).toBe(false);
  });

  it('keeps prototype pollution through data out of the host', () => {
    const payload = JSON.parse(
      '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}',
    );
    const scope = { p: payload, text: JSON.stringify(payload) };
    expectCoded(() => evaluate('p.__proto__.polluted', scope), 'INVALID_EXPRESSION');
    expectCoded(() => evaluate('p[k].polluted', { ...scope, k: '__proto__' }), 'EXPRESSION_ERROR');
    const parsed = evaluate('parseJson(text)', scope);
    expect(parsed).toEqual({});
    const rendered = renderTemplate({ x: '{{ p }}', y: '{{ parseJson(text) }}' }, scope);
    // A naive merge of the results must not reach Object.prototype either.
    Object.assign({}, (rendered as { y: object }).y);
  });
});

describe('size limits', () => {
  const half = 'x'.repeat(MAX_STRING_LENGTH / 2 + 1);

  it('caps concatenation', () => {
    const error = expectCoded(() => evaluate('s + s', { s: half }), 'EXPRESSION_ERROR');
    expect(error.message).toMatch(/limit is 1048576/);
    expect(evaluate('s + "!"', { s: 'x'.repeat(1000) })).toHaveLength(1001);
  });

  it('caps the strings built-ins produce', () => {
    expectCoded(() => evaluate('join([s, s], "")', { s: half }), 'EXPRESSION_ERROR');
    expectCoded(() => evaluate('replace(s, "x", "yy")', { s: half }), 'EXPRESSION_ERROR');
    expectCoded(() => evaluate('json([s, s])', { s: half }), 'EXPRESSION_ERROR');
    expectCoded(() => evaluate('string([s, s])', { s: half }), 'EXPRESSION_ERROR');
    expectCoded(() => evaluate('upper(s)', { s: 'x'.repeat(MAX_STRING_LENGTH + 1) }), 'EXPRESSION_ERROR');
  });

  it('caps split', () => {
    const many = ','.repeat(MAX_ARRAY_LENGTH);
    expect(expectCoded(() => evaluate('split(s, ",")', { s: many }), 'EXPRESSION_ERROR').message).toMatch(
      /more than 100000 parts/,
    );
    expectCoded(() => evaluate('split(s, "")', { s: 'x'.repeat(MAX_ARRAY_LENGTH + 1) }), 'EXPRESSION_ERROR');
    expect(evaluate('len(split(s, ","))', { s: ','.repeat(MAX_ARRAY_LENGTH - 1) })).toBe(MAX_ARRAY_LENGTH);
  });

  it('fails cleanly on cyclic data converted to text', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const error = expectCoded(() => evaluate('"x" + c', { c: cyclic }), 'EXPRESSION_ERROR');
    expect(error).toBeInstanceOf(StepthreadError);
  });
});
