/**
 * Strings count characters (code points) everywhere in the expression language, as a LOOP_START over a
 * string iterates them: an emoji or any character outside the Basic Multilingual Plane is one
 * character, and no function cuts a surrogate pair in half (which would produce invalid text).
 */
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../engine/expression/index.ts';
import { loopItems } from '../../../functions/nodes/loop.ts';
import { generator } from '../../support/seeded-random.ts';

const text = 'a😀b𝄞c';
const high = '\uD83D';
const low = '\uDE00';
const scope = { text, flag: '🇫🇷', high, low, lone: `x${high}y` };

describe('strings count characters, as a LOOP over a string does', () => {
  it('len, length and indices count an emoji once, like the loop', () => {
    const iterations = loopItems(text, 'each') as unknown[];
    expect(iterations).toHaveLength(5);
    expect(evaluate('len(text)', scope)).toBe(5);
    expect(evaluate('text.length', scope)).toBe(5);
    expect(evaluate('[text[0], text[1], text[2], text[3], text[4], text[5]]', scope)).toEqual([
      ...iterations,
      undefined,
    ]);
    // A flag is two code points (regional indicators), as the loop sees it.
    expect(evaluate('len(flag)', scope)).toBe((loopItems('🇫🇷', 'each') as unknown[]).length);
  });

  it.each([
    ['slice(text, 0, 2)', 'a😀'],
    ['slice(text, 1, 2)', '😀'],
    ['slice(text, 2)', 'b𝄞c'],
    ['slice(text, -2)', '𝄞c'],
    ['slice(text, -4, -2)', '😀b'],
    ['slice(text, 3, 1)', ''],
    ['slice(text, 10)', ''],
    ['slice(text, -10, 1)', 'a'],
    ['slice("plain", 1, 3)', 'la'],
  ])('%s is %s, never half a pair', (source, expected) => {
    const result = evaluate(source, scope) as string;
    expect(result).toBe(expected);
    expect(result).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });

  it('a lone surrogate in the data matches only itself, never half of a pair', () => {
    expect(evaluate('contains(text, high)', scope)).toBe(false);
    expect(evaluate('contains(text, low)', scope)).toBe(false);
    expect(evaluate('contains(lone, high)', scope)).toBe(true);
    expect(evaluate('startsWith("😀", high)', scope)).toBe(false);
    expect(evaluate('endsWith("😀", low)', scope)).toBe(false);
    expect(evaluate('startsWith("😀x", "😀")', scope)).toBe(true);
    expect(evaluate('endsWith("x😀", "😀")', scope)).toBe(true);
    expect(evaluate('split("😀x😀", high)', scope)).toEqual(['😀x😀']);
    expect(evaluate('split("😀x😀", "x")', scope)).toEqual(['😀', '😀']);
    expect(evaluate('replace("😀", low, "!")', scope)).toBe('😀');
    expect(evaluate('replace(lone, high, "!")', scope)).toBe('x!y');
    expect(evaluate('split("a😀b", "")', scope)).toEqual(['a', '😀', 'b']);
  });

  it('a lone surrogate counts as one character', () => {
    expect(evaluate('len(lone)', scope)).toBe(3);
    expect(evaluate('slice(lone, 1, 2)', scope)).toBe(high);
  });

  it('upper and lower keep astral characters whole', () => {
    // U+10428 DESERET SMALL LETTER LONG I uppercases to U+10400.
    expect(evaluate('upper("𐐨x")', scope)).toBe('𐐀X');
    expect(evaluate('len(upper("𐐨x"))', scope)).toBe(2);
    expect(evaluate('lower("𐐀X")', scope)).toBe('𐐨x');
  });

  it('the head of a 20 MB text with emoji is cheap; len of it is within budget', () => {
    const big = { report: `😀${'r'.repeat(20 * 1024 * 1024)}` };
    expect(evaluate('slice(report, 0, 3)', big)).toBe('😀rr');
    expect(evaluate('len(report)', big)).toBe(20 * 1024 * 1024 + 1);
    // Counting is charged: many counts of it end with a coded error, not a stalled Lambda.
    const counts = `[${Array.from({ length: 20 }, () => 'len(report)').join(',')}]`;
    expect(() => evaluate(counts, big)).toThrowError(
      expect.objectContaining({ code: 'EXPRESSION_BUDGET_EXCEEDED' }),
    );
  });
});

/**
 * The searches as the language means them, by the `u` flag's whole-character matching: how they ran
 * before (issue 31 item 3), which took 63 s over 4M lone surrogates with a 2,000-character query.
 */
const escaped = (needle: string) => needle.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
const reference = {
  contains: (text: string, needle: string) => needle === '' || new RegExp(escaped(needle), 'u').test(text),
  split: (text: string, needle: string) => text.split(new RegExp(escaped(needle), 'u')),
  replace: (text: string, needle: string, by: string) =>
    text.split(new RegExp(escaped(needle), 'u')).join(by),
};

describe('contains, split and replace search in linear time, on whole characters', () => {
  const random = generator(20261128);
  const alphabet = ['a', 'b', high, low, '😀'];
  const textOf = (length: number) => Array.from({ length }, () => alphabet[random(alphabet.length)]).join('');
  /** A piece of `text` (a needle that occurs) or, half the time, one changed at one place. */
  const needleFrom = (text: string, length: number) => {
    const from = random(Math.max(1, text.length - length));
    const piece = text.slice(from, from + length);
    if (random(2) === 0 || piece === '') return piece;
    const at = random(piece.length);
    return piece.slice(0, at) + alphabet[random(alphabet.length)] + piece.slice(at + 1);
  };

  it('agrees with whole-character matching on short and long needles (over 250 units: searched here)', () => {
    const cases: [string, string][] = [];
    for (let i = 0; i < 400; i += 1) {
      const text = textOf(1 + random(40));
      cases.push([text, needleFrom(text, 1 + random(4))]);
    }
    for (let i = 0; i < 60; i += 1) {
      // Few distinct units, so a long needle nearly matches in many places.
      const text = Array.from({ length: 900 }, () => [high, low, 'a'][random(random(4) === 0 ? 3 : 2)]).join(
        '',
      );
      cases.push([text, needleFrom(text, 251 + random(60))]);
    }
    // Matches that overlap, that all cut a pair, and the shape (a near match everywhere).
    cases.push(
      ['a'.repeat(1000), 'a'.repeat(300)],
      [low.repeat(700), low.repeat(300)],
      [`${high}${low}`.repeat(400), low + `${high}${low}`.repeat(150)],
      [`x${high}${low}`.repeat(300), `${high}${low}x`.repeat(90) + high],
      [low.repeat(2000), `${low.repeat(299)}x`],
    );
    for (const [text, needle] of cases) {
      if (needle === '') continue;
      const scope = { text, needle };
      expect(evaluate('contains(text, needle)', scope)).toBe(reference.contains(text, needle));
      expect(evaluate('split(text, needle)', scope)).toEqual(reference.split(text, needle));
      expect(evaluate("replace(text, needle, '|')", scope)).toBe(reference.replace(text, needle, '|'));
    }
  });
});
