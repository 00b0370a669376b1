import { describe, expect, it } from 'vitest';
import { copyThread } from '../../../engine/thread/copy.ts';
import { createThread } from '../../../engine/thread/create.ts';
import { conversation, runningThread, testEnv, workflow } from './fixtures.ts';

describe('createThread', () => {
  it('creates a CREATED thread with declared variables, copied input and its own conversation label', () => {
    const input = { question: { text: 'hi' } };
    const { thread, event } = createThread({
      workflow,
      input,
      env: testEnv('t'),
      conversation: conversation('tmp'),
    });
    expect(thread).toMatchObject({
      id: 't-1',
      workflowId: 'triage',
      workflowVersion: 3,
      status: 'CREATED',
      input,
      nodeResults: {},
      executionHistory: [],
      errors: [],
      startTime: '2024-01-01T00:00:00.000Z',
    });
    expect(thread.endTime).toBeUndefined();
    expect(thread.variables).toEqual({
      global: { settings: { mode: 'fast' } },
      thread: { ticket: { tags: ['a'] }, count: 0 },
      subgraph: [],
      loop: [],
    });
    expect(thread.conversation.threadId).toBe('t-1');
    input.question.text = 'changed';
    expect(thread.input).toEqual({ question: { text: 'hi' } });
    expect(event).toEqual({
      type: 'THREAD_CREATED',
      threadId: 't-1',
      workflowId: 'triage',
      workflowVersion: 3,
      at: '2024-01-01T00:00:00.000Z',
    });
  });

  it('uses a given id', () => {
    const { thread } = createThread({
      workflow,
      env: testEnv(),
      conversation: conversation('x'),
      id: 'exec-7',
    });
    expect(thread.id).toBe('exec-7');
    expect(thread.conversation.threadId).toBe('exec-7');
  });
});

/** Every nested mutable part of a thread, as a list of mutations. */
const mutations: ReadonlyArray<[string, (t: ReturnType<typeof runningThread>) => void]> = [
  ['input', (t) => ((t.input.question as { text: string }).text = 'mutated')],
  ['output', (t) => (t.output as { partial: number[] }).partial.push(99)],
  ['global variables', (t) => ((t.variables.global.settings as { mode: string }).mode = 'slow')],
  ['thread variables', (t) => (t.variables.thread.ticket as { tags: string[] }).tags.push('z')],
  ['subgraph frames', (t) => ((t.variables.subgraph[0]!.inner as { x: number }).x = 42)],
  ['loop frames', (t) => t.variables.loop.push({ extra: true })],
  ['node results', (t) => ((t.nodeResults.start!.output as { ok: boolean }).ok = false)],
  ['execution history', (t) => (t.executionHistory[0]!.step = 77)],
  ['metadata', (t) => ((t.metadata.tags as { team: string }).team = 'dev')],
  ['context data', (t) => ((t.contextData.note as { k: string }).k = 'w')],
  [
    'conversation index',
    (t) => (t.conversation.index.visible as Array<readonly [number, number]>).push([5, 6]),
  ],
  ['token usage', (t) => ((t.conversation.tokenUsage as { totalTokens: number }).totalTokens = 1)],
];

describe('copyThread', () => {
  it('replicates the thread as CREATED with a new id and start time, no end time and no errors', () => {
    const source = runningThread('src');
    const { thread: copy, event } = copyThread(source, testEnv('copy'));
    expect(copy.id).toBe('copy-1');
    expect(copy.status).toBe('CREATED');
    expect(copy.startTime).toBe('2024-01-01T00:00:00.000Z');
    expect(copy.endTime).toBeUndefined();
    expect('endTime' in copy).toBe(false);
    expect(copy.errors).toEqual([]);
    expect(copy.metadata).toEqual({
      executionId: 'exec-1',
      tags: { team: 'ops' },
      parentThreadId: 'src',
      copiedFrom: 'src',
    });
    // Everything else is equal in value.
    const { id, status, startTime, endTime, errors, metadata, conversation: conv, ...sameSource } = source;
    const {
      id: _i,
      status: _s,
      startTime: _st,
      errors: _e,
      metadata: _m,
      conversation: copyConv,
      ...sameCopy
    } = copy;
    expect(sameCopy).toEqual(sameSource);
    // The conversation points at the same immutable log, labelled with the copy's id.
    expect(copyConv).toEqual({ ...conv, threadId: 'copy-1' });
    expect(source.conversation.threadId).toBe('src');
    expect(event).toEqual({
      type: 'THREAD_COPIED',
      threadId: 'copy-1',
      workflowId: 'triage',
      at: '2024-01-01T00:00:00.000Z',
      sourceThreadId: 'src',
      copyThreadId: 'copy-1',
    });
  });

  it.each(mutations)('mutating the copy’s %s leaves the source unchanged', (_part, mutate) => {
    const source = runningThread('src');
    const pristine = structuredClone(source);
    const { thread: copy } = copyThread(source, testEnv());
    mutate(copy);
    expect(source).toEqual(pristine);
  });

  it.each(mutations)('mutating the source’s %s leaves the copy unchanged', (_part, mutate) => {
    const source = runningThread('src');
    const { thread: copy } = copyThread(source, testEnv());
    const pristine = structuredClone(copy);
    mutate(source);
    expect(copy).toEqual(pristine);
  });

  it('does not share the global scope, unlike a fork', () => {
    const source = runningThread('src');
    const { thread: copy } = copyThread(source, testEnv());
    expect(copy.variables.global).not.toBe(source.variables.global);
  });
});

describe('copyThread with a given id', () => {
  it('labels the copy and its conversation with it', () => {
    const { thread, event } = copyThread(runningThread('src'), testEnv(), { id: 'src-copy-1' });
    expect(thread.id).toBe('src-copy-1');
    expect(thread.conversation.threadId).toBe('src-copy-1');
    expect(event.copyThreadId).toBe('src-copy-1');
  });
});
