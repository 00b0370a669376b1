/**
 * Seeds 000 (scopes and conversations on FORK/JOIN), 001 (the FORK/JOIN contract) and 002 (thread
 * copy), case by case on the embedded runtime: the cases a checker would derive from each sentence
 * and that the other e2e files do not already run (nested forks, forks inside a loop and a
 * SUBGRAPH, the four variable scopes, every threshold around `threshold`, `timeout` 0 and > 0, copy
 * of a copy, of a failed and of a waiting thread, and a copy's independence both ways).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Thread } from '../../engine/thread/types.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { assistant, type E2e, plain, startE2e, user, valid } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, model] = await Promise.all([startE2e('seed-audit-fork'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), model.close()]);
});

async function threadsOf(executionId: string): Promise<Thread[]> {
  return (await e2e.runtime.stores.threads.listThreadsOfExecution(executionId)).map((entry) => entry.thread);
}

const branchOf = (threads: Thread[], path: string) =>
  threads.filter((thread) => thread.contextData.authorForkPathId === path);

describe('seed 000 §3: the four variable scopes on a fork', () => {
  // Serial, so b runs after a and sees what a left in the shared scope (and not in its own).
  const scopes = valid({
    id: 'audit-scopes',
    version: 1,
    variables: [
      { name: 'g', type: 'number', scope: 'global', initial: 0 },
      { name: 't', type: 'array', scope: 'thread', initial: [0] },
    ],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'serial', childNodeIds: ['a-t', 'b-saw'] },
      },
      {
        id: 'a-t',
        type: 'VARIABLE',
        config: { variableName: 't', variableType: 'array', expression: 'concat(t, [1])' },
      },
      {
        id: 'a-g',
        type: 'VARIABLE',
        config: { variableName: 'g', variableType: 'number', expression: 'g + 10' },
      },
      {
        id: 'b-saw',
        type: 'VARIABLE',
        config: { variableName: 'saw', variableType: 'array', expression: '[g, t]' },
      },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      { id: 'end', type: 'END', config: { output: { g: '{{g}}', t: '{{t}}', merged: '{{nodes.merge}}' } } },
    ],
    edges: [
      { from: 'start', to: 'split' },
      { from: 'a-t', to: 'a-g' },
      { from: 'a-g', to: 'merge' },
      { from: 'b-saw', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  });

  it("globals are shared (a's write seen by b and the parent); thread variables are each child's own copy", async () => {
    const outcome = await e2e.runtime.prepare(scopes).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      g: 10,
      // a's change to its thread copy reached neither the parent nor its sibling.
      t: [0],
      merged: { a: 10, b: [10, [0]] },
    });
    const threads = await threadsOf(outcome.executionId);
    const [a] = branchOf(threads, 'a');
    const [b] = branchOf(threads, 'b');
    expect(a?.variables.thread.t).toEqual([0, 1]);
    expect(b?.variables.thread.t).toEqual([0]);
    expect(b?.variables.thread.saw).toEqual([10, [0]]);
    // The join merges outputs, never thread variables: the parent has no `saw`.
    const root = await e2e.thread(outcome.threadId);
    expect(root.variables.thread.saw).toBeUndefined();
    expect(root.variables.global.g).toBe(10);
  });

  // A fork inside a loop: each iteration forks and joins again; the children start with empty loop
  // (and subgraph) scopes, so the loop's iteration variable and index are not theirs; the parent,
  // after the join, is still in its iteration.
  const inLoop = valid({
    id: 'audit-fork-in-loop',
    version: 1,
    variables: [
      { name: 'acc', type: 'array', scope: 'thread', initial: [] },
      { name: 'cur', type: 'number', scope: 'thread', initial: 0 },
      // Starts at 5 in every iteration.
      { name: 'lv', type: 'number', scope: 'loop', initial: 5 },
    ],
    profiles: { default: { provider: 'scripted', responses: ['r1', 'r2', 'r3', 'r4'] } },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'ls',
        type: 'LOOP_START',
        config: { loopId: 'L', dataSource: [1, 2], iterationVariable: 'it', maxIterations: 5 },
      },
      // The documented way to hand a branch the current item: a thread variable, set before the FORK.
      {
        id: 'keep',
        type: 'VARIABLE',
        config: { variableName: 'cur', variableType: 'number', expression: 'it' },
      },
      {
        id: 'bump',
        type: 'VARIABLE',
        config: { variableName: 'lv', variableType: 'number', expression: 'lv + it' },
      },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a1', 'b1'] },
      },
      {
        id: 'a1',
        type: 'VARIABLE',
        config: {
          variableName: 'seen',
          variableType: 'array',
          expression: "[it ?? 'none', index ?? 'none', lv ?? 'none', cur]",
        },
      },
      { id: 'b1', type: 'LLM', config: { prompt: 'b {{cur}}' } },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'b' },
      },
      {
        id: 'rec',
        type: 'VARIABLE',
        config: {
          variableName: 'acc',
          variableType: 'array',
          expression: 'concat(acc, [[it, index, lv, nodes.merge.a]])',
        },
      },
      { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
      { id: 'end', type: 'END', config: { output: { acc: '{{acc}}' } } },
    ],
    edges: [
      { from: 'start', to: 'ls' },
      { from: 'ls', to: 'keep' },
      { from: 'keep', to: 'bump' },
      { from: 'bump', to: 'split' },
      { from: 'a1', to: 'merge' },
      { from: 'b1', to: 'merge' },
      { from: 'merge', to: 'rec' },
      { from: 'rec', to: 'le' },
      { from: 'le', to: 'end' },
    ],
  });

  it('a fork inside a loop forks and joins once per iteration; children start with empty loop scopes', async () => {
    const outcome = await e2e.runtime.prepare(inLoop).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      acc: [
        [1, 0, 6, ['none', 'none', 'none', 1]],
        [2, 1, 7, ['none', 'none', 'none', 2]],
      ],
    });
    const threads = await threadsOf(outcome.executionId);
    expect(branchOf(threads, 'a')).toHaveLength(2);
    expect(branchOf(threads, 'b')).toHaveLength(2);
    for (const child of branchOf(threads, 'a')) {
      expect(child.variables.loop).toEqual([]);
      expect(child.variables.subgraph).toEqual([]);
    }
    // The main path b's conversation is restored at each join, so the parent holds both iterations'.
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      user('b 1'),
      expect.objectContaining({ role: 'assistant' }),
      user('b 2'),
      expect.objectContaining({ role: 'assistant' }),
    ]);
  });
});

describe('loop-scope variables: fresh in each iteration, in a SUBGRAPH too', () => {
  it('a declared loop variable starts from its initial value in every iteration', async () => {
    const inner = {
      id: 'inner-loop',
      version: 1,
      variables: [
        { name: 'sum', type: 'array', scope: 'subgraph', initial: [] },
        { name: 'lv', type: 'number', scope: 'loop', initial: 100 },
      ],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ls', type: 'LOOP_START', config: { loopId: 'L', dataSource: [1, 2, 3], maxIterations: 5 } },
        {
          id: 'bump',
          type: 'VARIABLE',
          config: { variableName: 'lv', variableType: 'number', expression: 'lv + item' },
        },
        {
          id: 'rec',
          type: 'VARIABLE',
          config: { variableName: 'sum', variableType: 'array', expression: 'concat(sum, [lv])' },
        },
        { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'ls' },
        { from: 'ls', to: 'bump' },
        { from: 'bump', to: 'rec' },
        { from: 'rec', to: 'le' },
        { from: 'le', to: 'end' },
      ],
    };
    const workflow = valid({
      id: 'audit-loop-scope',
      version: 1,
      variables: [{ name: 'out', type: 'any', scope: 'thread' }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'sub', type: 'SUBGRAPH', config: { workflow: inner, outputMapping: { out: 'sum' } } },
        { id: 'end', type: 'END', config: { output: '{{out}}' } },
      ],
      edges: [
        { from: 'start', to: 'sub' },
        { from: 'sub', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual([101, 102, 103]);
  });
});

describe('a fork inside a SUBGRAPH, with the same path ids as a top-level fork', () => {
  const inner = {
    id: 'inner',
    version: 1,
    variables: [{ name: 'n', type: 'number', scope: 'subgraph' }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a-work', 'b-work'] },
      },
      { id: 'a-work', type: 'LLM', config: { prompt: "inner a {{n ?? 'none'}}" } },
      { id: 'b-work', type: 'LLM', config: { prompt: 'inner b' } },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'b' },
      },
      {
        id: 'twice',
        type: 'VARIABLE',
        config: { variableName: 'n2', variableType: 'number', expression: 'n * 2', scope: 'subgraph' },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'split' },
      { from: 'a-work', to: 'merge' },
      { from: 'b-work', to: 'merge' },
      { from: 'merge', to: 'twice' },
      { from: 'twice', to: 'end' },
    ],
  };
  const outer = valid({
    id: 'audit-fork-in-subgraph',
    version: 1,
    variables: [{ name: 'out', type: 'number', scope: 'thread', initial: 0 }],
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          'sub.a-work': ['inner a reply'],
          'sub.b-work': ['inner b reply'],
          'a-top': ['top a'],
          'b-top': ['top b'],
        },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'sub',
        type: 'SUBGRAPH',
        config: { workflow: inner, inputMapping: { n: 'input.n' }, outputMapping: { out: 'n2' } },
      },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a-top', 'b-top'] },
      },
      { id: 'a-top', type: 'LLM', config: { prompt: 'top a' } },
      { id: 'b-top', type: 'LLM', config: { prompt: 'top b' } },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      {
        id: 'end',
        type: 'END',
        config: { output: { out: '{{out}}', inner: '{{nodes["sub.merge"]}}', top: '{{nodes.merge}}' } },
      },
    ],
    edges: [
      { from: 'start', to: 'sub' },
      { from: 'sub', to: 'split' },
      { from: 'a-top', to: 'merge' },
      { from: 'b-top', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  });

  it('runs both forks; path ids are made globally unique; the branch does not see subgraph variables', async () => {
    const outcome = await e2e.runtime.prepare(outer).run({ n: 4 });
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      out: 8,
      inner: { a: 'inner a reply', b: 'inner b reply' },
      top: { a: 'top a', b: 'top b' },
    });
    const threads = await threadsOf(outcome.executionId);
    const runtimeIds = threads.flatMap((thread) => thread.contextData.forkPathId ?? []).sort();
    expect(runtimeIds).toEqual(['split/a', 'split/b', 'sub.split/a', 'sub.split/b']);
    const innerA = threads.find((thread) => thread.contextData.forkPathId === 'sub.split/a');
    expect(plain(await e2e.runtime.conversationOf(innerA!))).toEqual([
      user('inner a none'),
      assistant('inner a reply'),
    ]);
    // Inner join restored b (its mainPathId), the outer join a (forkPathIds[0]).
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      user('inner b'),
      assistant('inner b reply'),
      user('top a'),
      assistant('top a'),
    ]);
  });
});

describe('a branch has no subgraph scope to write to (seed 000 §3: emptied in children)', () => {
  it('setting a subgraph variable in a branch fails that branch with INVALID_VARIABLE, saying why', async () => {
    const inner = {
      id: 'inner-write',
      version: 1,
      variables: [{ name: 'w', type: 'any', scope: 'subgraph' }],
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['a', 'b'], forkStrategy: 'serial', childNodeIds: ['a1', 'b1'] },
        },
        {
          id: 'a1',
          type: 'VARIABLE',
          config: { variableName: 'w', variableType: 'any', expression: "'from a'", scope: 'subgraph' },
        },
        { id: 'b1', type: 'VARIABLE', config: { variableName: 'x', variableType: 'any', expression: '1' } },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['a', 'b'], joinStrategy: 'ANY_FAILED' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'split' },
        { from: 'a1', to: 'merge' },
        { from: 'b1', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    };
    const workflow = valid({
      id: 'audit-branch-subgraph-write',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'sub', type: 'SUBGRAPH', config: { workflow: inner } },
        { id: 'end', type: 'END', config: { output: '{{nodes["sub.merge"]}}' } },
      ],
      edges: [
        { from: 'start', to: 'sub' },
        { from: 'sub', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    // ANY_FAILED: a's failure wins the join, which still waits for b and merges its output (one, so
    // not keyed).
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toBe(1);
    const [a] = branchOf(await threadsOf(outcome.executionId), 'a');
    expect(a?.status).toBe('FAILED');
    expect(a?.errors.at(-1)).toMatchObject({ code: 'INVALID_VARIABLE', nodeId: 'sub.a1' });
    expect(a?.errors.at(-1)?.message).toMatch(
      /no subgraph scope is active \(a FORK's branches start with empty/,
    );
  });
});

describe('nested forks', () => {
  const nested = valid({
    id: 'audit-nested',
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          intro: ['intro reply'],
          'x-work': ['x reply'],
          'i-work': ['i reply'],
          'j-work': ['j reply'],
          'x-after': ['x after reply'],
          'y-work': ['y reply'],
        },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'intro', type: 'LLM', config: { prompt: 'intro prompt' } },
      {
        id: 'outer',
        type: 'FORK',
        config: { forkPathIds: ['x', 'y'], forkStrategy: 'parallel', childNodeIds: ['x-work', 'y-work'] },
      },
      { id: 'x-work', type: 'LLM', config: { prompt: 'x prompt' } },
      {
        id: 'inner',
        type: 'FORK',
        config: { forkPathIds: ['i', 'j'], forkStrategy: 'serial', childNodeIds: ['i-work', 'j-work'] },
      },
      { id: 'i-work', type: 'LLM', config: { prompt: 'i prompt' } },
      { id: 'j-work', type: 'LLM', config: { prompt: 'j prompt' } },
      {
        id: 'inner-merge',
        type: 'JOIN',
        config: { forkPathIds: ['i', 'j'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'j' },
      },
      { id: 'x-after', type: 'LLM', config: { prompt: 'x after prompt' } },
      { id: 'y-work', type: 'LLM', config: { prompt: 'y prompt' } },
      {
        id: 'outer-merge',
        type: 'JOIN',
        config: { forkPathIds: ['x', 'y'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      {
        id: 'end',
        type: 'END',
        config: { output: { outer: '{{nodes["outer-merge"]}}', inner: '{{nodes["inner-merge"]}}' } },
      },
    ],
    edges: [
      { from: 'start', to: 'intro' },
      { from: 'intro', to: 'outer' },
      { from: 'x-work', to: 'inner' },
      { from: 'i-work', to: 'inner-merge' },
      { from: 'j-work', to: 'inner-merge' },
      { from: 'inner-merge', to: 'x-after' },
      { from: 'x-after', to: 'outer-merge' },
      { from: 'y-work', to: 'outer-merge' },
      { from: 'outer-merge', to: 'end' },
    ],
  });

  it("the inner join restores j's conversation into x, the outer join x's into the root", async () => {
    const outcome = await e2e.runtime.prepare(nested).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      outer: { x: 'x after reply', y: 'y reply' },
      inner: { i: 'i reply', j: 'j reply' },
    });
    const expected = [
      user('intro prompt'),
      assistant('intro reply'),
      user('x prompt'),
      assistant('x reply'),
      user('j prompt'),
      assistant('j reply'),
      user('x after prompt'),
      assistant('x after reply'),
    ];
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual(expected);
    const threads = await threadsOf(outcome.executionId);
    const [x] = branchOf(threads, 'x');
    expect(plain(await e2e.runtime.conversationOf(x!))).toEqual(expected);
    // The inner children are x's children, not the root's.
    for (const child of [...branchOf(threads, 'i'), ...branchOf(threads, 'j')]) {
      expect(child.metadata.parentThreadId).toBe(x!.id);
    }
    const [i] = branchOf(threads, 'i');
    expect(plain(await e2e.runtime.conversationOf(i!))).toEqual([
      ...expected.slice(0, 4),
      user('i prompt'),
      assistant('i reply'),
    ]);
  });
});

describe('seed 001: joinStrategy with mixed outcomes, and the output shape', () => {
  const profiles = { broken: { provider: 'scripted', responses: [] } };
  // a and b complete, c fails (its profile has no reply).
  const mixed = (id: string, join: Record<string, unknown>, strategy: 'parallel' | 'serial' = 'parallel') =>
    forkWorkflow(id, {
      paths: ['a', 'b', 'c'],
      strategy,
      join,
      profiles: { c: 'broken' },
      extraProfiles: profiles,
    });

  for (const [threshold, status] of [
    [1, 'COMPLETED'],
    [2, 'COMPLETED'],
    [3, 'FAILED'],
  ] as const) {
    it(`SUCCESS_COUNT_THRESHOLD ${threshold} with 2 of 3 branches completing: ${status}`, async () => {
      const outcome = await e2e.runtime
        .prepare(
          mixed(`audit-threshold-${threshold}`, { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold }),
        )
        .run();
      expect(outcome.status, JSON.stringify(outcome.error)).toBe(status);
      if (status === 'FAILED') {
        expect(outcome.error).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'merge' });
        expect(outcome.error?.message).toMatch(/threshold 3/);
      } else if (threshold === 2) {
        expect(outcome.output).toEqual({ merged: { a: 'a reply', b: 'b reply' }, after: 'after reply' });
      }
    });
  }

  it('SUCCESS_COUNT_THRESHOLD 1, serial: decided by the first path, whose output is the merge (one child, not keyed)', async () => {
    const outcome = await e2e.runtime
      .prepare(
        mixed('audit-threshold-serial', { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 1 }, 'serial'),
      )
      .run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: 'a reply', after: 'after reply' });
    // b and c never ran.
    const entered = outcome.events.filter((e) => e.type === 'StateEntered').map((e) => e.stateName);
    expect(entered).not.toContain('b-work');
    expect(entered).not.toContain('c-work');
  });

  it('ALL_FAILED with every branch failing completes with an empty merge and the parent’s own conversation', async () => {
    const workflow = forkWorkflow('audit-all-failed', {
      paths: ['a', 'b'],
      join: { joinStrategy: 'ALL_FAILED' },
      profiles: { a: 'broken', b: 'broken' },
      extraProfiles: profiles,
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: {}, after: 'after reply' });
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      user('intro prompt'),
      assistant('intro reply'),
      user('after prompt'),
      assistant('after reply'),
    ]);
  });

  it('ALL_COMPLETED with one failure fails the run with JOIN_FAILED at the JOIN', async () => {
    const outcome = await e2e.runtime.prepare(mixed('audit-all-completed-fails', {})).run();
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'merge' });
  });
});

describe('seed 001: JOIN timeout in seconds', () => {
  const slow = (delayMs: number) => ({ provider: 'scripted', responses: ['b reply'], delayMs });
  /**
   * The join records branch a's arrival before its timer's, however long a takes on this machine: a
   * 1 s timer raced it, and on a slow machine a was not there yet (JOIN_TIMEOUT naming a too, or
   * where a decided the join).
   */
  const aBeforeTimer = () => {
    let arrived: () => void = () => {};
    const aArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    return {
      interceptTask: async (call: { entry: { stateName: string } }, invoke: () => Promise<unknown>) => {
        if (call.entry.stateName === 'merge:timeout') await aArrived;
        try {
          return await invoke();
        } finally {
          // Path a's one node reports the path to the join in its own step.
          if (call.entry.stateName === 'a-work') arrived();
        }
      },
    };
  };

  it('timeout > 0 ends a join whose branch is still running with JOIN_TIMEOUT', async () => {
    const workflow = forkWorkflow('audit-timeout-fires', {
      paths: ['a', 'b'],
      join: { timeout: 1 },
      profiles: { b: 'slow' },
      extraProfiles: { slow: slow(20_000) },
    });
    const outcome = await e2e.runtime.prepare(workflow).run(undefined, aBeforeTimer());
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'JOIN_TIMEOUT', nodeId: 'merge' });
    expect(outcome.error?.message).toContain('timed out after 1s with 1 of 2 branches not finished (b)');
    const [b] = branchOf(await threadsOf(outcome.executionId), 'b');
    expect(b?.status).toBe('CANCELLED');
  });

  it('timeout > 0 ending a join its strategy already won, main path still running: the parent keeps its own conversation', async () => {
    const workflow = forkWorkflow('audit-timeout-main-running', {
      paths: ['a', 'b'],
      join: { joinStrategy: 'ANY_COMPLETED', mainPathId: 'b', timeout: 1 },
      profiles: { b: 'slow' },
      extraProfiles: { slow: slow(20_000) },
    });
    const outcome = await e2e.runtime.prepare(workflow).run(undefined, aBeforeTimer());
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: 'a reply', after: 'after reply' });
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      user('intro prompt'),
      assistant('intro reply'),
      user('after prompt'),
      assistant('after reply'),
    ]);
    const [b] = branchOf(await threadsOf(outcome.executionId), 'b');
    expect(b?.status).toBe('CANCELLED');
  });

  it('timeout > 0 that the branches beat: the join completes as usual', async () => {
    const workflow = forkWorkflow('audit-timeout-beaten', { paths: ['a', 'b'], join: { timeout: 60 } });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: { a: 'a reply', b: 'b reply' }, after: 'after reply' });
  });

  it('timeout 0 waits for a slow branch (no timer)', async () => {
    const workflow = forkWorkflow('audit-timeout-zero', {
      paths: ['a', 'b'],
      join: { timeout: 0 },
      profiles: { b: 'slow' },
      extraProfiles: { slow: slow(1_500) },
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: { a: 'a reply', b: 'b reply' }, after: 'after reply' });
  });

  it('timeout absent defaults to 0: waits for a slow branch', async () => {
    const base = forkWorkflow('audit-timeout-absent', {
      paths: ['a', 'b'],
      profiles: { b: 'slow' },
      extraProfiles: { slow: slow(1_500) },
    });
    const workflow = valid({
      ...base,
      nodes: base.nodes.map((node) =>
        node.type === 'JOIN'
          ? { ...node, config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED' } }
          : node,
      ),
    });
    const outcome = await e2e.runtime.prepare(workflow).run();
    expect(outcome.status, JSON.stringify(outcome.error)).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: { a: 'a reply', b: 'b reply' }, after: 'after reply' });
  });
});

