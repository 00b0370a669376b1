import { describe, expect, it } from 'vitest';
import type { ConversationState } from '../../../engine/conversation/types.ts';
import type { JoinConfig } from '../../../engine/model/schema.ts';
import { forkThread } from '../../../engine/thread/fork.ts';
import { joinThreads } from '../../../engine/thread/join.ts';
import type { Thread, ThreadStatus } from '../../../engine/thread/types.ts';
import { runningThread, testEnv } from './fixtures.ts';

/** A child after it ran: status, output, a grown conversation and one executed node. */
function finish(child: Thread, status: ThreadStatus, output?: unknown, grownBy = 2): Thread {
  const length = child.conversation.log.length + grownBy;
  const conversation: ConversationState = {
    ...child.conversation,
    log: { id: `log-${child.id}`, length },
    index: { ...child.conversation.index, visible: [[0, length]] },
    tokenUsage: { promptTokens: 100 + grownBy, completionTokens: 50, totalTokens: 150 + grownBy },
  };
  const nodeId = `${child.contextData.authorForkPathId}1`;
  return {
    ...child,
    status,
    output,
    conversation,
    nodeResults: {
      ...child.nodeResults,
      [nodeId]: {
        nodeId,
        nodeType: 'CODE',
        status: status === 'COMPLETED' ? 'COMPLETED' : 'FAILED',
        output,
        startedAt: '2024-01-02T00:00:00.000Z',
        endedAt: '2024-01-02T00:00:01.000Z',
      },
    },
    executionHistory: [
      { nodeId, nodeType: 'CODE', status: 'COMPLETED', at: '2024-01-02T00:00:01.000Z', step: 1 },
    ],
  };
}

function setup(author: string[]) {
  const parent = { ...runningThread(), currentNodeId: 'merge' };
  const forkPathIds = author.map((p) => `split#${p}`);
  const { children } = forkThread(parent, { forkPathIds, authorForkPathIds: author }, testEnv('child'));
  return { parent, forkPathIds, children };
}

function config(forkPathIds: string[], extra: Partial<JoinConfig> = {}): JoinConfig {
  return { forkPathIds, joinStrategy: 'ALL_COMPLETED', ...extra };
}

describe('joinThreads (seed 001 §6 scenarios)', () => {
  it('single-path fork/join without mainPathId: the child’s output and conversation become the parent’s', () => {
    const { parent, forkPathIds, children } = setup(['only']);
    const done = finish(children[0]!, 'COMPLETED', { answer: 42 });
    const {
      parent: joined,
      result,
      events,
    } = joinThreads({
      parent,
      children: [done],
      config: config(forkPathIds),
      env: testEnv(),
    });
    expect(result).toEqual({ status: 'COMPLETED', output: { answer: 42 } });
    expect(joined.conversation).toEqual({ ...done.conversation, threadId: 'parent' });
    expect(joined.conversation.log).toEqual({ id: 'log-child-1', length: 5 });
    expect(parent.conversation.log.length).toBe(3);
    expect(events).toEqual([
      {
        type: 'THREAD_JOINED',
        threadId: 'parent',
        workflowId: 'triage',
        nodeId: 'merge',
        at: '2024-01-01T00:00:00.000Z',
        strategy: 'ALL_COMPLETED',
        status: 'COMPLETED',
        reason: 'all 1 branches completed',
        childThreadIds: ['child-1'],
        mainPathId: 'split#only',
      },
    ]);
  });

  it('multi-path fork/join with mainPathId: outputs keyed by the author’s path ids, main path’s conversation restored', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b', 'c']);
    const [a, b, c] = [
      finish(children[0]!, 'COMPLETED', 'A', 1),
      finish(children[1]!, 'COMPLETED', 'B', 4),
      finish(children[2]!, 'COMPLETED', 'C', 7),
    ];
    const {
      parent: joined,
      result,
      events,
    } = joinThreads({
      parent,
      children: [c, a, b], // arrival order does not matter
      config: config(forkPathIds, { mainPathId: 'split#b' }),
      env: testEnv(),
    });
    expect(result).toEqual({ status: 'COMPLETED', output: { a: 'A', b: 'B', c: 'C' } });
    expect(joined.conversation).toEqual({ ...b.conversation, threadId: 'parent' });
    expect(events[0]).toMatchObject({
      mainPathId: 'split#b',
      childThreadIds: ['child-1', 'child-2', 'child-3'],
    });
  });

  it('defaults the main path to forkPathIds[0] and never merges the other conversations', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const a = finish(children[0]!, 'COMPLETED', 'A', 1);
    const b = finish(children[1]!, 'COMPLETED', 'B', 9);
    const { parent: joined } = joinThreads({
      parent,
      children: [a, b],
      config: config(forkPathIds),
      env: testEnv(),
    });
    expect(joined.conversation).toEqual({ ...a.conversation, threadId: 'parent' });
    expect(joined.conversation.log.length).toBe(4);
  });

  it('makes the branch node results readable after the join without touching the parent', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const done = [finish(children[0]!, 'COMPLETED', 'A'), finish(children[1]!, 'COMPLETED', 'B')];
    const { parent: joined } = joinThreads({
      parent,
      children: done,
      config: config(forkPathIds),
      env: testEnv(),
    });
    expect(Object.keys(joined.nodeResults).sort()).toEqual(['a1', 'b1', 'start']);
    expect(joined.nodeResults.b1?.output).toBe('B');
    expect(Object.keys(parent.nodeResults)).toEqual(['start']);
  });
});

