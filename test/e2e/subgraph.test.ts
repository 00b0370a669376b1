/**
 * SUBGRAPH end to end: the child workflow is inlined with prefixed ids, its inputs are mapped in,
 * its subgraph-scope variables stay inside it, and its outputs are mapped back out — twice, from two
 * SUBGRAPH nodes using the same child.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistant, type E2e, plain, startE2e, user } from './helpers.ts';
import { twoSubgraphs } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('subgraph');
});
afterAll(() => e2e.close());

const parent = twoSubgraphs();

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
