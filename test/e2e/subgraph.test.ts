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

  it("keeps a child's VARIABLE writes inside it, whatever their scope but global, so only outputMapping reaches the caller", async () => {
    const chain = (id: string, middle: Array<Record<string, unknown>>, end: Record<string, unknown> = {}) => {
      const nodes = [{ id: 'start', type: 'START' }, ...middle, { id: 'end', type: 'END', ...end }];
      return {
        id,
        version: 1,
        nodes,
        edges: nodes.slice(1).map((n, i) => ({ from: nodes[i]!.id, to: n.id })),
      };
    };
    const set = (id: string, name: string, expression: string, scope?: string) => ({
      id,
      type: 'VARIABLE',
      config: { variableName: name, variableType: 'string', expression, ...(scope ? { scope } : {}) },
    });
    const child = chain('child', [
      set('fresh', 'fresh', "'from child'"),
      set('explicit', 'explicit', "'from child'", 'thread'),
      set('shadow', 'draft', "draft + ' edited'"),
      set('shared', 'note', "'from child'", 'global'),
    ]);
    const workflow = {
      ...chain(
        'isolation',
        [{ id: 'sg', type: 'SUBGRAPH', config: { workflow: child, outputMapping: { edited: 'draft' } } }],
        {
          config: {
            output: {
              draft: '{{draft}}',
              edited: '{{edited}}',
              fresh: "{{fresh ?? 'unset'}}",
              explicit: "{{explicit ?? 'unset'}}",
              note: '{{note}}',
            },
          },
        },
      ),
      variables: [
        { name: 'draft', type: 'string', scope: 'thread', initial: 'hello' },
        { name: 'note', type: 'string', scope: 'global', initial: 'caller' },
      ],
    };
    const outcome = await e2e.runtime.prepare(workflow as never).run({});
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({
      draft: 'hello',
      edited: 'hello edited',
      fresh: 'unset',
      explicit: 'unset',
      note: 'from child',
    });
  });

  it("runs a SUBGRAPH's AFTER_EXECUTE hooks when a node inside it fails, as for any failed node, outermost last", async () => {
    const afterHook = (eventName: string) => ({
      hookType: 'AFTER_EXECUTE',
      eventName,
      eventPayload: { status: '{{result.status}}', code: '{{result.error.code}}' },
    });
    const failing = {
      id: 'inner',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'boom', type: 'CODE', config: { code: "throw new Error('boom')" } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'boom' },
        { from: 'boom', to: 'end' },
      ],
    };
    const middle = {
      id: 'middle',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'in', type: 'SUBGRAPH', hooks: [afterHook('inner-after')], config: { workflow: failing } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'in' },
        { from: 'in', to: 'end' },
      ],
    };
    const workflow = {
      id: 'hooks-around-failure',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'out', type: 'SUBGRAPH', hooks: [afterHook('outer-after')], config: { workflow: middle } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'out' },
        { from: 'out', to: 'end' },
      ],
    };
    const outcome = await e2e.runtime.prepare(workflow as never).run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'CODE_ERROR', nodeId: 'out.in.boom' });
    const { events } = await e2e.runtime.stores.threads.readJournal(outcome.threadId);
    const hooks = events.flatMap((event) =>
      event.type === 'HOOK_TRIGGERED' ? [[event.nodeId, event.eventName, event.payload]] : [],
    );
    expect(hooks).toEqual([
      ['out.in', 'inner-after', { status: 'FAILED', code: 'CODE_ERROR' }],
      ['out', 'outer-after', { status: 'FAILED', code: 'CODE_ERROR' }],
    ]);
  });
});