describe('seed 002: thread copy', () => {
  const source = forkWorkflow('audit-copy', {
    paths: ['a', 'b'],
    join: { mainPathId: 'a' },
    fallback: ['again'],
  });

  it('replicates a completed thread: CREATED, new id and start time, no end time, parentThreadId, THREAD_COPIED; data copied', async () => {
    const run = await e2e.runtime.prepare(source).run({ topic: 'x' });
    const before = await e2e.thread(run.threadId);
    const copy = await e2e.runtime.copyThread(run.threadId);
    const stored = await e2e.thread(copy.id);
    expect(stored.id).not.toBe(before.id);
    expect(stored.status).toBe('CREATED');
    expect(stored.endTime).toBeUndefined();
    expect(stored.errors).toEqual([]);
    expect(stored.startTime >= before.startTime).toBe(true);
    expect(stored.workflowId).toBe(before.workflowId);
    expect(stored.workflowVersion).toBe(before.workflowVersion);
    expect(stored.currentNodeId).toBe(before.currentNodeId);
    expect(stored.metadata.parentThreadId).toBe(run.threadId);
    expect(stored.input).toEqual({ topic: 'x' });
    expect(stored.output).toEqual(before.output);
    expect(stored.variables).toEqual(before.variables);
    // Every node result of the source is the copy's too (inspect shows them), read from the source's records.
    const results = await e2e.runtime.stores.threads.readStepResults(copy.id);
    expect(results).toEqual(await e2e.runtime.stores.threads.readStepResults(run.threadId));
    expect(Object.keys(results).sort()).toEqual(['after', 'end', 'intro', 'merge', 'split', 'start']);
    expect(stored.conversation.tokenUsage).toEqual(before.conversation.tokenUsage);
    expect(plain(await e2e.conversation(copy.id))).toEqual(plain(await e2e.conversation(run.threadId)));
    const copied = stored.events?.find((event) => event.type === 'THREAD_COPIED');
    expect(copied).toMatchObject({
      type: 'THREAD_COPIED',
      threadId: copy.id,
      sourceThreadId: run.threadId,
      copyThreadId: copy.id,
      workflowId: 'audit-copy',
    });
    // The execution history stays readable on the copy.
    const history = (await e2e.runtime.stores.threads.readJournal(copy.id)).executionHistory;
    const sourceHistory = (await e2e.runtime.stores.threads.readJournal(run.threadId)).executionHistory;
    expect(history.map((entry) => entry.nodeId)).toEqual(sourceHistory.map((entry) => entry.nodeId));
    expect(await e2e.thread(run.threadId)).toEqual(before);
  });

  it('a copy of a copy; running one changes neither its source nor the other copy', async () => {
    const run = await e2e.runtime.prepare(source).run();
    const sourceBefore = await e2e.thread(run.threadId);
    const sourceConversation = plain(await e2e.conversation(run.threadId));
    const first = await e2e.runtime.copyThread(run.threadId, { fromNodeId: 'after' });
    const second = await e2e.runtime.copyThread(first.id);
    expect(second.metadata.parentThreadId).toBe(first.id);
    expect(second.status).toBe('CREATED');
    const secondBefore = await e2e.thread(second.id);
    const secondConversation = plain(await e2e.conversation(second.id));
    expect(secondConversation).toEqual(sourceConversation.slice(0, -2));
    // A copy from before a node has the output the thread had then: none before its END ran.
    expect(first.output).toBeUndefined();
    expect(second.output).toBeUndefined();

    const rerun = await e2e.runtime.prepare(source, { startNodeId: 'after' }).runThread(first.id);
    expect(rerun.status).toBe('COMPLETED');
    expect(plain(await e2e.conversation(first.id))).toEqual(sourceConversation);
    // Neither the source nor the copy of the copy saw the first copy's new messages or tokens.
    expect(await e2e.thread(run.threadId)).toEqual(sourceBefore);
    expect(await e2e.thread(second.id)).toEqual(secondBefore);
    expect(plain(await e2e.conversation(second.id))).toEqual(secondConversation);

    const again = await e2e.runtime.prepare(source, { startNodeId: 'after' }).runThread(second.id);
    expect(again.status).toBe('COMPLETED');
    expect(again.output).toEqual(run.output);
    expect(await e2e.thread(run.threadId)).toEqual(sourceBefore);
  });

  it("a copy of a fork branch's thread: its own conversation and thread variables, the run's globals as a copy", async () => {
    const run = await e2e.runtime.prepare(forkWorkflow('audit-copy-branch', { paths: ['a', 'b'] })).run();
    const [a] = branchOf(await threadsOf(run.executionId), 'a');
    const copy = await e2e.thread((await e2e.runtime.copyThread(a!.id)).id);
    expect(copy.status).toBe('CREATED');
    expect(copy.metadata.parentThreadId).toBe(a!.id);
    expect(copy.output).toBe('a reply');
    expect(plain(await e2e.conversation(copy.id))).toEqual(plain(await e2e.runtime.conversationOf(a!)));
    expect(copy.conversation.threadId).toBe(copy.id);
    expect(copy.variables.global).toEqual((await e2e.thread(run.threadId)).variables.global);
  });

  it('a failed thread’s copy runs at once from its failing node; with the profile fixed, it completes (debugging)', async () => {
    const linear = (id: string, profile: Record<string, unknown>) =>
      valid({
        id,
        version: 1,
        profiles: { default: profile },
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'draft', type: 'LLM', config: { prompt: 'Draft.' } },
          { id: 'end', type: 'END', config: { output: '{{nodes.draft}}' } },
        ],
        edges: [
          { from: 'start', to: 'draft' },
          { from: 'draft', to: 'end' },
        ],
      });
    const broken = linear('audit-copy-debug', { provider: 'scripted', responses: [] });
    const run = await e2e.runtime.prepare(broken).run();
    expect(run.status).toBe('FAILED');
    const failed = await e2e.thread(run.threadId);
    const copy = await e2e.runtime.copyThread(run.threadId);
    expect(copy.currentNodeId).toBe('draft');
    expect(copy.errors).toEqual([]);
    const fixed = linear('audit-copy-debug', { provider: 'scripted', responses: ['Fixed draft.'] });
    const rerun = await e2e.runtime.prepare(fixed, { startNodeId: 'draft' }).runThread(copy.id);
    expect(rerun.status, JSON.stringify(rerun.error)).toBe('COMPLETED');
    expect(rerun.output).toBe('Fixed draft.');
    expect(plain(await e2e.conversation(copy.id))).toEqual([user('Draft.'), assistant('Fixed draft.')]);
    // The source is still the failed run it was.
    expect(await e2e.thread(run.threadId)).toEqual(failed);
  });

  it('copying a thread that does not exist is THREAD_NOT_FOUND, naming it', async () => {
    await expect(e2e.runtime.copyThread('t-no-such-thread')).rejects.toMatchObject({
      code: 'THREAD_NOT_FOUND',
      message: expect.stringContaining('t-no-such-thread'),
    });
  });

  it('a copy of a failed thread has its errors cleared and no end time', async () => {
    const failing = forkWorkflow('audit-copy-failed', {
      paths: ['a'],
      profiles: { a: 'broken' },
      extraProfiles: { broken: { provider: 'scripted', responses: [] } },
    });
    const run = await e2e.runtime.prepare(failing).run();
    expect(run.status).toBe('FAILED');
    const failed = await e2e.thread(run.threadId);
    expect(failed.errors.length).toBeGreaterThan(0);
    const copy = await e2e.thread((await e2e.runtime.copyThread(run.threadId)).id);
    expect(copy.status).toBe('CREATED');
    expect(copy.errors).toEqual([]);
    expect(copy.endTime).toBeUndefined();
    expect(copy.metadata.parentThreadId).toBe(run.threadId);
    expect((await e2e.thread(run.threadId)).errors).toEqual(failed.errors);
  });

  it("a copy of a waiting thread keeps the conversation it had; the source's answer never reaches it", async () => {
    const asking = valid({
      id: 'audit-copy-waiting',
      version: 1,
      variables: [{ name: 'answer', type: 'any', scope: 'thread' }],
      profiles: { default: { provider: 'scripted', responses: ['Draft reply.', 'Sent.'] } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'draft', type: 'LLM', config: { prompt: 'Draft a reply.' } },
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'ask_for_approval', showMessage: 'Send?', outputVariable: 'answer' },
        },
        { id: 'send', type: 'LLM', config: { prompt: 'Send it.' } },
        { id: 'end', type: 'END', config: { output: '{{answer}}' } },
      ],
      edges: [
        { from: 'start', to: 'draft' },
        { from: 'draft', to: 'ask' },
        { from: 'ask', to: 'send' },
        { from: 'send', to: 'end' },
      ],
    });
    let copyId = '';
    let waitingStatus = '';
    let waitingConversation: { role: string; content: string }[] = [];
    const outcome = await e2e.runtime.prepare(asking).run(
      {},
      {
        answerInteraction: async (interaction) => {
          waitingStatus = (await e2e.thread(interaction.threadId)).status;
          waitingConversation = plain(await e2e.conversation(interaction.threadId));
          copyId = (await e2e.runtime.copyThread(interaction.threadId)).id;
          return { kind: 'approve' };
        },
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    // A thread waiting at a question is RUNNING (README "Local console"), not finished.
    expect(waitingStatus).toBe('RUNNING');
    const copy = await e2e.thread(copyId);
    expect(copy.status).toBe('CREATED');
    expect(copy.currentNodeId).toBe('ask');
    expect(copy.metadata.parentThreadId).toBe(outcome.threadId);
    expect(copy.variables.thread.answer).toBeUndefined();
    expect(waitingConversation).toEqual([user('Draft a reply.'), assistant('Draft reply.')]);
    expect(plain(await e2e.conversation(copyId))).toEqual(waitingConversation);
    const sourceAfter = await e2e.thread(outcome.threadId);
    const sourceConversation = plain(await e2e.conversation(outcome.threadId));
    expect(sourceConversation).toHaveLength(5);

    // The copy asks its own question when it runs, and ends on its own answer.
    const rerun = await e2e.runtime
      .prepare(asking, { startNodeId: 'ask' })
      .runThread(copyId, { answerInteraction: async () => ({ kind: 'reject', reason: 'no' }) });
    expect(rerun.status, JSON.stringify(rerun.error)).toBe('COMPLETED');
    expect(rerun.output).toBe(false);
    expect(outcome.output).toBe(true);
    expect(plain(await e2e.conversation(copyId)).slice(0, 2)).toEqual(waitingConversation);
    expect(await e2e.thread(outcome.threadId)).toEqual(sourceAfter);
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual(sourceConversation);
  });
});

