import type { ReplyStream } from '../../../../functions/llm/provider.ts';

/** A stream that records what it is given: `text` pieces and `restart` marks, in order. */
export function replyRecorder(): ReplyStream & { seen: string[] } {
  const seen: string[] = [];
  return { seen, text: (delta) => seen.push(delta), restart: () => seen.push('<restart>') };
}
