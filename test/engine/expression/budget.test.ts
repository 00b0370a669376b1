/**
 * Work budgets (issue 14 item 5): an expression, or a template with all its `{{ }}`, that would do more
 * than MAX_EVALUATION_WORK units ends with EXPRESSION_BUDGET_EXCEEDED; work that does not grow with the
 * data (len of a 5 MB string) costs nothing extra. Timings are in bench/expressions.ts.
 */
import { describe, expect, it } from 'vitest';
import { evaluate, renderString, renderTemplate } from '../../../engine/expression/index.ts';
import { MAX_EXPRESSION_LENGTH } from '../../../engine/expression/limits.ts';

const MB = 1024 * 1024;
const scope = {
  s: 'a'.repeat(MB - 1),
  doc: 'd'.repeat(5 * MB),
  items: Array.from({ length: 90_000 }, (_, i) => i),
};

/** A valid expression under the length limit doing ~150 replaces of a 1 MB string. */
const hostile = `[${Array.from({ length: 150 }, () => "len(replace(s,'a','b'))").join(',')}]`;

describe('expression budgets', () => {
  it('ends an expression doing too much work with EXPRESSION_BUDGET_EXCEEDED', () => {
    expect(hostile.length).toBeLessThanOrEqual(MAX_EXPRESSION_LENGTH);
    expect(() => evaluate(hostile, scope)).toThrowError(
      expect.objectContaining({ code: 'EXPRESSION_BUDGET_EXCEEDED' }),
    );
    const arrays = `[${Array.from({ length: 150 }, () => 'len(concat(items,[1]))').join(',')}]`;
    expect(() => evaluate(arrays, scope)).toThrowError(
      expect.objectContaining({ code: 'EXPRESSION_BUDGET_EXCEEDED' }),
    );
  });

  it('charges slice for what it returns: the head of a 20 MB value is cheap, copying it whole is not', () => {
    const big = { report: 'r'.repeat(20 * MB) };
    expect(evaluate("slice(report, 0, 10) + '…'", big)).toBe('rrrrrrrrrr…');
    const copies = `[${Array.from({ length: 150 }, () => 'len(slice(s, 1))').join(',')}]`;
    expect(() => evaluate(copies, scope)).toThrowError(
      expect.objectContaining({ code: 'EXPRESSION_BUDGET_EXCEEDED' }),
    );
  });

  it('lets ordinary work on large values through', () => {
    const cheap = `[${Array.from({ length: 150 }, () => 'len(doc)').join(',')}]`;
    expect(evaluate(cheap, scope)).toEqual(Array(150).fill(5 * MB));
    expect(evaluate("len(replace(s,'a','b'))", scope)).toBe(MB - 1);
  });

  it('shares one budget across every {{ }} of a template render', () => {
    const prompt = Array.from({ length: 40 }, () => "{{ len(replace(s, 'a', 'b')) }}").join(' ');
    expect(() => renderString(prompt, scope)).toThrowError(
      expect.objectContaining({ code: 'EXPRESSION_BUDGET_EXCEEDED' }),
    );
    const output = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`k${i}`, "{{ len(replace(s, 'a', 'b')) }}"]),
    );
    expect(() => renderTemplate(output, scope)).toThrowError(
      expect.objectContaining({ code: 'EXPRESSION_BUDGET_EXCEEDED' }),
    );
    // Each alone is fine.
    expect(renderTemplate({ k: "{{ len(replace(s, 'a', 'b')) }}" }, scope)).toEqual({ k: MB - 1 });
  });
});
