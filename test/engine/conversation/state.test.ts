import { describe, expect, it } from 'vitest';
import {
  applyContextOperation,
  createConversation,
  openConversation,
  rollbackToBatch,
  withLogId,
  withThreadId,
} from '../../../engine/conversation/index.ts';
import { contents, numbered, user, viewWith } from './helpers.ts';

describe('createConversation', () => {
  it('rejects a bad limit or threshold', () => {
    for (const options of [
      { tokenLimit: 0 },
      { tokenLimit: 1.5 },
      { warningThreshold: 0 },
      { warningThreshold: 1.2 },
    ]) {
      expect(() => createConversation({ threadId: 't', logId: 'l', ...options })).toThrow(
        expect.objectContaining({ code: 'INVALID_TOKEN_USAGE' }),
      );
    }
  });
});

describe('withThreadId', () => {
  it('gives the copy its own thread id and leaves the original alone', () => {
    const state = viewWith(numbered(2)).state();
    const child = withThreadId(state, 'child');
    expect(child.threadId).toBe('child');
    expect(state.threadId).toBe('t1');
    expect({ ...child, threadId: 't1' }).toEqual(state);
  });
});

describe('withLogId', () => {
  it('points the state at the log under its new id, same length', () => {
    const state = viewWith(numbered(2)).state();
    expect(withLogId(state, 'log-2').log).toEqual({ id: 'log-2', length: 2 });
    expect(state.log.id).toBe('log-1');
  });
});

describe('rollbackToBatch', () => {
  it('restores the visible messages as they were when the batch ended', () => {
    const view = viewWith(numbered(6));
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 4 } }); // batch 1
    view.append(user('after truncate'));
    applyContextOperation(view, { operation: 'filter', filter: { roles: ['user'] } }); // batch 2
    view.append(user('after filter'));
    const state = view.state();
    expect(state.index.currentBatch).toBe(2);

    const toBatch1 = rollbackToBatch(state, 1);
    expect(toBatch1.index.currentBatch).toBe(1);
    expect(toBatch1.index.batches).toHaveLength(2);
    expect(contents(openConversation(toBatch1, view.allMessages()))).toEqual([
      'm2',
      'm3',
      'm4',
      'm5',
      'after truncate',
    ]);

    const toBatch0 = rollbackToBatch(state, 0);
    expect(contents(openConversation(toBatch0, view.allMessages()))).toEqual(
      numbered(6).map((m) => m.content),
    );
    expect(toBatch0.index.batches).toEqual([{ boundary: 0, visibleBefore: [] }]);
    // The log is append-only: rollback never shortens it.
    expect(toBatch0.log).toEqual(state.log);
  });

  it('is a no-op for the current batch and rejects unknown batches', () => {
    const view = viewWith(numbered(3));
    applyContextOperation(view, { operation: 'clear' });
    const state = view.state();
    expect(rollbackToBatch(state, 1)).toBe(state);
    for (const batch of [2, -1, 0.5]) {
      expect(() => rollbackToBatch(state, batch)).toThrow(
        expect.objectContaining({ code: 'ROLLBACK_BATCH_NOT_FOUND' }),
      );
    }
  });

  it('rolled-back state can keep working: a new batch follows the kept ones', () => {
    const view = viewWith(numbered(4));
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 1 } });
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 0 } });
    const rolled = openConversation(rollbackToBatch(view.state(), 0), view.allMessages());
    applyContextOperation(rolled, { operation: 'truncate', truncate: { keepFirst: 2 } });
    expect(rolled.state().index.currentBatch).toBe(1);
    expect(contents(rolled)).toEqual(['m0', 'm1']);
  });
});
