/**
 * What each thread keeps stored (issue 29; functions/stores/stored-bytes.ts): its partition's items as
 * DynamoDB bills their storage, and the S3 objects it owns. Shared content-addressed objects count
 * once: a fork child owns none of what its parent wrote before the FORK, a copy none of its source's,
 * so the threads of a run own every object the run wrote, each exactly once.
 */
import { ListObjectsCommand } from '@aws-sdk/client-s3';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { itemBytes } from '../../functions/aws/write-meter.ts';
import { createStoredBytesReader } from '../../functions/stores/stored-bytes.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
const names = { tableName: 'e2e-stored', bucketName: 'e2e-stored' };
beforeAll(async () => {
  e2e = await startE2e('stored');
});
afterAll(() => e2e.close());

const LONG = 'a long note that is stored by reference '.repeat(12);

const workflow = valid({
  id: 'stored-bytes',
  version: 1,
  variables: [{ name: 'note', type: 'string', scope: 'thread' }],
  profiles: { default: { provider: 'scripted', responses: ['first', 'left', 'right', 'after'] } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'ask', type: 'LLM', config: { prompt: 'Begin' } },
    {
      id: 'keep',
      type: 'VARIABLE',
      config: { variableName: 'note', variableType: 'string', expression: `'${LONG}'` },
    },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a1', 'b1'] },
    },
    { id: 'a1', type: 'LLM', config: { prompt: 'Left' } },
    { id: 'b1', type: 'LLM', config: { prompt: 'Right' } },
    {
      id: 'merge',
      type: 'JOIN',
      config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', mainPathId: 'a' },
    },
    { id: 'tell', type: 'LLM', config: { prompt: 'After: {{note}}' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'keep' },
    { from: 'keep', to: 'split' },
    { from: 'a1', to: 'merge' },
    { from: 'b1', to: 'merge' },
    { from: 'merge', to: 'tell' },
    { from: 'tell', to: 'end' },
  ],
});

/** The thread's partition, read past the stores. */
async function partitionOf(threadId: string): Promise<Record<string, unknown>[]> {
  const { dynamo } = createAwsClients(e2e.services.target, names);
  const page = await dynamo.send(
    new QueryCommand({
      TableName: names.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `THREAD#${threadId}` },
    }),
  );
  return page.Items ?? [];
}

/** Every segment and value object in the bucket, with its size. */
async function storedObjects(): Promise<Map<string, number>> {
  const { s3 } = createAwsClients(e2e.services.target, names);
  const objects = new Map<string, number>();
  for (const prefix of ['segments/', 'values/']) {
    const page = await s3.send(new ListObjectsCommand({ Bucket: names.bucketName, Prefix: prefix }));
    for (const object of page.Contents ?? []) objects.set(object.Key!, object.Size ?? 0);
  }
  return objects;
}

const clients = () => createAwsClients(e2e.services.target, names);

