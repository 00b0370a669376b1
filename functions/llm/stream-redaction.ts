/**
 * A streamed reply's text redacted as it passes, as the final message is: a server that echoes the
 * API key could send it split over two chunks, so the last characters (one fewer than the longest
 * form of the key) are held back until the next chunk, or the end, shows they are no part of it.
 */
import { Redactor, secretForms } from '../redaction/redactor.ts';
import type { ReplyStream } from './provider.ts';

export interface RedactingStream extends ReplyStream {
  /** Gives what is still held back: the stream has ended. */
  flush(): void;
}

export function redactingStream(stream: ReplyStream, secret: string | undefined): RedactingStream {
  if (secret === undefined || secret === '') return { ...bound(stream), flush: () => {} };
  const redactor = new Redactor([secret]);
  const hold = Math.max(...secretForms(secret).map((form) => form.length)) - 1;
  let pending = '';
  return {
    text(delta) {
      const redacted = redactor.text(pending + delta);
      const cut = Math.max(0, redacted.length - hold);
      pending = redacted.slice(cut);
      if (cut > 0) stream.text(redacted.slice(0, cut));
    },
    restart() {
      pending = '';
      stream.restart();
    },
    flush() {
      const rest = redactor.text(pending);
      pending = '';
      if (rest !== '') stream.text(rest);
    },
  };
}

function bound(stream: ReplyStream): ReplyStream {
  return { text: (delta) => stream.text(delta), restart: () => stream.restart() };
}
