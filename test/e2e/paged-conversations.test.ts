/**
 * Conversations past a page (32 turns) read from S3 cold, through the pages and tail pages their
 * segments' covers name, exactly as the chain of segments holds them: after every context operation
 * (insert, replace, truncate, filter, clear), in copies taken before each node, and across a fork
 * whose branches each fill a page of their own before the join. The oracle walks the segments' `prev`
 * links one GET at a time, which pages do not touch.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConversation } from '../../engine/conversation/index.ts';
import type { LogPointer, Message } from '../../engine/conversation/types.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import {
  createConversationStore,
  SegmentCache,
  segmentKey,
} from '../../functions/stores/conversation-store.ts';
import { type E2e, plain, startE2e, valid } from './helpers.ts';

let e2e: E2e;
const names = { tableName: 'e2e-paged', bucketName: 'e2e-paged' };
beforeAll(async () => {
  e2e = await startE2e('paged');
});
afterAll(() => e2e.close());

const clients = () => createAwsClients(e2e.services.target, names);

/** The log by the chain walk: every segment from the head back, one GET each, no cover followed. */
async function walkedLog(pointer: LogPointer): Promise<Message[]> {
  const parts: Message[][] = [];
  let id: string | null = pointer.length === 0 ? null : pointer.id;
  while (id !== null) {
    const response = await clients().s3.send(
      new GetObjectCommand({ Bucket: names.bucketName, Key: segmentKey(id) }),
    );
    const segment = JSON.parse(await response.Body!.transformToString()) as {
      prev: string | null;
      messages: Message[];
    };
    parts.unshift(segment.messages);
    id = segment.prev;
  }
  return parts.flat();
}

/** The thread's visible conversation read cold (empty cache, pages), checked against the chain walk. */
async function coldConversation(thread: Thread): Promise<ReturnType<typeof plain>> {
  const log = await createConversationStore(clients(), { cache: new SegmentCache() }).readLog(
    thread.conversation.log,
  );
  expect(log).toEqual(await walkedLog(thread.conversation.log));
  return plain(openConversation(thread.conversation, log).visibleMessages());
}

const chatLoop = (turns: number) => [
  { id: 'turns', type: 'LOOP_START', config: { loopId: 'chat', maxIterations: turns } },
  { id: 'chat', type: 'LLM', config: { prompt: 'turn {{index}}' } },
  { id: 'next', type: 'LOOP_END', config: { loopId: 'chat' } },
];

