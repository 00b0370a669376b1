/**
 * Strings count characters (code points) everywhere in the expression language, as a LOOP_START over a
 * string iterates them: an emoji or any character outside the Basic Multilingual Plane is one
 * character, and no function cuts a surrogate pair in half (which would produce invalid text).
 */
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../engine/expression/index.ts';
import { loopItems } from '../../../functions/nodes/loop.ts';

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
