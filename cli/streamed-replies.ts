/**
 * `run`'s progress shows an LLM node's reply as it streams, under the node's `→` line: each line of
 * the reply led by the node (and its place, as progress names it), its words added to the line as
 * they come:
 *
 *     → answer
 *       answer │ Streams are lists
 *       answer │ over time.
 *     ✓ answer (1840 ms)
 *
 * Nothing but text and newlines is written (no cursor movement, no colour), so a log file or a pipe
 * reads the same as the terminal; control characters of the reply itself are shown escaped. Replies
 * of parallel branches take turns line by line: a piece of another node's reply, or any other line
 * (progress, what a CODE node printed), first ends the open line, and the next piece starts a new
 * line under its own node's name, so no line mixes two nodes.
 */
import type { ReplyTextEntry } from '../functions/handlers/deps.ts';
import { visible } from './format.ts';
import type { CliIo } from './io.ts';

export interface StreamedReplies {
  /** The stderr every other line goes through: it ends an open reply line first. */
  readonly io: CliIo;
  /** Prints a piece of a reply. */
  onReplyText(entry: ReplyTextEntry): void;
  /** The node's step committed: what is left of its reply is printed, the next reply may stream live. */
  onNodeDone(threadId: string, nodeId: string): void;
}

/** A node's reply being printed. */
interface Shown {
  /** What leads its lines: `    facts [path facts] │`. */
  lead: string;
  /** The model call of the request it is, and how much of it was printed. */
  reply: number;
  chars: number;
  /** Text of a line not printed yet (a reply that waits its turn prints whole lines only). */
  pending: string;
}

/**
 * `placeOf(threadId)` is how progress names where a thread runs (` [path facts]`, ` (iteration 2)`),
 * so a node running on several threads at once (a list's items) is told apart.
 *
 * One reply at a time streams word by word: the first to start, until its step commits. Replies of
 * other nodes running meanwhile print whole lines as they complete, and the rest once their step
 * commits or their turn comes, so a line is never a mix of words from two replies.
 */
export function streamedReplyPrinter(io: CliIo, placeOf: (threadId: string) => string): StreamedReplies {
  const replies = new Map<string, Shown>();
  /** The reply streaming word by word. */
  let live: string | undefined;
  /** The reply whose line is open (the last thing written did not end it). */
  let open: string | undefined;
  /** The open line's trailing spaces, written only if more of it follows (a line ends with no space). */
  let spaces = '';

  const endOpenLine = () => {
    if (open === undefined) return;
    io.stderr('\n');
    open = undefined;
    spaces = '';
  };
  const text = (raw: string) => visible(raw.replaceAll('\t', '  '));
  const wholeLine = (shown: Shown, line: string) => {
    endOpenLine();
    const words = line.trimEnd();
    io.stderr(words === '' ? `${shown.lead}\n` : `${shown.lead} ${text(words)}\n`);
  };
  /** Adds text (no newline in it) to the live reply's line, starting the line when it is not open. */
  const put = (key: string, shown: Shown, piece: string) => {
    if (piece === '') return;
    if (open !== key) {
      endOpenLine();
      io.stderr(`${shown.lead} `);
      open = key;
    }
    const words = piece.trimEnd();
    if (words !== '') io.stderr(text(spaces + words));
    spaces = words === '' ? spaces + piece : piece.slice(words.length);
  };
  /** A newline of the live reply: ends its line; one on no open line of its own is an empty line. */
  const newline = (key: string, shown: Shown) => {
    if (open === key) endOpenLine();
    else wholeLine(shown, '');
  };
  const goLive = (key: string, shown: Shown) => {
    live = key;
    const pending = shown.pending;
    shown.pending = '';
    put(key, shown, pending);
  };

  return {
    io: {
      ...io,
      stderr: (line) => {
        endOpenLine();
        io.stderr(line);
      },
    },
    onReplyText(entry) {
      const key = `${entry.threadId}\u0000${entry.nodeId}`;
      let shown = replies.get(key);
      if (shown === undefined) {
        shown = { lead: '', reply: entry.reply, chars: 0, pending: '' };
        replies.set(key, shown);
      }
      shown.lead = `    ${entry.nodeId}${placeOf(entry.threadId)} │`;
      if (entry.restart) {
        // A reply starting over after some of it was shown (a retry): say so; what follows is new.
        if (shown.chars > 0 && entry.reply <= shown.reply) wholeLine(shown, '↻ the reply starts over');
        // The next reply of the request (after its tool calls) starts a line of its own.
        else if (open === key) endOpenLine();
        Object.assign(shown, { reply: entry.reply, chars: 0, pending: '' });
      }
      shown.chars += entry.text.length;
      live ??= key;
      if (live === key) {
        entry.text.split(/\r?\n/).forEach((piece, i) => {
          if (i > 0) newline(key, shown);
          put(key, shown, piece);
        });
        return;
      }
      const lines = (shown.pending + entry.text).split(/\r?\n/);
      shown.pending = lines.pop()!;
      for (const line of lines) wholeLine(shown, line);
    },
    onNodeDone(threadId, nodeId) {
      const key = `${threadId}\u0000${nodeId}`;
      const shown = replies.get(key);
      if (shown === undefined) return;
      replies.delete(key);
      if (shown.pending !== '') wholeLine(shown, shown.pending);
      if (open === key) endOpenLine();
      if (live !== key) return;
      live = undefined;
      const [next] = replies;
      if (next) goLive(...next);
    },
  };
}
