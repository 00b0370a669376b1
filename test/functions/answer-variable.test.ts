/**
 * The check that an interaction's answer fits the variable it is stored in: what a question keeps of
 * its outputVariable's declaration, why a value does not fit, and `answerFor` / `resolutionOf`
 * refusing such an answer with INVALID_INTERACTION_ANSWER (not INVALID_VARIABLE at the write).
 */
import { describe, expect, it } from 'vitest';
import { answerVariableOf, answerVariableProblem } from '../../engine/model/interaction-reply.ts';
import type { TaskNode } from '../../functions/handlers/task.ts';
import { answerFor, resolutionOf } from '../../functions/nodes/user-interaction.ts';

const count = { name: 'count', type: 'number' } as const;

describe('answerVariableOf', () => {
  it('keeps the declared type of the outputVariable, innermost declaration first', () => {
    expect(
      answerVariableOf('count', [
        { name: 'count', type: 'number', scope: 'subgraph' },
        { name: 'count', type: 'string' },
      ]),
    ).toEqual(count);
  });

  it('is undefined when any answer fits: no outputVariable, undeclared, untyped or any', () => {
    expect(answerVariableOf(undefined, [{ name: 'count', type: 'number' }])).toBeUndefined();
    expect(answerVariableOf('count', [])).toBeUndefined();
    expect(answerVariableOf('count', undefined)).toBeUndefined();
    expect(answerVariableOf('count', [{ name: 'count' }])).toBeUndefined();
    expect(answerVariableOf('count', [{ name: 'count', type: 'any' }])).toBeUndefined();
  });
});

describe('answerVariableProblem', () => {
  it.each([
    ['number', 42],
    ['string', 'lots'],
    ['boolean', false],
    ['array', []],
    ['object', { a: 1 }],
  ] as const)('a %s variable takes %j', (type, value) => {
    expect(answerVariableProblem({ name: 'v', type }, value)).toBeUndefined();
  });

  it.each([
    ['number', 'lots', 'must be a number; got "lots" (string)'],
    ['number', '42', 'must be a number; got "42" (string)'],
    ['number', null, 'must be a number; got null (null)'],
    ['string', 42, 'must be a string; got 42 (number)'],
    ['object', [1], 'must be an object; got [1] (array)'],
    ['array', { a: 1 }, 'must be an array; got {"a":1} (object)'],
  ] as const)('a %s variable refuses %j, naming the variable and its type', (type, value, why) => {
    expect(answerVariableProblem({ name: 'v', type }, value)).toBe(
      `the answer is stored in variable "v", declared ${type}, so it ${why}`,
    );
  });

  it('quotes a large answer cut short', () => {
    const problem = answerVariableProblem(count, 'x'.repeat(10_000));
    expect(problem).toContain(`got "${'x'.repeat(76)}... (string)`);
    expect(problem!.length).toBeLessThan(200);
  });

  it('any value fits no declared type', () => {
    expect(answerVariableProblem(undefined, 'lots')).toBeUndefined();
  });
});

describe('answerFor', () => {
  const question = { nodeId: 'ask', interactionType: 'ask_for_input', answerVariable: count } as const;

  it('refuses an input its variable does not take with INVALID_INTERACTION_ANSWER', () => {
    expect(() => answerFor(question, { kind: 'input', value: 'lots' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_INTERACTION_ANSWER',
        nodeId: 'ask',
        message:
          'node ask (ask_for_input): the answer is stored in variable "count", declared number, so it must be a number; got "lots" (string)',
      }),
    );
    expect(answerFor(question, { kind: 'input', value: 42 })).toEqual({ kind: 'input', value: 42 });
  });

  it('takes any input for a question that keeps no variable (asked before it was kept, or any)', () => {
    const { answerVariable: _none, ...plain } = question;
    expect(answerFor(plain, { kind: 'input', value: 'lots' })).toEqual({ kind: 'input', value: 'lots' });
  });
});

describe('resolutionOf (the answer Task, whatever sent the task result)', () => {
  const node = {
    id: 'ask',
    type: 'USER_INTERACTION',
    config: { userInteractionType: 'ask_for_input', outputVariable: 'count' },
    variables: [{ name: 'count', type: 'number' }],
  } as unknown as TaskNode;
  const config = { userInteractionType: 'ask_for_input', outputVariable: 'count' } as const;
  const envelope = (value: unknown) =>
    ({ answer: { reply: { kind: 'input', value } } }) as unknown as Parameters<typeof resolutionOf>[2];

  it('fails the node with INVALID_INTERACTION_ANSWER for an answer its variable does not take', () => {
    expect(resolutionOf(node, config, envelope('lots'))).toEqual({
      outcome: 'FAILED',
      code: 'INVALID_INTERACTION_ANSWER',
      reason:
        'node ask (ask_for_input): the answer is stored in variable "count", declared number, so it must be a number; got "lots" (string)',
    });
    expect(resolutionOf(node, config, envelope(7))).toEqual({
      outcome: 'ANSWERED',
      answer: { kind: 'input', value: 7 },
    });
  });
});