describe('joinThreads outcomes', () => {
  it('fails with JOIN_FAILED at the first failure of ALL_COMPLETED, leaving the parent as it was', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b', 'c']);
    const a = finish(children[0]!, 'COMPLETED', 'A');
    const b = {
      ...finish(children[1]!, 'FAILED'),
      errors: [{ code: 'LLM_PROVIDER_ERROR' as const, message: 'the model said no', nodeId: 'b1' }],
    };
    const {
      parent: after,
      result,
      events,
    } = joinThreads({
      parent,
      children: [a, b, children[2]!],
      config: config(forkPathIds),
      env: testEnv(),
    });
    expect(after).toBe(parent);
    expect(result).toEqual({
      status: 'FAILED',
      output: 'A',
      // It names the failed branch and its error.
      error: {
        code: 'JOIN_FAILED',
        message: '1 of 3 branches failed; path "b": LLM_PROVIDER_ERROR at node b1: the model said no',
        nodeId: 'merge',
      },
    });
    expect(events[0]).toMatchObject({ type: 'THREAD_JOINED', status: 'FAILED' });
    expect(events[0]).not.toHaveProperty('mainPathId');
  });

  it('counts CANCELLED and TIMEOUT children as failed branches', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const done = [finish(children[0]!, 'CANCELLED'), finish(children[1]!, 'TIMEOUT')];
    const { result } = joinThreads({
      parent,
      children: done,
      config: config(forkPathIds, { joinStrategy: 'ALL_FAILED' }),
      env: testEnv(),
    });
    expect(result).toEqual({ status: 'COMPLETED', output: {} });
  });

  it('never restores a main path (default forkPathIds[0]) that has not finished: the parent keeps its own', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b', 'c']);
    const b = finish(children[1]!, 'COMPLETED', 'B', 5);
    const c = finish(children[2]!, 'COMPLETED', 'C', 6);
    const running = { ...children[0]!, status: 'RUNNING' as const };
    const {
      parent: joined,
      result,
      events,
    } = joinThreads({
      parent,
      children: [running, c, b],
      config: config(forkPathIds, { joinStrategy: 'ANY_COMPLETED' }),
      env: testEnv(),
    });
    expect(result.status).toBe('COMPLETED');
    // ANY_COMPLETED merges one branch: with the main path unfinished, the first completed in path order.
    expect(result.output).toBe('B');
    expect(joined.conversation).toEqual(parent.conversation);
    expect(events[0]).toMatchObject({ mainPathId: 'split#a' });
  });

  it('merges one branch for ANY_COMPLETED and `threshold` for SUCCESS_COUNT_THRESHOLD: the completed main path first, then path order, whatever order they finished in', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b', 'c']);
    const [a, b, c] = ['A', 'B', 'C'].map((output, i) => finish(children[i]!, 'COMPLETED', output));
    const running = { ...children[2]!, status: 'RUNNING' as const };
    const cases: [Thread[], string, Partial<JoinConfig>, unknown][] = [
      [[a!, b!, c!], 'split#a', { joinStrategy: 'ANY_COMPLETED' }, 'A'],
      [[c!, b!, a!], 'split#a', { joinStrategy: 'ANY_COMPLETED' }, 'A'],
      [[c!, b!, a!], 'split#c', { joinStrategy: 'ANY_COMPLETED' }, 'C'],
      // A main path still running (a join that timed out): the first completed in path order.
      [[b!, running, a!], 'split#c', { joinStrategy: 'ANY_COMPLETED' }, 'A'],
      [
        [c!, b!, a!],
        'split#c',
        { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 2 },
        { a: 'A', c: 'C' },
      ],
      [
        [c!, a!, b!],
        'split#a',
        { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 2 },
        { a: 'A', b: 'B' },
      ],
      [[c!, a!, b!], 'split#b', { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 1 }, 'B'],
      [
        [c!, a!, b!],
        'split#b',
        { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 3 },
        { a: 'A', b: 'B', c: 'C' },
      ],
      // Every other strategy merges every completed branch it counted.
      [[c!, a!, b!], 'split#b', { joinStrategy: 'ALL_COMPLETED' }, { a: 'A', b: 'B', c: 'C' }],
    ];
    for (const [seen, mainPathId, strategy, output] of cases) {
      const { result } = joinThreads({
        parent,
        children: seen,
        config: config(forkPathIds, { ...strategy, mainPathId }),
        env: testEnv(),
      });
      expect(result, `${JSON.stringify(strategy)} ${mainPathId}`).toEqual({ status: 'COMPLETED', output });
    }
  });

  it('never restores a failed main path’s conversation, whatever the strategy', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const a = finish(children[0]!, 'FAILED');
    const b = finish(children[1]!, 'COMPLETED', 'B', 5);
    for (const joinStrategy of ['ANY_COMPLETED', 'ANY_FAILED', 'SUCCESS_COUNT_THRESHOLD'] as const) {
      const { parent: joined, result } = joinThreads({
        parent,
        children: [a, b],
        config: config(forkPathIds, {
          joinStrategy,
          ...(joinStrategy === 'SUCCESS_COUNT_THRESHOLD' ? { threshold: 1 } : {}),
        }),
        env: testEnv(),
      });
      expect(result.status, joinStrategy).toBe('COMPLETED');
      expect(joined.conversation, joinStrategy).toEqual(parent.conversation);
    }
  });

  it('restores a completed main path, however the other branches ended', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b', 'c']);
    const done = [
      finish(children[0]!, 'COMPLETED', 'A', 4),
      finish(children[1]!, 'FAILED'),
      finish(children[2]!, 'COMPLETED', 'C'),
    ];
    const { parent: joined, events } = joinThreads({
      parent,
      children: done,
      config: config(forkPathIds, { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 2 }),
      env: testEnv(),
    });
    expect(joined.conversation).toEqual({ ...done[0]!.conversation, threadId: 'parent' });
    expect(events[0]).toMatchObject({ mainPathId: 'split#a' });
  });

  it('throws MAIN_THREAD_NOT_FOUND only when the main path has no child thread at all', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const b = finish(children[1]!, 'COMPLETED', 'B');
    const join = (kids: Thread[]) =>
      joinThreads({
        parent,
        children: kids,
        config: config(forkPathIds, { joinStrategy: 'ANY_COMPLETED', mainPathId: 'split#a' }),
        env: testEnv(),
      });
    expect(() => join([b])).toThrowError(expect.objectContaining({ code: 'MAIN_THREAD_NOT_FOUND' }));
  });

  it('propagates CONVERSATION_MANAGER_MERGE_FAILED when the main child’s conversation cannot be restored', () => {
    const { parent, forkPathIds, children } = setup(['a']);
    const done = finish(children[0]!, 'COMPLETED', 'A');
    const broken = {
      ...done,
      conversation: { ...done.conversation, index: { ...done.conversation.index, visible: [[0, 99]] } },
    } as Thread;
    expect(() =>
      joinThreads({ parent, children: [broken], config: config(forkPathIds), env: testEnv() }),
    ).toThrowError(expect.objectContaining({ code: 'CONVERSATION_MANAGER_MERGE_FAILED' }));
  });

  it('times out an undecided join only when it has a timeout and the wait ran out', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const kids = [finish(children[0]!, 'COMPLETED', 'A'), { ...children[1]!, status: 'RUNNING' as const }];
    const timed = joinThreads({
      parent,
      children: kids,
      config: config(forkPathIds, { timeout: 30 }),
      timedOut: true,
      env: testEnv(),
    });
    expect(timed.parent).toBe(parent);
    expect(timed.result).toMatchObject({
      status: 'TIMEOUT',
      error: { code: 'JOIN_TIMEOUT', nodeId: 'merge' },
    });
    expect(timed.events[0]).toMatchObject({ type: 'THREAD_JOINED', status: 'TIMEOUT' });

    const noTimeout = joinThreads({
      parent,
      children: kids,
      config: config(forkPathIds),
      timedOut: true,
      env: testEnv(),
    });
    expect(noTimeout.result).toMatchObject({ status: 'FAILED', error: { code: 'JOIN_FAILED' } });
  });

  it('lets a decided join win over a timeout that fired at the same time', () => {
    const { parent, forkPathIds, children } = setup(['a', 'b']);
    const kids = [finish(children[0]!, 'COMPLETED', 'A'), { ...children[1]!, status: 'RUNNING' as const }];
    const { result } = joinThreads({
      parent,
      children: kids,
      config: config(forkPathIds, { joinStrategy: 'ANY_COMPLETED', timeout: 5 }),
      timedOut: true,
      env: testEnv(),
    });
    expect(result).toEqual({ status: 'COMPLETED', output: 'A' });
  });

  it('ignores children that belong to other forks', () => {
    const { parent, forkPathIds, children } = setup(['a']);
    const stranger = { ...finish(children[0]!, 'FAILED'), id: 'x', contextData: { forkPathId: 'other#z' } };
    const { result, events } = joinThreads({
      parent,
      children: [stranger, finish(children[0]!, 'COMPLETED', 'A')],
      config: config(forkPathIds),
      env: testEnv(),
    });
    expect(result.status).toBe('COMPLETED');
    expect(events[0]?.childThreadIds).toEqual(['child-1']);
  });
});
