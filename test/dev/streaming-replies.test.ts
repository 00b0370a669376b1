/** What dev keeps of replies in flight: per node, each reply's text, restarts, bounds, and the order of changes. */
import { describe, expect, it } from 'vitest';
import { createStreamingReplies, MAX_REPLY_CHARS, MAX_STREAMING } from '../../cli/dev/streaming-replies.ts';

const piece = (text: string, more: Record<string, unknown> = {}) => ({
  executionId: 'e',
  threadId: 't',
  nodeId: 'talk',
  step: 2,
  reply: 0,
  restart: false,
  text,
  ...more,
});

describe('streaming replies kept by dev', () => {
  it('appends pieces per reply, starts a reply over on restart, and forgets a node once its step commits', () => {
    const kept = createStreamingReplies();
    kept.add(piece('Hal', { restart: true }));
    kept.add(piece('f'));
    kept.add(piece('', { restart: true }));
    kept.add(piece('Whole'));
    kept.add(piece('Next', { reply: 1, restart: true }));
    expect(kept.snapshot('e').replies).toEqual([
      { executionId: 'e', threadId: 't', nodeId: 'talk', step: 2, replies: ['Whole', 'Next'] },
    ]);
    const before = kept.snapshot('e').seq;
    kept.done('e', 't', 'talk');
    expect(kept.snapshot('e')).toEqual({ seq: before + 1, replies: [] });
  });

  it('keeps the last MAX_REPLY_CHARS of a reply, saying how many were cut, and at most MAX_STREAMING nodes', () => {
    const kept = createStreamingReplies();
    kept.add(piece('x'.repeat(MAX_REPLY_CHARS), { restart: true }));
    kept.add(piece('tail'));
    const [reply] = kept.snapshot('e').replies;
    expect(reply!.replies[0]!.length).toBe(MAX_REPLY_CHARS);
    expect(reply!.replies[0]!.endsWith('xtail')).toBe(true);
    expect(reply!.cutChars).toBe(4);
    for (let i = 0; i <= MAX_STREAMING; i++) kept.add(piece('a', { nodeId: `n${i}`, restart: true }));
    expect(kept.snapshot('e').replies).toHaveLength(MAX_STREAMING);
    kept.ended('e');
    expect(kept.snapshot('e').replies).toEqual([]);
  });

  it('numbers each token event after the last change', () => {
    const kept = createStreamingReplies();
    const first = kept.add(piece('a', { restart: true }));
    kept.done('e', 't', 'talk');
    const second = kept.add(piece('b', { restart: true }));
    expect(second.seq).toBe(first.seq + 2);
    expect(kept.snapshot('e').seq).toBe(second.seq);
  });
});
