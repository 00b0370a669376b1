import { describe, expect, it } from 'vitest';
import { evaluate, evaluateCondition, parseExpression } from '../../../engine/expression/index.ts';
import { expectCoded } from './helpers.ts';

const scope = {
  n: 7,
  zero: 0,
  name: 'Ada',
  empty: '',
  nothing: null,
  flag: true,
  items: [10, 20, 30],
  user: { name: 'Ada', tags: ['admin', 'ops'], address: { city: 'Paris' }, 'odd key': 1 },
  matrix: [
    [1, 2],
    [3, 4],
  ],
  key: 'name',
};

const ev = (source: string, s: Record<string, unknown> = scope) => evaluate(source, s);

describe('literals and identifiers', () => {
  it.each([
    ['42', 42],
    ['3.5', 3.5],
    ['1e3', 1000],
    ['"double"', 'double'],
    ["'single'", 'single'],
    ["'it\\'s'", "it's"],
    ['"a\\nb"', 'a\nb'],
    ['true', true],
    ['false', false],
    ['null', null],
    ['[1, "a", n]', [1, 'a', 7]],
    ['[]', []],
  ])('%s', (source, expected) => {
    expect(ev(source)).toEqual(expected);
  });

  it('reads own scope properties; unknown names are undefined', () => {
    expect(ev('n')).toBe(7);
    expect(ev('missing')).toBeUndefined();
    expect(ev('undefined')).toBeUndefined();
  });

  it('does not read inherited scope properties', () => {
    const inherited = Object.create({ secret: 's' }) as Record<string, unknown>;
    expect(ev('secret', inherited)).toBeUndefined();
    expect(ev('toString')).toBeUndefined();
    expect(ev('hasOwnProperty')).toBeUndefined();
  });

  it('accepts a scope without a prototype', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 1 });
    expect(ev('x + 1', bare)).toBe(2);
  });
});

describe('member access', () => {
  it.each([
    ['user.name', 'Ada'],
    ['user["name"]', 'Ada'],
    ["user['odd key']", 1],
    ['user[key]', 'Ada'],
    ['user.address.city', 'Paris'],
    ['user.tags[1]', 'ops'],
    ['items[0]', 10],
    ['items["2"]', 30],
    ['items[n - 5]', 30],
    ['items[3]', undefined],
    ['items[-1]', undefined],
    ['items.length', 3],
    ['name.length', 3],
    ['name[0]', 'A'],
    ['matrix[1][0]', 3],
    ['user?.address?.city', 'Paris'],
    ['items?.[1]', 20],
  ])('%s', (source, expected) => {
    expect(ev(source)).toEqual(expected);
  });

  it('gives undefined through null or undefined (optional chaining by default)', () => {
    expect(ev('missing.deep.path')).toBeUndefined();
    expect(ev('nothing.x')).toBeUndefined();
    expect(ev('missing[boom.x]')).toBeUndefined();
    expect(ev('user.nope.deeper')).toBeUndefined();
  });

  it('exposes nothing on numbers, booleans and functions, and no methods on strings or arrays', () => {
    expect(ev('n.toFixed')).toBeUndefined();
    expect(ev('flag.valueOf')).toBeUndefined();
    expect(ev('f.name', { f: function named() {} })).toBeUndefined();
    expect(ev('name.toUpperCase')).toBeUndefined();
    expect(ev('items.map')).toBeUndefined();
    expect(ev('user.hasOwnProperty')).toBeUndefined();
  });

  it('rejects computed keys that are not strings or numbers', () => {
    expect(expectCoded(() => ev('user[flag]'), 'EXPRESSION_ERROR').message).toMatch(/string or a number/);
  });
});

