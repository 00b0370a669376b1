import { describe, expect, it } from 'vitest';
import {
  MAX_AST_DEPTH,
  MAX_EXPRESSION_LENGTH,
  parseExpression,
  validateExpression,
} from '../../../engine/expression/index.ts';
import { expectCoded } from './helpers.ts';

describe('parseExpression', () => {
  it('returns the same frozen tree for the same source (cached)', () => {
    const first = parseExpression('a.b + 1');
    expect(parseExpression('a.b + 1')).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.root)).toBe(true);
  });

  it('lists the scope names an expression reads, not property or function names', () => {
    expect(parseExpression('len(items) > limit && user.name == items[0].name').identifiers).toEqual([
      'items',
      'limit',
      'user',
    ]);
  });

  it('normalises == and != to their strict forms', () => {
    expect(parseExpression('a == b').root).toMatchObject({ kind: 'binary', operator: '===' });
    expect(parseExpression('a != b').root).toMatchObject({ kind: 'binary', operator: '!==' });
  });

  it('accepts an expression wrapped in a single {{ }}', () => {
    expect(parseExpression('{{ items }}').root).toEqual({ kind: 'identifier', name: 'items' });
    expect(parseExpression('  {{a + 1}} ').root).toMatchObject({ kind: 'binary', operator: '+' });
  });

  it('reports jsep syntax errors with their position', () => {
    const error = expectCoded(() => parseExpression('a +'), 'INVALID_EXPRESSION');
    expect(error.message).toContain('"a +"');
    expect(error.message).toMatch(/at character 3/);
  });

  it('reports positions relative to the original source when unwrapping {{ }}', () => {
    const error = expectCoded(() => parseExpression('{{ a + }}'), 'INVALID_EXPRESSION');
    expect(error.message).toMatch(/at character 7/);
  });

  it.each([
    ['', /empty/],
    ['a; b', /one expression/],
    ['(a, b)', /comma/],
    ['a ** 2', /"\*\*" is not supported/],
    ['a & b', /"&" is not supported/],
    ['~a', /"~" is not supported/],
    ['a << 1', /not supported/],
    ['[1,,2]', /holes/],
    ['{a: 1}', /Unexpected/],
    ['a = 1', /Unexpected/],
    ['/x/', /Unexpected/],
    ['nope(1)', /unknown function "nope"/],
    ['a.lower()', /method calls/],
    ['len(1)(2)', /only built-in functions/],
    ['len()', /len\(value\) takes 1 argument/],
    ['min()', /at least 1/],
    ['round(1, 2, 3)', /1 to 2/],
    ['a[true]', /string or a number/],
    ['"unterminated', /Unclosed quote/],
  ])('rejects %j', (source, message) => {
    const error = expectCoded(() => parseExpression(source), 'INVALID_EXPRESSION');
    expect(error.message).toMatch(message);
  });

  // What Jinja, Python or JavaScript write, refused with how this language writes it.
  it.each([
    ['a and b', /"and" is written &&/],
    ['a or b', /"or" is written \|\|/],
    ['not a', /"not x" is written !x/],
    ['not(a)', /unknown function "not"; "not x" is written !x/],
    ["'b' in tags", /"a in b" is written contains\(b, a\)/],
    ['x is none', /"is" is written ==/],
    ["x if ok else 'y'", /"a if c else b" is written c \? a : b/],
    ['typeof x', /"typeof x" is written type\(x\)/],
    ['len(x) > 0 and ok', /"and" is written &&/],
    ['x.toUpperCase()', /method calls are not supported; use the built-in upper\(text\)/],
    ['x.length()', /use the built-in len\(value\)/],
    ['x.includes("a")', /use the built-in contains\(textOrArray, item\)/],
    ['JSON.stringify(x)', /use the built-in json\(value, indent\?\)/],
    ['length(x)', /unknown function "length"; use the built-in len\(value\)/],
    ['int(x)', /unknown function "int"; use the built-in number\(value\)/],
    ['Upper(x)', /unknown function "Upper"; use the built-in upper\(text\)/],
    ['x | upper', /x \| upper is written upper\(x\)/],
    ['x | length', /x \| length is written len\(x\)/],
    ["x | default('none')", /x \| default\(v\) is written x \?\? v/],
    ['x | first', /filters \(x \| f\) are not supported/],
  ])('refuses %j saying how it is written here', (source, message) => {
    const error = expectCoded(() => parseExpression(source), 'INVALID_EXPRESSION');
    expect(error.message).toMatch(message);
  });

  it('keeps the plain message where no keyword or filter is to blame', () => {
    expect(expectCoded(() => parseExpression('a b'), 'INVALID_EXPRESSION').message).toMatch(
      /found 2; ";" and keywords/,
    );
    expect(expectCoded(() => parseExpression('n | 1'), 'INVALID_EXPRESSION').message).toMatch(
      /operator "\|" is not supported"?$/,
    );
    expect(expectCoded(() => parseExpression('nope(1)'), 'INVALID_EXPRESSION').message).toMatch(
      /unknown function "nope"$/,
    );
  });

  // Arrays compare by identity, and one the expression builds is new: such a comparison never varies.
  it.each([
    ['tags == []', /never equal to another value, so == \(and ===\) is always false/],
    ['[] === tags', /always false/],
    ['tags != []', /so != \(and !==\) is always true/],
    ["split(text, ',') == ['a', 'b']", /always false/],
    ['keys(user) == []', /always false/],
  ])(
    'refuses %j, which compares with an array it builds, pointing to len and contains',
    (source, message) => {
      const error = expectCoded(() => parseExpression(source), 'INVALID_EXPRESSION');
      expect(error.message).toMatch(message);
      expect(error.message).toMatch(/len\(x\) == 0.*contains\(x, item\)/);
    },
  );

  it('still compares arrays read from the scope, and array items', () => {
    expect(() => parseExpression('tags == other')).not.toThrow();
    expect(() => parseExpression("tags[0] == 'a'")).not.toThrow();
    expect(() => parseExpression('len(tags) == 0')).not.toThrow();
    expect(() => parseExpression("slice(text, 1) == 'bc'")).not.toThrow();
  });

  // `==` is strict: a number and a string (a boolean and a string, …) are never equal.
  it.each([
    [
      "len(tags) == '0'",
      /a number is never equal to a string .*so == \(and ===\) is always false: write len\(tags\) == 0, or/,
    ],
    [
      "'true' === contains(tags, 'a')",
      /a string is never equal to a boolean .*always false: convert one side/,
    ],
    [
      'upper(name) != 5',
      /a string is never equal to a number .*so != \(and !==\) is always true: write upper\(name\) != '5', or/,
    ],
    ['type(x) == 1', /a string is never equal to a number/],
  ])('refuses %j, which compares values of two different types, saying what to write', (source, message) => {
    const error = expectCoded(() => parseExpression(source), 'INVALID_EXPRESSION');
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/convert one side first, as in number\(x\) == 30 or string\(x\) == '30'$/);
  });

  it('still compares values that may be anything, null, or of the same type', () => {
    for (const source of [
      "x == '30'",
      'len(x) == null',
      "type(x) == 'number'",
      'len(x) == len(y)',
      "x.fee != 'a'",
    ]) {
      expect(() => parseExpression(source)).not.toThrow();
    }
  });

  it('says an expression field takes one expression when it is given text with templates, as a prompt is written', () => {
    for (const source of ['Hello {{input.name}}', '{{ fee }} > 1', '{{a}} && {{b}}']) {
      const error = expectCoded(() => parseExpression(source), 'INVALID_EXPRESSION');
      expect(error.message).toMatch(
        /at character \d+; an expression is one expression, not text with \{\{ \}\} in it: join text with \+ \('Hello ' \+ input\.name\), or wrap the whole expression in one \{\{ \}\}$/,
      );
    }
    expect(expectCoded(() => parseExpression('a +'), 'INVALID_EXPRESSION').message).not.toMatch(/one \{\{/);
  });

  it('enforces the length limit', () => {
    const long = `a${' '.repeat(MAX_EXPRESSION_LENGTH)}`;
    expect(expectCoded(() => parseExpression(long), 'INVALID_EXPRESSION').message).toMatch(
      /longer than 4096/,
    );
    expect(() => parseExpression(`a${' '.repeat(MAX_EXPRESSION_LENGTH - 1)}`)).not.toThrow();
  });

  it('enforces the depth limit for brackets, operator chains and ternaries', () => {
    const ok = `${'('.repeat(MAX_AST_DEPTH - 2)}1${')'.repeat(MAX_AST_DEPTH - 2)}`;
    expect(() => parseExpression(ok)).not.toThrow();
    const brackets = `${'('.repeat(MAX_AST_DEPTH + 1)}1${')'.repeat(MAX_AST_DEPTH + 1)}`;
    expect(expectCoded(() => parseExpression(brackets), 'INVALID_EXPRESSION').message).toMatch(
      /nested deeper/,
    );
    const chain = Array.from({ length: 200 }, (_, i) => `x${i}`).join(' + ');
    expect(expectCoded(() => parseExpression(chain), 'INVALID_EXPRESSION').message).toMatch(/nested deeper/);
    const unary = `${'!'.repeat(1000)}a`;
    expect(expectCoded(() => parseExpression(unary), 'INVALID_EXPRESSION').message).toMatch(/nested deeper/);
  });

  it('rejects a non-string source', () => {
    expectCoded(() => parseExpression(42 as unknown as string), 'INVALID_EXPRESSION');
  });
});

describe('validateExpression', () => {
  it('returns undefined for a valid expression', () => {
    expect(validateExpression('x > 1 ? "big" : "small"')).toBeUndefined();
  });

  it('returns a coded error instead of throwing', () => {
    expect(validateExpression('x >')).toMatchObject({ code: 'INVALID_EXPRESSION' });
    expect(validateExpression('process.exit()')).toMatchObject({
      code: 'INVALID_EXPRESSION',
      message: expect.stringMatching(/method calls/),
    });
  });
});
