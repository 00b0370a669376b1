/** What a node read when it ran, rendered over the state before its step (the console's node panel). */
import { describe, expect, it } from 'vitest';
import { namesRead, nodeInputOf } from '../../engine/node-input.ts';

const scope = {
  category: 'billing',
  approved: true,
  credit: { amount: 6, currency: 'EUR' },
  input: { ticket: { subject: 'Charged twice', customer: 'Ada', monthlyFee: 30 } },
  nodes: { classify: 'billing', reply: 'Sorry.' },
  thread: { id: 't-1' },
};

describe('nodeInputOf', () => {
  it("renders an LLM node's prompt and lists the values it read", () => {
    const read = nodeInputOf(
      {
        type: 'LLM',
        config: {
          prompt:
            'Write to {{input.ticket.customer}}. Credit granted: {{credit.amount}} {{credit.currency}}.',
          outputVariable: 'category',
        },
      },
      scope,
    );
    expect(read).toEqual({
      rendered: { prompt: 'Write to Ada. Credit granted: 6 EUR.' },
      reads: { input: scope.input, credit: { amount: 6, currency: 'EUR' } },
    });
  });

  it("evaluates a TOOL node's arguments, a CODE node's inputs, a ROUTE's conditions and END's output", () => {
    expect(
      nodeInputOf(
        { type: 'TOOL', config: { toolName: 'tenure', arguments: { who: '{{input.ticket.customer}}' } } },
        scope,
      ).rendered,
    ).toEqual({ arguments: { who: 'Ada' } });
    const code = nodeInputOf(
      { type: 'CODE', config: { code: 'return input.approved', inputs: { fee: 'input.ticket.monthlyFee' } } },
      scope,
    );
    // The code itself is not read for names; its inputs and the variables (by `input`) are.
    expect(code).toEqual({ rendered: { inputs: { fee: 30 } }, reads: { input: scope.input } });
    const route = nodeInputOf(
      {
        type: 'ROUTE',
        config: {
          routes: [{ condition: "contains(lower(category), 'billing')", targetNodeId: 'approve' }],
          defaultTargetNodeId: 'reply',
        },
      },
      scope,
    );
    expect(route.rendered).toEqual({
      routes: [{ targetNodeId: 'approve', condition: "contains(lower(category), 'billing')", value: true }],
    });
    expect(route.reads).toEqual({ category: 'billing' });
    expect(
      nodeInputOf(
        { type: 'END', config: { output: { reply: '{{nodes.reply}}', approved: '{{approved}}' } } },
        scope,
      ),
    ).toEqual({
      rendered: { output: { reply: 'Sorry.', approved: true } },
      reads: { 'nodes.reply': 'Sorry.', approved: true },
    });
  });

  it('says which field did not render, and keeps the rest', () => {
    const read = nodeInputOf(
      { type: 'LLM', config: { systemPrompt: 'Be {{1 +}}', prompt: 'Hi {{input.ticket.customer}}' } },
      scope,
    );
    expect(read.rendered).toEqual({ prompt: 'Hi Ada' });
    expect(Object.keys(read.problems ?? {})).toEqual(['systemPrompt']);
  });

  it('reads names from templates and expression fields, never from plain text or code', () => {
    expect(
      namesRead({
        prompt: 'plain words only',
        code: 'return secretName',
        expression: 'count + 1',
        showMessage: 'Grant {{input.who}} {{nodes["classify"]}}?',
      }),
    ).toEqual(['count', 'input', 'nodes.classify']);
  });
});
