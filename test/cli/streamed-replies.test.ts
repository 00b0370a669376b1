/**
 * How run's progress prints streamed replies: under the node's name, a word at a time for one
 * reply, whole lines for replies of other nodes running meanwhile, never two replies on one line;
 * other progress lines end an open reply line first; plain text and newlines only.
 */
import { describe, expect, it } from 'vitest';
import { streamedReplyPrinter } from '../../cli/streamed-replies.ts';
import type { ReplyTextEntry } from '../../functions/handlers/deps.ts';

function printer(places: Record<string, string> = {}) {
  let stderr = '';
  const io = { stdout: () => {}, stderr: (text: string) => (stderr += text), readFile: async () => '' };
  const replies = streamedReplyPrinter(io, (threadId) => places[threadId] ?? '');
  let restartNext = new Set<string>();
  const piece = (nodeId: string, text: string, more: Partial<ReplyTextEntry> = {}) => {
    const threadId = more.threadId ?? 't';
    const key = `${threadId}/${nodeId}`;
    const first = !restartNext.has(key);
    restartNext = new Set([...restartNext, key]);
    replies.onReplyText({
      executionId: 'e',
      threadId,
      nodeId,
      step: 2,
      reply: 0,
      restart: first,
      text,
      ...more,
    });
  };
  return { replies, piece, stderr: () => stderr };
}

describe('streamed reply lines', () => {
  it('adds words to the node line, starts a line at each newline, and drops trailing spaces at line ends', () => {
    const { replies, piece, stderr } = printer();
    replies.io.stderr('  → talk\n');
    for (const word of ['Hello ', 'there,\n', '\n', 'friend. ']) piece('talk', word);
    replies.onNodeDone('t', 'talk');
    replies.io.stderr('  ✓ talk\n');
    expect(stderr()).toBe('  → talk\n    talk │ Hello there,\n    talk │\n    talk │ friend.\n  ✓ talk\n');
  });

  it('streams one reply live and prints the others of parallel branches by whole lines, labelled by place', () => {
    const { replies, piece, stderr } = printer({ a: ' [path facts]', b: ' [path risks]' });
    piece('facts', 'Facts: one ', { threadId: 'a' });
    piece('risks', 'Risks: a ', { threadId: 'b' });
    piece('facts', 'two ', { threadId: 'a' });
    piece('risks', 'single\nregion; ', { threadId: 'b' });
    replies.onNodeDone('b', 'risks');
    replies.io.stderr('  ✓ risks [path risks]\n');
    piece('facts', 'three.', { threadId: 'a' });
    replies.onNodeDone('a', 'facts');
    expect(stderr().split('\n')).toEqual([
      '    facts [path facts] │ Facts: one two',
      '    risks [path risks] │ Risks: a single',
      '    risks [path risks] │ region;',
      '  ✓ risks [path risks]',
      '    facts [path facts] │ three.',
      '',
    ]);
  });

  it('lets the next waiting reply stream live once the live one ends', () => {
    const { replies, piece, stderr } = printer();
    piece('one', 'First ');
    piece('two', 'Second ', { threadId: 'u' });
    replies.onNodeDone('t', 'one');
    piece('two', 'goes on', { threadId: 'u' });
    expect(stderr()).toBe('    one │ First\n    two │ Second goes on');
  });

  it('says when a reply starts over, and escapes control characters of the reply', () => {
    const { replies, piece, stderr } = printer();
    piece('talk', 'Half \u001b[31m');
    replies.onReplyText({
      executionId: 'e',
      threadId: 't',
      nodeId: 'talk',
      step: 2,
      reply: 0,
      restart: true,
      text: '',
    });
    piece('talk', 'Whole\ttext');
    expect(stderr()).toBe(
      '    talk │ Half \\u001b[31m\n    talk │ ↻ the reply starts over\n    talk │ Whole  text',
    );
  });

  it('starts the next reply of a request (after its tool calls) on a line of its own', () => {
    const { piece, stderr } = printer();
    piece('agent', 'Looking it up.');
    piece('agent', 'Found', { reply: 1, restart: true });
    piece('agent', ' it.', { reply: 1, restart: false });
    expect(stderr()).toBe('    agent │ Looking it up.\n    agent │ Found it.');
  });
});