describe('token usage travels with the conversation: fork, join and copy (seeds 000 §1, 001 §3, 002 §3)', () => {
  it('children start with the parent’s usage, the join restores the main path’s, a copy has its own', async () => {
    const openai = (id: string) =>
      valid({
        ...forkWorkflow(id, { paths: ['a', 'b'], strategy: 'serial', join: { mainPathId: 'b' } }),
        profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
      });
    const workflow = openai('audit-tokens');
    // Serial: intro, a-work, b-work, after, in this order.
    model.reply(
      textReply('intro reply', { prompt: 10, completion: 1 }),
      textReply('a reply', { prompt: 100, completion: 2 }),
      textReply('b reply', { prompt: 1000, completion: 3 }),
      textReply('after reply', { prompt: 5, completion: 1 }),
    );
    const run = await e2e.runtime.prepare(workflow).run();
    expect(run.status, JSON.stringify(run.error)).toBe('COMPLETED');
    const threads = await threadsOf(run.executionId);
    const total = (thread: Thread | undefined) => thread?.conversation.tokenUsage.totalTokens;
    expect(total(branchOf(threads, 'a')[0])).toBe(11 + 102);
    expect(total(branchOf(threads, 'b')[0])).toBe(11 + 1003);
    const root = await e2e.thread(run.threadId);
    // b's usage came back with b's conversation, then `after` added its own.
    expect(total(root)).toBe(11 + 1003 + 6);
    for (const child of threads) expect(child.conversation.threadId).toBe(child.id);

    const plainCopy = await e2e.thread((await e2e.runtime.copyThread(run.threadId)).id);
    expect(plainCopy.conversation.tokenUsage).toEqual(root.conversation.tokenUsage);
    expect(plainCopy.conversation.threadId).toBe(plainCopy.id);

    const copy = await e2e.runtime.copyThread(run.threadId, { fromNodeId: 'after' });
    expect(copy.conversation.tokenUsage.totalTokens).toBe(11 + 1003);
    model.reply(textReply('after again', { prompt: 7, completion: 1 }));
    const rerun = await e2e.runtime.prepare(workflow, { startNodeId: 'after' }).runThread(copy.id);
    expect(rerun.status, JSON.stringify(rerun.error)).toBe('COMPLETED');
    expect(total(await e2e.thread(copy.id))).toBe(11 + 1003 + 8);
    // Neither the source nor the other copy counted the copy's call.
    expect(total(await e2e.thread(run.threadId))).toBe(11 + 1003 + 6);
    expect(total(await e2e.thread(plainCopy.id))).toBe(11 + 1003 + 6);
  });
});
