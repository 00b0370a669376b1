/**
 * Retention on the embedded runtime (functions/local/prune.ts): ended runs go with their items and
 * objects; a copy of a pruned thread still runs and reads its conversation; a run in progress is
 * skipped; a dry run deletes nothing. Real dynalite and s3rver, counted through their APIs.
 */
import { ListObjectsCommand } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { longRunWorkflow } from '../../bench/long-runs.ts';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import { openConversation } from '../../engine/conversation/index.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type PruneReport, pruneEndedRuns } from '../../functions/local/prune.ts';
import {
  createConversationStore,
  PAGE_PREFIX,
  SegmentCache,
} from '../../functions/stores/conversation-store.ts';
import { assistant, type E2e, plain, startE2e, user, valid } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e | undefined;
let names = { tableName: '', bucketName: '' };
let count = 0;

async function fresh(): Promise<E2e> {
  count += 1;
  const name = `prune-${count}`;
  names = { tableName: `e2e-${name}`, bucketName: `e2e-${name}` };
  e2e = await startE2e(name);
  return e2e;
}
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

const clients = () => createAwsClients(e2e!.services.target, names);

/** What the data holds, as DynamoDB and S3 count it. */
async function stored(): Promise<{ items: number; objects: number }> {
  const { dynamo, s3 } = clients();
  let items = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new ScanCommand({ TableName: names.tableName, Select: 'COUNT', ExclusiveStartKey: startKey }),
    );
    items += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  let objects = 0;
  let marker: string | undefined;
  for (let more = true; more; ) {
    const page = await s3.send(new ListObjectsCommand({ Bucket: names.bucketName, Marker: marker }));
    objects += page.Contents?.length ?? 0;
    marker = page.Contents?.at(-1)?.Key;
    more = page.IsTruncated === true;
  }
  return { items, objects };
}

/** The thread's visible conversation, read through an empty cache: what S3 holds, as a fresh Lambda reads it. */
async function coldConversation(threadId: string): Promise<ReturnType<typeof plain>> {
  const { thread } = await e2e!.runtime.stores.threads.getThread(threadId);
  const log = await createConversationStore(clients(), { cache: new SegmentCache() }).readLog(
    thread.conversation.log,
  );
  return plain(openConversation(thread.conversation, log).visibleMessages());
}

/** The pages and tail pages the bucket holds. */
async function pageKeys(): Promise<string[]> {
  const page = await clients().s3.send(
    new ListObjectsCommand({ Bucket: names.bucketName, Prefix: PAGE_PREFIX }),
  );
  return (page.Contents ?? []).map((object) => object.Key!);
}

/** A prune as if run a minute from now, of every run that ended before then. */
function prune(options: { dryRun?: boolean } = {}): Promise<PruneReport> {
  const later = new Date(Date.now() + 60_000);
  return pruneEndedRuns(clients(), { endedBefore: later, now: later, ...options });
}

const workflow = () =>
  forkWorkflow('prunable', { paths: ['a', 'b'], join: { mainPathId: 'a' }, fallback: ['again'] });

async function notFound(id: string): Promise<string> {
  try {
    await buildInspectReport(e2e!.runtime, id);
  } catch (error) {
    return (error as { code: string }).code;
  }
  return 'found';
}