describe('stored bytes per thread', () => {
  it('counts each item as DynamoDB bills it, and each object the run wrote for exactly one thread', async () => {
    const run = await e2e.runtime.prepare(workflow).run({}, { noRetryWaits: true });
    expect(run.status).toBe('COMPLETED');
    const report = await buildInspectReport(
      e2e.runtime,
      run.executionId,
      undefined,
      'all',
      {},
      {
        storedBytes: createStoredBytesReader(clients(), clients()),
      },
    );
    expect(report.threads).toHaveLength(3);
    for (const thread of report.threads) {
      const items = await partitionOf(thread.threadId);
      const billed = items.reduce((sum, item) => sum + itemBytes(item) + 100, 0);
      expect(thread.storedBytes, thread.threadId).toMatchObject({ items: items.length, itemBytes: billed });
      expect(thread.storedBytes!.bytes).toBe(billed + thread.storedBytes!.objectBytes);
    }
    // Root: its conversation's segments and the note's value; each child: its own reply's segment.
    const objects = await storedObjects();
    const owned = report.threads.map((thread) => thread.storedBytes!);
    expect(owned.reduce((sum, bytes) => sum + bytes.objects, 0)).toBe(objects.size);
    expect(owned.reduce((sum, bytes) => sum + bytes.objectBytes, 0)).toBe(
      [...objects.values()].reduce((sum, size) => sum + size, 0),
    );
    for (const child of owned.slice(1)) expect(child.objects).toBeGreaterThanOrEqual(1);

    // Without --bytes, nothing is read for it.
    const plain = await buildInspectReport(e2e.runtime, run.executionId);
    expect(plain.threads.every((thread) => thread.storedBytes === undefined)).toBe(true);
  });

  it("a join over a list takes over its main item's conversation: each object still counts for one thread", async () => {
    const e2eList = await startE2e('stored-list');
    try {
      const list = valid({
        id: 'stored-list',
        version: 1,
        profiles: { default: { provider: 'scripted', responses: ['first', 'x', 'y', 'z', 'after'] } },
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'ask', type: 'LLM', config: { prompt: 'Begin' } },
          {
            id: 'each',
            type: 'FORK',
            config: {
              forkPathIds: ['doc'],
              forkStrategy: 'parallel',
              childNodeIds: ['say'],
              forEach: '{{input.docs}}',
              maxConcurrency: 1,
            },
          },
          { id: 'say', type: 'LLM', config: { prompt: 'About {{item}}' } },
          {
            id: 'merge',
            type: 'JOIN',
            config: { forkPathIds: ['doc'], joinStrategy: 'ALL_COMPLETED', mainItem: 1 },
          },
          { id: 'tell', type: 'LLM', config: { prompt: 'After' } },
          { id: 'end', type: 'END' },
        ],
        edges: [
          { from: 'start', to: 'ask' },
          { from: 'ask', to: 'each' },
          { from: 'say', to: 'merge' },
          { from: 'merge', to: 'tell' },
          { from: 'tell', to: 'end' },
        ],
      });
      const run = await e2eList.runtime.prepare(list).run({ docs: ['x', 'y', 'z'] }, { noRetryWaits: true });
      expect(run.status).toBe('COMPLETED');
      const listNames = { tableName: 'e2e-stored-list', bucketName: 'e2e-stored-list' };
      const listClients = () => createAwsClients(e2eList.services.target, listNames);
      const report = await buildInspectReport(
        e2eList.runtime,
        run.executionId,
        undefined,
        'all',
        {},
        {
          storedBytes: createStoredBytesReader(listClients(), listClients()),
        },
      );
      expect(report.threads).toHaveLength(4);
      const { s3 } = listClients();
      let objects = 0;
      for (const prefix of ['segments/', 'values/']) {
        const page = await s3.send(new ListObjectsCommand({ Bucket: listNames.bucketName, Prefix: prefix }));
        objects += page.Contents?.length ?? 0;
      }
      // Every object once: item 1's reply counts for item 1, not again for the root that took it over.
      const owned = report.threads.map((thread) => thread.storedBytes!.objects);
      expect(owned.reduce((sum, count) => sum + count, 0)).toBe(objects);
    } finally {
      await e2eList.close();
    }
  });

  it('a copy owns none of its source’s objects until it writes its own', async () => {
    const run = await e2e.runtime.prepare(workflow).run({}, { noRetryWaits: true });
    // An edit, so the copy's LLM step writes a conversation of its own (equal content is one object).
    const copy = await e2e.runtime.copyThread(run.threadId, {
      fromNodeId: 'tell',
      edits: [{ kind: 'variable', name: 'note', value: 'short' }],
    });
    const before = await buildInspectReport(
      e2e.runtime,
      copy.id,
      undefined,
      'all',
      {},
      { storedBytes: createStoredBytesReader(clients(), clients()) },
    );
    expect(before.threads[0]!.storedBytes).toMatchObject({ objects: 0, objectBytes: 0 });
    expect(before.threads[0]!.storedBytes!.items).toBe((await partitionOf(copy.id)).length);

    const objectsBefore = await storedObjects();
    const again = await e2e.runtime.prepare(workflow, { startNodeId: 'tell' }).runThread(copy.id, {
      noRetryWaits: true,
    });
    expect(again.status).toBe('COMPLETED');
    const written = [...(await storedObjects()).entries()].filter(([key]) => !objectsBefore.has(key));
    const after = await buildInspectReport(
      e2e.runtime,
      copy.id,
      undefined,
      'all',
      {},
      { storedBytes: createStoredBytesReader(clients(), clients()) },
    );
    expect(after.threads[0]!.storedBytes).toMatchObject({
      objects: written.length,
      objectBytes: written.reduce((sum, [, size]) => sum + size, 0),
    });
    expect(written.length).toBeGreaterThanOrEqual(1);
  });
});
