import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import { evaluate, renderString } from '../../../engine/expression/index.ts';

/** An arithmetic expression as source text plus the value plain JavaScript computes for it. */
interface Arith {
  source: string;
  value: number;
}

const VARIABLES = ['x', 'y', 'z'] as const;
type Vars = Record<(typeof VARIABLES)[number], number>;

function arithmetic(vars: Vars): fc.Arbitrary<Arith> {
  const { tree } = fc.letrec<{ tree: Arith }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true, maxDepth: 6 },
      fc.integer({ min: 0, max: 1000 }).map((n) => ({ source: String(n), value: n })),
      fc.constantFrom(...VARIABLES).map((name) => ({ source: name, value: vars[name] })),
      tie('tree').map((t) => ({ source: `-(${t.source})`, value: -t.value })),
      fc.tuple(tie('tree'), fc.constantFrom('+', '-', '*', '/', '%'), tie('tree')).map(([l, op, r]) => ({
        source: `(${l.source} ${op} ${r.source})`,
        value: reference(op, l.value, r.value),
      })),
      // Unparenthesised chains exercise precedence and left associativity.
      fc
        .tuple(
          tie('tree'),
          fc.constantFrom('+', '-'),
          tie('tree'),
          fc.constantFrom('*', '/', '%'),
          tie('tree'),
        )
        .map(([a, op1, b, op2, c]) => ({
          source: `(${a.source} ${op1} ${b.source} ${op2} ${c.source})`,
          value: reference(op1, a.value, reference(op2, b.value, c.value)),
        })),
    ),
  }));
  return tree;
}

/** JavaScript's result, or NaN once any step is not a finite number (an EXPRESSION_ERROR there). */
function reference(op: string, a: number, b: number): number {
  const result = op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : op === '/' ? a / b : a % b;
  return Number.isFinite(result) ? result : Number.NaN;
}

const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();

describe('properties', () => {
  afterAll(() => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('random arithmetic agrees with JavaScript', () => {
    const vars = fc.record({
      x: fc.double({ noNaN: true, min: -1e6, max: 1e6 }),
      y: fc.integer({ min: -50, max: 50 }),
      z: fc.constantFrom(0, -0, 0.5, 3),
    });
    fc.assert(
      fc.property(
        vars.chain((v) => fc.tuple(fc.constant(v), arithmetic(v))),
        ([v, expr]) => {
          if (Number.isNaN(expr.value)) {
            expect(() => evaluate(expr.source, v)).toThrowError(
              expect.objectContaining({ code: 'EXPRESSION_ERROR' }),
            );
          } else {
            expect(evaluate(expr.source, v)).toBe(expr.value);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('random token soup either evaluates or fails with a coded error', () => {
    const token = fc.constantFrom(
      'a',
      'b',
      'items',
      'fn',
      'len',
      'lower',
      '.',
      '[',
      ']',
      '(',
      ')',
      ',',
      '?',
      ':',
      '!',
      '+',
      '-',
      '*',
      '==',
      '&&',
      '||',
      '??',
      '"x"',
      "'__proto__'",
      '1',
      '0',
      ' ',
      'constructor',
      '__proto__',
      'prototype',
      'this',
      'new',
      '=',
      '{',
      '}',
      'process',
      'polluted',
      '?.',
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 24 }), (tokens) => {
        const source = tokens.join('');
        const scope = { a: { b: [1, 'two'] }, items: [1, 2, 3], fn: () => ({ polluted: true }) };
        try {
          evaluate(source, scope);
        } catch (error) {
          expect(error).toBeInstanceOf(StepthreadError);
          expect(['INVALID_EXPRESSION', 'EXPRESSION_ERROR']).toContain((error as StepthreadError).code);
        }
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('text without "{{" renders unchanged', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !s.includes('{{')),
        (text) => {
          expect(renderString(text, {})).toBe(text);
        },
      ),
    );
  });
});
