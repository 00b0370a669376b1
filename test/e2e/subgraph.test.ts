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

  it('starts each SUBGRAPH node under its own id as its child starts, and completes it as the child ends', async () => {
    const outcome = await e2e.runtime.prepare(parent).run({ value: 5 });
    expect(outcome.status).toBe('COMPLETED');
    const { events } = await e2e.runtime.stores.threads.readJournal(outcome.threadId);
    const lifecycle = events.flatMap((event) =>
      event.type.startsWith('NODE_') && 'nodeId' in event ? [`${event.type} ${event.nodeId}`] : [],
    );
    expect(lifecycle.filter((line) => / a(\.|$)/.test(line))).toEqual([
      'NODE_STARTED a',
      'NODE_STARTED a.start',
      'NODE_COMPLETED a.start',
      'NODE_STARTED a.double',
      'NODE_COMPLETED a.double',
      'NODE_STARTED a.say',
      'NODE_COMPLETED a.say',
      'NODE_STARTED a.end',
      'NODE_COMPLETED a.end',
      'NODE_COMPLETED a',
    ]);
    expect(lifecycle.indexOf('NODE_COMPLETED a')).toBeLessThan(lifecycle.indexOf('NODE_STARTED b'));
    const ofB = events.filter((event) => 'nodeId' in event && event.nodeId === 'b');
    // As any node's events: a type, the node's type and status, no values (its output is `{{nodes.b}}`).
    expect(ofB.map(({ at: _at, ...event }) => event)).toEqual([
      {
        type: 'NODE_STARTED',
        threadId: outcome.threadId,
        workflowId: 'subgraphs',
        nodeId: 'b',
        nodeType: 'SUBGRAPH',
      },
      {
        type: 'NODE_COMPLETED',
        threadId: outcome.threadId,
        workflowId: 'subgraphs',
        nodeId: 'b',
        nodeType: 'SUBGRAPH',
        status: 'COMPLETED',
      },
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
    // Each SUBGRAPH fails under its own id right after the node inside it, innermost first, its
    // AFTER hooks before its NODE_FAILED as for any node.
    const ends = events.flatMap((event) =>
      event.type === 'NODE_FAILED' || event.type === 'HOOK_TRIGGERED'
        ? [`${event.type} ${event.nodeId}${event.type === 'NODE_FAILED' ? ` ${event.error.code}` : ''}`]
        : [],
    );
    expect(ends).toEqual([
      'NODE_FAILED out.in.boom CODE_ERROR',
      'HOOK_TRIGGERED out.in',
      'NODE_FAILED out.in CODE_ERROR',
      'HOOK_TRIGGERED out',
      'NODE_FAILED out CODE_ERROR',
    ]);
    const started = events.flatMap((event) => (event.type === 'NODE_STARTED' ? [event.nodeId] : []));
    expect(started).toEqual(['start', 'out', 'out.start', 'out.in', 'out.in.start', 'out.in.boom']);
  });
});
