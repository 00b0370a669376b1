import { describe, expect, it } from 'vitest';
import {
  applyContextOperation,
  createConversation,
  openConversation,
  restoreConversation,
  snapshotConversation,
} from '../../../engine/conversation/index.ts';
import { numbered, system, viewWith } from './helpers.ts';

describe('snapshot', () => {
  it('is O(1) bytes for a contiguous conversation however long it is', () => {
    const size = (n: number) => {
      const view = openConversation(createConversation({ threadId: 't1', logId: 'log-1' }), []);
      for (const message of numbered(n)) view.append(message); // one at a time, as a real run appends
      return JSON.stringify(snapshotConversation(view.state())).length;
    };
    const small = size(10);
    const large = size(10_000);
    // Only the digits of the two lengths differ ("10" vs "10000", twice).
    expect(Math.abs(large - small)).toBeLessThanOrEqual(8);
  });

  it('is a deep copy', () => {
    const state = viewWith(numbered(3)).state();
    const copy = snapshotConversation(state);
    expect(copy).toEqual(state);
    expect(copy.index.visible).not.toBe(state.index.visible);
    expect(copy.index.visible[0]).not.toBe(state.index.visible[0]);
    expect(copy.tokenUsage).not.toBe(state.tokenUsage);
  });
});

describe('restoreConversation', () => {
  const busy = () => {
    const view = viewWith([system('s'), ...numbered(5)]);
    view.setToolDescription(system('Tools'));
    applyContextOperation(view, { operation: 'truncate', truncate: { keepLast: 3 } });
    applyContextOperation(view, { operation: 'insert', insert: { position: 1, messages: numbered(1, 50) } });
    return view.state();
  };

  it('round-trips through JSON and carries the given thread id', () => {
    const state = busy();
    const restored = restoreConversation(JSON.parse(JSON.stringify(snapshotConversation(state))), 'parent');
    expect(restored).toStrictEqual({ ...state, threadId: 'parent' });
  });

  it.each([
    ['not an object', 42, /expected object/],
    ['a run past the log', { log: { length: 3 }, visible: [[0, 4]] }, /past the log length 3/],
    [
      'overlapping runs',
      {
        visible: [
          [0, 3],
          [2, 4],
        ],
      },
      /overlap/,
    ],
    ['an empty run', { visible: [[2, 2]] }, /not a non-empty range/],
    ['a negative position', { visible: [[-1, 2]] }, /index\.visible\.0\.0/],
    [
      'unmerged runs',
      {
        visible: [
          [0, 1],
          [1, 2],
        ],
      },
      /not normalised/,
    ],
    ['currentBatch not the last batch', { currentBatch: 0 }, /currentBatch 0/],
    ['no batches', { batches: [] }, /index\.batches/],
    [
      'a batch boundary past the log',
      {
        batches: [
          { boundary: 0, visibleBefore: [] },
          { boundary: 99, visibleBefore: [] },
        ],
      },
      /boundary 99/,
    ],
    ['a tool description past the log', { toolDescription: 10 }, /toolDescription 10/],
    ['inconsistent token totals', { totalTokens: 5 }, /totalTokens/],
  ])('rejects %s', (_, change, reason) => {
    const good = snapshotConversation(busy());
    const bad =
      typeof change !== 'object'
        ? change
        : {
            ...good,
            ...('toolDescription' in change ? { toolDescription: change.toolDescription } : {}),
            log: { ...good.log, ...('log' in change ? change.log : {}) },
            index: {
              visible: 'visible' in change ? change.visible : good.index.visible,
              batches: 'batches' in change ? change.batches : good.index.batches,
              currentBatch: 'currentBatch' in change ? change.currentBatch : good.index.currentBatch,
            },
            tokenUsage: {
              ...good.tokenUsage,
              ...('totalTokens' in change ? { totalTokens: change.totalTokens } : {}),
            },
          };
    expect(() => restoreConversation(bad, 'parent')).toThrow(
      expect.objectContaining({
        code: 'CONVERSATION_MANAGER_MERGE_FAILED',
        message: expect.stringMatching(reason),
      }),
    );
  });
});
