import { describe, expect, it } from 'vitest';
import {
  applyContextOperation,
  createConversation,
  openConversation,
  setToolDescription,
} from '../../../engine/conversation/index.ts';
import { contents, numbered, system, user, viewWith } from './helpers.ts';

describe('conversation view', () => {
  it('starts empty and grows the log pointer on append', () => {
    const state = createConversation({ threadId: 't1', logId: 'log-1', tokenLimit: 1000 });
    expect(state).toEqual({
      threadId: 't1',
      log: { id: 'log-1', length: 0 },
      index: { visible: [], batches: [{ boundary: 0, visibleBefore: [] }], currentBatch: 0 },
      tokenUsage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, limit: 1000 },
    });
    const view = openConversation(state, []);
    view.append(user('a'), user('b'));
    view.append(user('c'));
    expect(view.state().log).toEqual({ id: 'log-1', length: 3 });
    expect(view.state().index.visible).toEqual([[0, 3]]);
    expect(contents(view)).toEqual(['a', 'b', 'c']);
  });

  it('lists exactly the messages appended since open, for the store to persist', () => {
    const first = viewWith(numbered(3));
    const second = openConversation(first.state(), first.allMessages());
    expect(second.appendedMessages()).toEqual([]);
    second.append(user('new'));
    applyContextOperation(second, { operation: 'insert', insert: { position: 0, messages: [system('S')] } });
    expect(second.appendedMessages()).toEqual([user('new'), system('S')]);
    expect(second.allMessages()).toHaveLength(5);
  });

  it('copies appended messages so later edits by the caller cannot reach the log', () => {
    const message = user('original');
    const view = viewWith([message]);
    message.content = 'mutated';
    expect(contents(view)).toEqual(['original']);
  });

  it('rejects a log shorter than the state says and ignores messages past its length', () => {
    const view = viewWith(numbered(3));
    const state = view.state();
    expect(() => openConversation(state, numbered(2))).toThrow(
      expect.objectContaining({ code: 'CONVERSATION_LOG_MISMATCH' }),
    );
    // A sibling sharing the log appended m3; this conversation does not see it and appends after its own end.
    const reopened = openConversation(state, numbered(4));
    expect(reopened.allMessages().map((m) => m.content)).toEqual(['m0', 'm1', 'm2']);
    reopened.append(user('mine'));
    expect(reopened.state().log.length).toBe(4);
    expect(contents(reopened)).toEqual(['m0', 'm1', 'm2', 'mine']);
  });

  it('rejects invalid messages on append', () => {
    const view = viewWith([]);
    expect(() => view.append({ role: 'user' } as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_MESSAGE' }),
    );
    expect(view.logLength()).toBe(0);
  });
});

describe('tool description', () => {
  it('appends a visible system message and records its position', () => {
    const view = viewWith([system('rules'), user('hi')]);
    setToolDescription(view, system('Tools: a'));
    expect(contents(view)).toEqual(['rules', 'hi', 'Tools: a']);
    expect(view.state().toolDescription).toBe(2);
  });

  it('is idempotent for an equal message and swaps in place for a new one', () => {
    const view = viewWith([system('rules')]);
    setToolDescription(view, system('Tools: a'));
    view.append(user('hi'));
    setToolDescription(view, system('Tools: a'));
    expect(view.logLength()).toBe(3);
    setToolDescription(view, system('Tools: a, b'));
    expect(contents(view)).toEqual(['rules', 'Tools: a, b', 'hi']);
    expect(view.state().toolDescription).toBe(3);
  });

  it('must be a system message', () => {
    const view = viewWith([]);
    expect(() => setToolDescription(view, user('Tools'))).toThrow(
      expect.objectContaining({ code: 'INVALID_MESSAGE' }),
    );
  });
});