describe('operators', () => {
  it.each([
    ['!flag', false],
    ['!!name', true],
    ['!empty', true],
    ['-n', -7],
    ['+n', 7],
    ['n + 3', 10],
    ['n - 10', -3],
    ['n * 2', 14],
    ['n / 2', 3.5],
    ['n % 4', 3],
    ['name + "!"', 'Ada!'],
    ['"n=" + n', 'n=7'],
    ['"v:" + nothing', 'v:'],
    ['"l:" + items', 'l:[10,20,30]'],
    ['"b:" + flag', 'b:true'],
    ['n < 8', true],
    ['n <= 7', true],
    ['n > 7', false],
    ['n >= 7', true],
    ['"a" < "b"', true],
    ['"b" >= "a"', true],
    ['n == 7', true],
    ['n === 7', true],
    ['n == "7"', false],
    ['n != "7"', true],
    ['n !== 7', false],
    ['nothing == missing', false],
    ['missing == missing', true],
    ['flag && name', 'Ada'],
    ['empty && name', ''],
    ['empty || name', 'Ada'],
    ['name || boom', 'Ada'],
    ['zero ?? 5', 0],
    ['nothing ?? 5', 5],
    ['missing ?? "d"', 'd'],
    ['flag ? "yes" : "no"', 'yes'],
    ['zero ? "yes" : "no"', 'no'],
  ])('%s', (source, expected) => {
    expect(ev(source)).toEqual(expected);
  });

  // Sides whose types are known as the expression is parsed are checked then (static-types.ts),
  // so these read a string from the scope: `1 < name` fails only when it runs.
  it('short-circuits: the unevaluated side may be invalid at run time', () => {
    expect(ev('false && (1 < name)')).toBe(false);
    expect(ev('true || (1 < name)')).toBe(true);
    expect(ev('n ?? (1 < name)')).toBe(7);
    expect(ev('true ? 1 : (1 < name)')).toBe(1);
  });

  it.each([
    ['missing + 1', /"\+" expects two numbers or a string, got undefined and number/],
    ['flag + 1', /"\+"/],
    ['items + items', /"\+"/],
    ['name - 1', /"-" expects two numbers, got string and number/],
    ['name * 2', /"\*"/],
    ['n / nothing', /"\/"/],
    ['n % name', /"%"/],
    ['missing > 1', /">" expects two numbers or two strings, got undefined and number/],
    ['name < 2', /"<"/],
    ['-name', /"-" expects a number, got string/],
    // Infinity and NaN would be stored as null: an error where they arise.
    ['n / 0', /7 \/ 0 is Infinity \(division by zero\)/],
    ['0 / 0', /is NaN \(division by zero\)/],
    ['n % 0', /7 % 0 is NaN \(division by zero\)/],
    ['1e308 * 10', /is Infinity, which is not a number/],
    ['1e308 + 1e308', /is Infinity/],
    ['-1e308 - 1e308', /is -Infinity/],
    ['+missing', /"\+" expects a number/],
  ])('%s fails with EXPRESSION_ERROR', (source, message) => {
    const error = expectCoded(() => ev(source), 'EXPRESSION_ERROR');
    expect(error.message).toMatch(message);
    expect(error.message).toContain(JSON.stringify(source));
  });
});

describe('precedence', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['12 / 3 / 2', 2],
    ['2 + 10 % 4', 4],
    ['-2 * 3', -6],
    ['!false == true', true],
    ['1 + 1 == 2 && 3 > 2', true],
    ['false && false || true', true],
    ['true || false && false', true],
    ['1 < 2 == true', true],
    ['false ? 1 : true ? 2 : 3', 2],
    ['n > 5 ? "big" : "small"', 'big'],
    ['nothing ?? 1 + 1', 2],
    ['"a" + 1 + 2', 'a12'],
    ['1 + 2 + "a"', '3a'],
  ])('%s', (source, expected) => {
    expect(ev(source)).toEqual(expected);
  });
});

