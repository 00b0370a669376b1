/**
 * Which conversations `inspect` shows, and how much of them: `--last <n>` (with a line for the
 * messages left out), `--no-conversation`, and the conversations of a run's other threads (fork
 * branches, list items): a line says they exist and how to see them, `--all-conversations` shows all.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'map-reduce.json');
const DOCUMENTS = {
  documents: [
    { id: 'q1', text: 'Revenue up.' },
    { id: 'q2', text: 'Costs flat.' },
    { id: 'q3', text: 'Churn down.' },
  ],
};

let dir: string;
let executionId: string;
let root: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-inspect-conversation-'));
  const run = await cli('run', EXAMPLE, '--input', JSON.stringify(DOCUMENTS), '--json');
  expect(run.code, run.stderr).toBe(0);
  ({ executionId, threadId: root } = JSON.parse(run.stdout));
}, 60_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });
const json = async (...args: string[]) => JSON.parse((await cli(...args, '--json')).stdout) as InspectReport;
/** The text from the first conversation on. */
const conversationPart = (stdout: string) => stdout.slice(stdout.indexOf('\nconversation of '));

describe('inspect: conversations', () => {
  it('--last <n> shows the last n messages, with a line saying how many earlier ones are not shown', async () => {
    const text = await cli('inspect', executionId, '--last', '1');
    expect(text.code).toBe(0);
    expect(conversationPart(text.stdout).split('\n').slice(0, 4)).toEqual([
      '',
      `conversation of ${root}:`,
      '  … 1 earlier message of 2 not shown (--last 1)',
      '  [assistant] Overall: the documents agree.',
    ]);
    const report = await json('inspect', executionId, '--last', '1');
    expect(report.conversation).toEqual({
      threadId: root,
      messages: [expect.objectContaining({ role: 'assistant', content: 'Overall: the documents agree.' })],
      omittedMessages: 1,
    });
    // More than there are: all of them, and no line.
    const whole = await cli('inspect', executionId, '--last', '50');
    expect(whole.stdout).not.toContain('not shown (--last');
    expect((await json('inspect', executionId, '--last', '50')).conversation.omittedMessages).toBeUndefined();
  });

  it('--last takes a whole number from 1: anything else is a usage error (INVALID_MESSAGE_COUNT)', async () => {
    for (const bad of ['0', '-2', 'ten', '1.5']) {
      const result = await cli('inspect', executionId, '--last', bad);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `INVALID_MESSAGE_COUNT: --last takes how many of the last messages to show`,
      );
    }
  });

  it('--no-conversation shows none, in text and JSON', async () => {
    const text = await cli('inspect', executionId, '--no-conversation');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`thread ${root}  COMPLETED`);
    expect(text.stdout).not.toContain('conversation');
    const report = await json('inspect', executionId, '--no-conversation');
    expect(Object.keys(report)).not.toContain('conversation');
    expect(report.threads).toHaveLength(4);
    const both = await cli('inspect', executionId, '--no-conversation', '--all-conversations');
    expect(both.code).toBe(2);
  });

  it("says the run's item threads have conversations of their own, and how to see them", async () => {
    const report = await json('inspect', executionId);
    const items = report.threads.filter((thread) => thread.parentThreadId === root).map((t) => t.threadId);
    expect(items).toHaveLength(3);
    const text = await cli('inspect', executionId);
    expect(text.stdout).toContain(
      `\n3 other threads have conversations of their own: stepthread inspect ${items[0]} --data-dir ${join(dir, 'data')} shows the first, --all-conversations every one\n`,
    );
    // That command shows the item's conversation, with the fork path it ran.
    const item = await cli('inspect', items[1]!);
    expect(conversationPart(item.stdout).split('\n').slice(1, 4)).toEqual([
      `conversation of ${items[1]} (path each-doc/doc[1] of ${root}):`,
      '  [user] Summarise document q2: Costs flat.',
      '  [assistant] A short summary of the document.',
    ]);
  });

  it("--all-conversations shows every thread's conversation, root first", async () => {
    const report = await json('inspect', executionId, '--all-conversations', '--last', '1');
    expect(report.conversations?.map((conversation) => conversation.threadId)).toEqual(
      report.threads.map((thread) => thread.threadId),
    );
    expect(report.conversations?.map((conversation) => conversation.messages.map((m) => m.content))).toEqual([
      ['Overall: the documents agree.'],
      ['A short summary of the document.'],
      ['A short summary of the document.'],
      ['A short summary of the document.'],
    ]);
    const text = await cli('inspect', executionId, '--all-conversations');
    expect(text.stdout.match(/^conversation of /gm)).toHaveLength(4);
    expect(text.stdout).toContain('  [user] Summarise document q3: Churn down.\n');
    expect(text.stdout).not.toContain('other threads have conversations');
  });
});
