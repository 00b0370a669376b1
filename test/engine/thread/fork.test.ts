import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import { forkThread } from '../../../engine/thread/fork.ts';
import { getVariable, setVariable } from '../../../engine/thread/variables.ts';
import { runningThread, testEnv } from './fixtures.ts';

describe('forkThread', () => {
  it('creates one CREATED child per path, labelled with its path and parent', () => {
    const parent = runningThread();
    const { children, event } = forkThread(
      parent,
      { forkPathIds: ['split#a', 'split#b'], authorForkPathIds: ['a', 'b'], childNodeIds: ['a1', 'b1'] },
      testEnv('child'),
    );
    expect(children.map((c) => c.id)).toEqual(['child-1', 'child-2']);
    children.forEach((child, i) => {
      const pathId = ['split#a', 'split#b'][i];
      expect(child.status).toBe('CREATED');
      expect(child.workflowId).toBe('triage');
      expect(child.workflowVersion).toBe(3);
      expect(child.currentNodeId).toBe(['a1', 'b1'][i]);
      expect(child.contextData).toEqual({ forkPathId: pathId, authorForkPathId: ['a', 'b'][i] });
      expect(child.metadata).toEqual({
        parentThreadId: 'parent',
        forkPathId: pathId,
        executionId: 'exec-1',
        lineage: ['parent'],
      });
      expect(child.executionHistory).toEqual([]);
      expect(child.errors).toEqual([]);
      expect(child.endTime).toBeUndefined();
      expect(child.input).toEqual(parent.input);
      expect(child.input).not.toBe(parent.input);
    });
    expect(event).toEqual({
      type: 'THREAD_FORKED',
      threadId: 'parent',
      workflowId: 'triage',
      nodeId: 'split',
      at: '2024-01-01T00:00:00.000Z',
      forkPathIds: ['split#a', 'split#b'],
      childThreadIds: ['child-1', 'child-2'],
    });
  });

  it('gives each child the parent’s conversation under the child’s own thread id', () => {
    const parent = runningThread();
    const { children } = forkThread(parent, { forkPathIds: ['a', 'b'] }, testEnv('child'));
    for (const child of children) {
      expect(child.conversation).toEqual({ ...parent.conversation, threadId: child.id });
    }
    expect(parent.conversation.threadId).toBe('parent');
  });

  it('shares the global scope object and deep-copies the thread scope', () => {
    const parent = runningThread();
    const { children } = forkThread(parent, { forkPathIds: ['a', 'b'] }, testEnv());
    const [a, b] = children as [(typeof children)[0], (typeof children)[0]];
    expect(a.variables.global).toBe(parent.variables.global);
    expect(b.variables.global).toBe(parent.variables.global);

    setVariable(a.variables, 'settings', { mode: 'slow' }, 'global');
    expect(getVariable(parent.variables, 'settings')).toEqual({ mode: 'slow' });
    expect(getVariable(b.variables, 'settings')).toEqual({ mode: 'slow' });

    (a.variables.thread.ticket as { tags: string[] }).tags.push('from-a');
    setVariable(a.variables, 'count', 100, 'thread');
    expect(parent.variables.thread).toEqual({ ticket: { tags: ['a'] }, count: 2 });
    expect(b.variables.thread).toEqual({ ticket: { tags: ['a'] }, count: 2 });
  });

  it('starts children with empty subgraph and loop scopes', () => {
    const parent = runningThread();
    const { children } = forkThread(parent, { forkPathIds: ['a'] }, testEnv());
    expect(children[0]!.variables.subgraph).toEqual([]);
    expect(children[0]!.variables.loop).toEqual([]);
    expect(parent.variables.loop).toHaveLength(1);
  });

  it('keeps readonly marks: global shared, thread copied', () => {
    // Outside a subgraph: inside one, thread writes go to the subgraph's frame.
    const parent = { ...runningThread(), variables: { ...runningThread().variables, subgraph: [] } };
    setVariable(parent.variables, 'fixed', 1, 'thread', [], { readonly: true });
    const { children } = forkThread(parent, { forkPathIds: ['a'] }, testEnv());
    const child = children[0]!;
    expect(() => setVariable(child.variables, 'fixed', 2, 'thread')).toThrow(StepthreadError);
    setVariable(child.variables, 'other', 1, 'thread', [], { readonly: true });
    expect(() => setVariable(parent.variables, 'other', 2, 'thread')).not.toThrow();
  });

  it.each([
    [[], 'empty'],
    [['a', 'a'], 'duplicates'],
  ])('rejects forkPathIds %j (%s) with INVALID_FORK_PATH_IDS', (forkPathIds) => {
    expect(() => forkThread(runningThread(), { forkPathIds }, testEnv())).toThrowError(
      expect.objectContaining({ code: 'INVALID_FORK_PATH_IDS' }),
    );
  });

  it('rejects author path ids that do not line up', () => {
    expect(() =>
      forkThread(runningThread(), { forkPathIds: ['a', 'b'], authorForkPathIds: ['a'] }, testEnv()),
    ).toThrowError(expect.objectContaining({ code: 'INVALID_FORK_PATH_IDS' }));
  });
});

describe('forkThread with given child ids', () => {
  it('uses them, so a retried fork recreates the same children', () => {
    const options = { forkPathIds: ['a', 'b'], childThreadIds: ['parent.a', 'parent.b'] };
    const first = forkThread(runningThread(), options, testEnv('x'));
    const retry = forkThread(runningThread(), options, testEnv('y'));
    expect(first.children.map((c) => c.id)).toEqual(['parent.a', 'parent.b']);
    expect(retry).toEqual(first);
  });

  it('rejects ids that are missing or repeated', () => {
    for (const childThreadIds of [['only-one'], ['same', 'same']]) {
      expect(() =>
        forkThread(runningThread(), { forkPathIds: ['a', 'b'], childThreadIds }, testEnv()),
      ).toThrowError(expect.objectContaining({ code: 'INVALID_FORK_PATH_IDS' }));
    }
  });
});
