/**
 * SUBGRAPH end to end: the child workflow is inlined with prefixed ids, its inputs are mapped in,
 * its subgraph-scope variables stay inside it, and its outputs are mapped back out — twice, from two
 * SUBGRAPH nodes using the same child.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workflow } from '../../engine/model/schema.ts';
import { assistant, type E2e, plain, startE2e, user, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('subgraph');
});
afterAll(() => e2e.close());

const child: Workflow = {
  id: 'doubler',
  version: 1,
  variables: [
    { name: 'n', type: 'number', scope: 'subgraph' },
    { name: 'doubled', type: 'number', scope: 'subgraph' },
  ],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'double',
      type: 'VARIABLE',
      config: { variableName: 'doubled', variableType: 'number', expression: 'n * 2' },
    },
    { id: 'say', type: 'LLM', config: { prompt: 'Twice {{n}} is {{doubled}}.' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'double' },
    { from: 'double', to: 'say' },
    { from: 'say', to: 'end' },
  ],
};

const parent = valid({
  id: 'subgraphs',
  version: 1,
  variables: [
    { name: 'first', type: 'number', scope: 'thread', initial: 0 },
    { name: 'second', type: 'number', scope: 'thread', initial: 0 },
  ],
  profiles: { default: { provider: 'scripted', responses: ['ok'] } },
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'a',
      type: 'SUBGRAPH',
      config: { workflow: child, inputMapping: { n: 'input.value' }, outputMapping: { first: 'doubled' } },
    },
    {
      id: 'b',
      type: 'SUBGRAPH',
      config: { workflow: child, inputMapping: { n: 'first + 1' }, outputMapping: { second: 'doubled' } },
    },
    {
      id: 'end',
      type: 'END',
      config: { output: { first: '{{first}}', second: '{{second}}', leaked: '{{doubled ?? "none"}}' } },
    },
  ],
  edges: [
    { from: 'start', to: 'a' },
    { from: 'a', to: 'b' },
    { from: 'b', to: 'end' },
  ],
});

describe('SUBGRAPH', () => {
  it('maps inputs in and outputs out, keeps subgraph variables inside, and inlines a child twice', async () => {
    const outcome = await e2e.runtime.prepare(parent).run({ value: 5 });
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({ first: 10, second: 22, leaked: 'none' });
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      user('Twice 5 is 10.'),
      assistant('ok'),
      user('Twice 11 is 22.'),
      assistant('ok'),
    ]);
    // The console shows the inlined nodes under prefixed names.
    const states = new Set(outcome.events.filter((e) => e.type === 'StateEntered').map((e) => e.stateName));
    expect([...states].filter((name) => name?.startsWith('a.') || name?.startsWith('b.')).sort()).toEqual([
      'a.double',
      'a.end',
      'a.say',
      'a.start',
      'b.double',
      'b.end',
      'b.say',
      'b.start',
    ]);
  });
});