describe('built-in functions', () => {
  it.each([
    ['len(items)', 3],
    ['len(name)', 3],
    ['len(user)', 4],
    ['len(missing)', 0],
    ['lower("AbC")', 'abc'],
    ['upper(name)', 'ADA'],
    ['trim("  x  ")', 'x'],
    ['lower(missing)', ''],
    ['contains(name, "d")', true],
    ['contains(name, "z")', false],
    ['contains(items, 20)', true],
    ['contains(items, "20")', false],
    ['contains(user.tags, "ops")', true],
    ['contains(missing, "x")', false],
    ['startsWith(name, "Ad")', true],
    ['startsWith(name, "d")', false],
    ['endsWith(name, "da")', true],
    ['endsWith(name, "A")', false],
    ['keys(user.address)', ['city']],
    ['values(user.address)', ['Paris']],
    ['keys(missing)', []],
    ['number("42")', 42],
    ['number(" 2.5 ")', 2.5],
    ['number(true)', 1],
    ['number(n)', 7],
    ['string(n)', '7'],
    ['string(nothing)', ''],
    ['string(items)', '[10,20,30]'],
    ['boolean(empty)', false],
    ['boolean("x")', true],
    ['boolean(zero)', false],
    ['json(user.address)', '{"city":"Paris"}'],
    ['json(missing)', 'null'],
    ['json([1], 2)', '[\n  1\n]'],
    ['parseJson("{\\"a\\":[1,2]}").a[1]', 2],
    ['abs(-3)', 3],
    ['floor(2.7)', 2],
    ['floor(-2.5)', -3],
    ['ceil(2.1)', 3],
    ['round(2.5)', 3],
    ['round(2.4)', 2],
    ['round(1.005, 2)', 1.01],
    ['round(12.34567, 3)', 12.346],
    ['min(3, 1, 2)', 1],
    ['max(3, 1, 2)', 3],
    ['min(items)', 10],
    ['max(items)', 30],
    ['join(user.tags, ", ")', 'admin, ops'],
    ['join(items)', '10,20,30'],
    ['join([1, null, "x"], "-")', '1--x'],
    ['join(missing, "-")', ''],
    ['split("a,b,,c", ",")', ['a', 'b', '', 'c']],
    ['split("héllo", "")', ['h', 'é', 'l', 'l', 'o']],
    ['concat([1], [2, 3], [])', [1, 2, 3]],
    ['concat([[1]], [2])', [[1], 2]],
    ['slice(items, 1)', [20, 30]],
    ['slice(name, 0, 2)', 'Ad'],
    ['slice(items, -1)', [30]],
    // Text arguments read null/undefined as "": an optional text slices as "".
    ['slice(missing, 0, 10)', ''],
    ['slice(nothing, 1)', ''],
    ['slice(null, 0, 2) + "!"', '!'],
    ['replace("a-b-c", "-", "+")', 'a+b+c'],
    ['replace("cost: X", "X", "$&")', 'cost: $&'],
    ['type(items)', 'array'],
    ['type(user)', 'object'],
    ['type(nothing)', 'null'],
    ['type(missing)', 'undefined'],
    ['type(n)', 'number'],
    ['type(name)', 'string'],
    ['type(flag)', 'boolean'],
  ])('%s', (source, expected) => {
    expect(ev(source)).toEqual(expected);
  });

  it('drops prototype-shaped keys from parseJson results', () => {
    const parsed = ev('parseJson(text)', {
      text: '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},"ok":1}',
    }) as Record<string, unknown>;
    expect(parsed).toEqual({ ok: 1 });
    expect(Object.hasOwn(parsed, '__proto__')).toBe(false);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
  });

  it.each([
    ['len(n)', /len\(\) expects a string, array or object as argument 1, got number/],
    ['upper(n)', /upper\(\) expects a string/],
    ['contains(n, 1)', /contains\(\) expects a string or array/],
    ['contains(name, 1)', /argument 2/],
    ['keys(n)', /keys\(\) expects an object or array/],
    ['number("abc")', /cannot convert "abc"/],
    ['number("")', /numeric string/],
    ['number(nothing)', /numeric string/],
    ['json(n, 11)', /indent/],
    ['parseJson("{nope")', /invalid JSON/],
    ['abs(name)', /abs\(\) expects a number/],
    ['round(1.5, 1.5)', /an integer/],
    ['round(1, 16)', /digits/],
    ['min([])', /at least one number/],
    ['max(1, name)', /numbers as argument 2/],
    ['join(name)', /join\(\) expects an array/],
    ['slice(n, 1)', /slice\(\) expects a string or array/],
    ['slice(items, key)', /an integer/],
    ['replace(name, "", "x")', /must not be empty/],
  ])('%s fails with EXPRESSION_ERROR', (source, message) => {
    expect(expectCoded(() => ev(source), 'EXPRESSION_ERROR').message).toMatch(message);
  });

  it('resolves calls to built-ins even when the scope has the same name', () => {
    expect(ev('len(len)', { len: [1, 2] })).toBe(2);
  });
});

describe('evaluate and evaluateCondition', () => {
  it('accepts an already parsed expression', () => {
    const parsed = parseExpression('n * 2');
    expect(evaluate(parsed, { n: 4 })).toBe(8);
    expect(evaluate(parsed, { n: 5 })).toBe(10);
  });

  it('applies JavaScript truthiness', () => {
    expect(evaluateCondition('items', scope)).toBe(true);
    expect(evaluateCondition('[]', scope)).toBe(true);
    expect(evaluateCondition('empty', scope)).toBe(false);
    expect(evaluateCondition('zero', scope)).toBe(false);
    expect(evaluateCondition('missing', scope)).toBe(false);
    expect(evaluateCondition('nothing', scope)).toBe(false);
    expect(evaluateCondition('len(items) > 2 && contains(user.tags, "admin")', scope)).toBe(true);
    expect(evaluateCondition('{{ n > 100 }}', scope)).toBe(false);
  });

  it('throws INVALID_EXPRESSION for a bad source and EXPRESSION_ERROR at run time', () => {
    expectCoded(() => evaluateCondition('n >', scope), 'INVALID_EXPRESSION');
    expectCoded(() => evaluateCondition('n > "x"', scope), 'EXPRESSION_ERROR');
  });

  it('turns a failing host getter into EXPRESSION_ERROR', () => {
    const tricky = {
      get boom(): never {
        throw new Error('host failure');
      },
    };
    expect(expectCoded(() => ev('t.boom', { t: tricky }), 'EXPRESSION_ERROR').message).toMatch(
      /host failure/,
    );
  });
});