describe('paged conversations', () => {
  it('context operations read and write over pages: every node, and a copy before each, reads cold as the chain holds it', async () => {
    const processor = (id: string, config: Record<string, unknown>) => ({
      id,
      type: 'CONTEXT_PROCESSOR',
      config,
    });
    const workflow = valid({
      id: 'paged-context',
      version: 1,
      maxSteps: 200,
      profiles: { default: { provider: 'scripted', responses: ['reply'] } },
      nodes: [
        { id: 'start', type: 'START' },
        processor('brief', {
          operation: 'insert',
          insert: { position: 0, messages: [{ role: 'system', content: 'be brief' }] },
        }),
        ...chatLoop(36),
        processor('fix', {
          operation: 'replace',
          replace: { index: 1, message: { role: 'user', content: 'turn zero' } },
        }),
        { id: 'ask1', type: 'LLM', config: { prompt: 'after replace' } },
        processor('recent', { operation: 'truncate', truncate: { keepLast: 6 } }),
        { id: 'ask2', type: 'LLM', config: { prompt: 'after truncate' } },
        processor('users', { operation: 'filter', filter: { roles: ['system', 'user'] } }),
        { id: 'ask3', type: 'LLM', config: { prompt: 'after filter' } },
        processor('wipe', { operation: 'clear', clear: { keepSystemMessage: true } }),
        { id: 'ask4', type: 'LLM', config: { prompt: 'after clear' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        ['start', 'brief'],
        ['brief', 'turns'],
        ['turns', 'chat'],
        ['chat', 'next'],
        ['next', 'fix'],
        ['fix', 'ask1'],
        ['ask1', 'recent'],
        ['recent', 'ask2'],
        ['ask2', 'users'],
        ['users', 'ask3'],
        ['ask3', 'wipe'],
        ['wipe', 'ask4'],
        ['ask4', 'end'],
      ].map(([from, to]) => ({ from, to })),
    });
    const run = await e2e.runtime.prepare(workflow).run();
    expect(run.status, JSON.stringify(run.error)).toBe('COMPLETED');
    const thread = await e2e.thread(run.threadId);
    // 1 insert + 36 turns + replace + 4 asks: the log is past a page.
    expect(thread.conversation.log.length).toBeGreaterThan(64);
    const final = await coldConversation(thread);
    expect(final).toEqual(plain(await e2e.conversation(run.threadId)));
    expect(final).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'after clear' },
      { role: 'assistant', content: 'reply' },
    ]);

    // Before each operation and each LLM after it: the conversation as it was then, from S3 alone.
    const seen: ReturnType<typeof plain>[] = [];
    for (const nodeId of ['fix', 'ask1', 'recent', 'ask2', 'users', 'ask3', 'wipe', 'ask4']) {
      const copy = await e2e.runtime.copyThread(run.threadId, { fromNodeId: nodeId });
      const before = await coldConversation(copy);
      expect(before, nodeId).toEqual(plain(await e2e.runtime.conversationOf(copy)));
      seen.push(before);
    }
    // A copy from a node holds the conversation as that node found it.
    const [beforeFix, afterFix, , afterTruncate, , afterFilter, , afterClear] = seen;
    expect(beforeFix).toHaveLength(1 + 72);
    expect(beforeFix!.slice(0, 3)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'turn 0' },
      { role: 'assistant', content: 'reply' },
    ]);
    expect(afterFix![1]).toEqual({ role: 'user', content: 'turn zero' });
    expect(afterTruncate).toHaveLength(6);
    expect(afterFilter!.some((message) => message.role === 'assistant')).toBe(false);
    expect(afterClear).toEqual([{ role: 'system', content: 'be brief' }]);
  }, 120_000);

  it('a fork after 30 turns: each branch fills a page of its own, the join restores the main path, all read cold', async () => {
    const branch = (path: string, turns: number) =>
      Array.from({ length: turns }, (_, i) => ({
        id: `${path}${i + 1}`,
        type: 'LLM',
        config: { prompt: `${path} turn ${i + 1}` },
      }));
    const paths = { a: 4, b: 3 };
    const workflow = valid({
      id: 'paged-fork',
      version: 1,
      maxSteps: 200,
      profiles: { default: { provider: 'scripted', responses: ['reply'] } },
      nodes: [
        { id: 'start', type: 'START' },
        ...chatLoop(30),
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a1', 'b1'] },
        },
        ...branch('a', paths.a),
        ...branch('b', paths.b),
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', mainPathId: 'a' },
        },
        { id: 'after', type: 'LLM', config: { prompt: 'after the join' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'turns' },
        { from: 'turns', to: 'chat' },
        { from: 'chat', to: 'next' },
        { from: 'next', to: 'split' },
        ...Object.entries(paths).flatMap(([path, turns]) =>
          Array.from({ length: turns }, (_, i) => ({
            from: `${path}${i + 1}`,
            to: i + 1 === turns ? 'merge' : `${path}${i + 2}`,
          })),
        ),
        { from: 'merge', to: 'after' },
        { from: 'after', to: 'end' },
      ],
    });
    const run = await e2e.runtime.prepare(workflow).run();
    expect(run.status, JSON.stringify(run.error)).toBe('COMPLETED');
    const root = await e2e.thread(run.threadId);
    const final = await coldConversation(root);
    expect(final).toEqual(plain(await e2e.conversation(run.threadId)));
    expect(final.slice(60)).toEqual([
      ...[1, 2, 3, 4].flatMap((i) => [
        { role: 'user', content: `a turn ${i}` },
        { role: 'assistant', content: 'reply' },
      ]),
      { role: 'user', content: 'after the join' },
      { role: 'assistant', content: 'reply' },
    ]);
    const children = (await e2e.runtime.stores.threads.listThreadsOfExecution(run.executionId))
      .map(({ thread }) => thread)
      .filter((thread) => thread.id !== run.threadId);
    expect(children).toHaveLength(2);
    for (const child of children) {
      const conversation = await coldConversation(child);
      expect(conversation).toEqual(plain(await e2e.conversation(child.id)));
      // 30 turns, then the branch's own: past the page at turn 32.
      expect(conversation.length).toBeGreaterThanOrEqual(66);
    }
  }, 120_000);
});
