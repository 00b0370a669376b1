import { describe, expect, it } from 'vitest';
import {
  createConversation,
  estimateTokens,
  isTokenLimitExceeded,
  recordTokenUsage,
  withTokenLimit,
} from '../../../engine/conversation/index.ts';

const fresh = (tokenLimit?: number, warningThreshold?: number) =>
  createConversation({ threadId: 't', logId: 'l', tokenLimit, warningThreshold });

describe('recordTokenUsage', () => {
  it('adds usage and keeps totals consistent', () => {
    const { state, events } = recordTokenUsage(fresh(), { promptTokens: 10, completionTokens: 5 });
    const again = recordTokenUsage(state, { promptTokens: 1, completionTokens: 2 }).state;
    expect(again.tokenUsage).toEqual({ promptTokens: 11, completionTokens: 7, totalTokens: 18 });
    expect(events).toEqual([]);
  });

  it('warns once when crossing the default 80% threshold, then reports exceeded past the limit', () => {
    let state = fresh(100);
    const seen: string[][] = [];
    for (const total of [50, 29, 1, 10, 10, 1]) {
      const result = recordTokenUsage(state, { promptTokens: total, completionTokens: 0 });
      state = result.state;
      seen.push(result.events);
    }
    // totals: 50, 79, 80 (warning), 90, 100 (at the limit: not exceeded), 101 (exceeded)
    expect(seen).toEqual([[], [], ['TOKEN_LIMIT_WARNING'], [], [], ['TOKEN_LIMIT_EXCEEDED']]);
    expect(isTokenLimitExceeded(state)).toBe(true);
    expect(recordTokenUsage(state, { promptTokens: 0, completionTokens: 1 }).events).toEqual([
      'TOKEN_LIMIT_EXCEEDED',
    ]);
  });

  it('raises both events when one call jumps past the limit, and honours a custom threshold', () => {
    expect(recordTokenUsage(fresh(100), { promptTokens: 90, completionTokens: 20 }).events).toEqual([
      'TOKEN_LIMIT_WARNING',
      'TOKEN_LIMIT_EXCEEDED',
    ]);
    expect(recordTokenUsage(fresh(100, 0.5), { promptTokens: 49, completionTokens: 1 }).events).toEqual([
      'TOKEN_LIMIT_WARNING',
    ]);
  });

  it('never raises events without a limit, and rejects bad counts', () => {
    expect(recordTokenUsage(fresh(), { promptTokens: 1e9, completionTokens: 0 }).events).toEqual([]);
    expect(() => recordTokenUsage(fresh(), { promptTokens: -1, completionTokens: 0 })).toThrow(
      expect.objectContaining({ code: 'INVALID_TOKEN_USAGE' }),
    );
  });

  it('withTokenLimit sets a limit on an existing conversation and keeps its usage', () => {
    const used = recordTokenUsage(fresh(), { promptTokens: 70, completionTokens: 0 }).state;
    const limited = withTokenLimit(used, { tokenLimit: 100 });
    expect(limited.tokenUsage).toEqual({
      promptTokens: 70,
      completionTokens: 0,
      totalTokens: 70,
      limit: 100,
    });
    expect(recordTokenUsage(limited, { promptTokens: 10, completionTokens: 0 }).events).toEqual([
      'TOKEN_LIMIT_WARNING',
    ]);
  });
});

describe('estimateTokens', () => {
  it('is about a quarter of the characters', () => {
    expect(estimateTokens([])).toBe(0);
    const text = 'x'.repeat(396);
    expect(estimateTokens([{ role: 'user', content: text }])).toBe(100); // (4 + 396) / 4
    const withCall = estimateTokens([
      { role: 'assistant', content: '', toolCalls: [{ id: '1', name: 'lookup', arguments: { q: 'abc' } }] },
    ]);
    expect(withCall).toBeGreaterThan(estimateTokens([{ role: 'assistant', content: '' }]));
  });
});