describe('prune', () => {
  it('removes an ended run whole: its items and objects go, the bytes are counted, inspect says not found', async () => {
    await fresh();
    const empty = await stored();
    const run = await e2e!.runtime.prepare(workflow()).run();
    expect(run.status).toBe('COMPLETED');
    const before = await stored();
    expect(before.objects).toBeGreaterThan(empty.objects);

    const report = await prune();
    expect(report.pruned).toMatchObject([
      { rootThreadId: run.threadId, executionIds: [run.executionId], status: 'COMPLETED', threads: 3 },
    ]);
    expect(report.skipped).toEqual([]);
    expect(report.pinned).toEqual([]);
    const after = await stored();
    expect(after).toEqual(empty);
    expect(report.removed).toMatchObject({
      runs: 1,
      threads: 3,
      items: before.items - after.items,
      objects: before.objects - after.objects,
    });
    expect(report.removed.itemBytes).toBeGreaterThan(0);
    expect(report.removed.objectBytes).toBeGreaterThan(0);
    expect(report.removed.bytes).toBe(report.removed.itemBytes + report.removed.objectBytes);
    await expect(e2e!.runtime.stores.threads.getThread(run.threadId)).rejects.toMatchObject({
      code: 'THREAD_NOT_FOUND',
    });
    expect(await notFound(run.threadId)).toBe('EXECUTION_NOT_FOUND');
    expect(await notFound(run.executionId)).toBe('EXECUTION_NOT_FOUND');
  });

  it('--dry-run reports the same and deletes nothing', async () => {
    await fresh();
    await e2e!.runtime.prepare(workflow()).run();
    const before = await stored();
    const dry = await prune({ dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.removed.items).toBeGreaterThan(0);
    expect(await stored()).toEqual(before);
    const real = await prune();
    expect(real.removed).toEqual(dry.removed);
    expect((await stored()).items).toBe(before.items - real.removed.items);
  });

  it('keeps what copies read: a copy of a pruned thread still runs, reads its conversation and time travels', async () => {
    await fresh();
    const source = await e2e!.runtime.prepare(workflow()).run();
    const conversation = plain(await e2e!.conversation(source.threadId));
    const journal = await e2e!.runtime.stores.threads.readJournal(source.threadId);
    const copy = await e2e!.runtime.copyThread(source.threadId, { fromNodeId: 'after' });

    const report = await prune();
    expect(report.pruned.map((run) => run.rootThreadId)).toEqual([source.threadId]);
    expect(report.pinned).toEqual([
      { threadId: source.threadId, steps: copy.metadata.copiedAtStep! + 1, readBy: [copy.id] },
    ]);
    expect(report.objectsKept.shared).toBeGreaterThan(0);
    expect(await notFound(source.threadId)).toBe('EXECUTION_NOT_FOUND');

    // The copy (CREATED, so not its source's run) still holds its source's history and runs.
    const copiedJournal = await e2e!.runtime.stores.threads.readJournal(copy.id);
    expect(copiedJournal.executionHistory).toEqual(
      journal.executionHistory.slice(0, copy.metadata.copiedAtStep),
    );
    const rerun = await e2e!.runtime.prepare(workflow(), { startNodeId: 'after' }).runThread(copy.id);
    expect(rerun.error).toBeUndefined();
    expect(rerun.output).toEqual(source.output);
    expect(plain(await e2e!.conversation(copy.id))).toEqual(conversation);
    expect(conversation.slice(-2)).toEqual([user('after prompt'), assistant('after reply')]);
    expect((await buildInspectReport(e2e!.runtime, copy.id)).threads[0]).toMatchObject({
      threadId: copy.id,
      status: 'COMPLETED',
      copiedFrom: source.threadId,
    });
    // Time travel into the source's part of the copy's history: a copy of the copy from there.
    const again = await e2e!.runtime.copyThread(copy.id, { fromStep: 1 });
    const replayed = await e2e!.runtime.prepare(workflow(), { startNodeId: 'after' }).runThread(again.id);
    expect(replayed.output).toEqual(source.output);
    expect(plain(await e2e!.conversation(again.id))).toEqual(conversation);

    // Once no copy is left, what they kept goes too: nothing is left behind.
    const last = await prune();
    expect(last.pruned).toHaveLength(2);
    expect(last.pinned).toEqual([]);
    expect(await stored()).toEqual({ items: 0, objects: 0 });
  });

  it('keeps the pages a copy reads: a copy taken mid-page of a pruned 45-turn chat reads its conversation cold', async () => {
    await fresh();
    const chat = longRunWorkflow('chat', 45);
    const source = await e2e!.runtime.prepare(chat).run();
    expect(source.status).toBe('COMPLETED');
    const conversation = await coldConversation(source.threadId);
    expect(conversation).toHaveLength(90);
    // Before turn 39's LLM step (step 3 × 39): 38 turns, a page (turns 1–32) and a tail page (33–37).
    const copy = await e2e!.runtime.copyThread(source.threadId, { fromStep: 3 * 39 });
    expect(await coldConversation(copy.id)).toEqual(conversation.slice(0, 76));
    const pagesBefore = await pageKeys();
    // The source's: pages 1 and tail pages 5…30 (turns 1–32), tail pages 37 and 42.
    expect(pagesBefore).toHaveLength(9);

    const report = await prune();
    expect(report.pruned.map((run) => run.rootThreadId)).toEqual([source.threadId]);
    // The copy pins its source's head (its journal reads it), whose log reaches every page by its
    // segments' covers: all stay, and the copy reads its 38 turns from S3 alone.
    expect(report.objectsKept.shared).toBeGreaterThan(0);
    expect(await pageKeys()).toEqual(pagesBefore);
    expect(await coldConversation(copy.id)).toEqual(conversation.slice(0, 76));

    // The copy runs its last 7 turns and ends with the conversation its source had.
    const rerun = await e2e!.runtime.prepare(chat, { startNodeId: 'chat' }).runThread(copy.id);
    expect(rerun.error).toBeUndefined();
    expect(await coldConversation(copy.id)).toEqual(conversation);
    // Once nothing names them, the pages go with the rest.
    const last = await prune();
    expect(last.pruned.map((run) => run.rootThreadId)).toEqual([copy.id]);
    expect(await stored()).toEqual({ items: 0, objects: 0 });
  }, 120_000);

  it('skips a run in progress (here waiting at a question) and prunes the ended ones beside it', async () => {
    await fresh();
    const ended = await e2e!.runtime.prepare(workflow()).run();
    const ask = valid({
      id: 'asking',
      version: 1,
      variables: [{ name: 'answer', type: 'any', scope: 'thread' }],
      profiles: { default: { provider: 'scripted', responses: ['Draft reply.'] } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'draft', type: 'LLM', config: { prompt: 'Draft a reply.' } },
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { outputVariable: 'answer', userInteractionType: 'ask_for_approval', showMessage: 'Send?' },
        },
        { id: 'end', type: 'END', config: { output: '{{answer}}' } },
      ],
      edges: [
        { from: 'start', to: 'draft' },
        { from: 'draft', to: 'ask' },
        { from: 'ask', to: 'end' },
      ],
    });
    let during: PruneReport | undefined;
    const waiting = await e2e!.runtime.prepare(ask).run(
      {},
      {
        answerInteraction: async (interaction) => {
          during = await prune();
          expect(await e2e!.runtime.stores.threads.getThread(interaction.threadId)).toBeDefined();
          return { kind: 'approve' };
        },
      },
    );
    expect(during?.skipped).toEqual([
      {
        executionId: waiting.executionId,
        rootThreadId: waiting.threadId,
        workflowId: 'asking',
        status: 'RUNNING',
      },
    ]);
    expect(during?.pruned.map((run) => run.rootThreadId)).toEqual([ended.threadId]);
    // Objects the waiting run wrote stay (they are its, or newer than its start).
    expect(waiting.status).toBe('COMPLETED');
    expect(waiting.output).toBe(true);
    expect(plain(await e2e!.conversation(waiting.threadId))).toEqual([
      user('Draft a reply.'),
      assistant('Draft reply.'),
      user('Approved.'),
    ]);
    expect((await buildInspectReport(e2e!.runtime, waiting.executionId)).threads[0]?.status).toBe(
      'COMPLETED',
    );
  });
});
