import { describe, expect, it } from 'vitest';
import { evaluate, incrementForm } from '../../../engine/expression/index.ts';

describe('incrementForm', () => {
  it.each([
    ['done + 1', 1],
    ['1 + done', 1],
    ['{{done + step}}', 5],
    ['done - cost', -3],
    ['done + len(items)', 2],
  ])('%s adds to done', (source, delta) => {
    const form = incrementForm(source, 'done')!;
    expect(form).toBeDefined();
    const addend = evaluate(form.addend, { step: 5, cost: 3, items: [1, 2] }) as number;
    expect(form.negate ? -addend : addend).toBe(delta);
  });

  it.each([
    'done * 2',
    'done * 1 + 1',
    '1 - done',
    'done + done',
    'done + max(done, 1)',
    'other + 1',
    'done',
    'concat(done, [1])',
    'done +',
  ])('%s is not an increment of done', (source) => {
    expect(incrementForm(source, 'done')).toBeUndefined();
  });
});
