import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { ExecutionHistoryEntry, NodeResult } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands, type Meter, meterClient } from '../../functions/aws/meter.ts';
import { createWireDocumentClient } from '../../functions/aws/wire-clients.ts';
import { itemBytes } from '../../functions/aws/write-meter.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { createExecutionIndex, type ExecutionIndex } from '../../functions/stores/execution-index.ts';
import {
  type BranchOutcome,
  createJoinStore,
  type JoinStore,
  joinStateOf,
} from '../../functions/stores/join-store.ts';
import { type ItemKey, itemKeys } from '../../functions/stores/table.ts';
import { createThreadStore, type ThreadStore } from '../../functions/stores/thread-store.ts';
import { makeThread } from './fixtures.ts';

const names = { tableName: 'stepthread-threads', bucketName: 'stepthread-threads-unused' };

let services: LocalServices;
let store: ThreadStore;
let executions: ExecutionIndex;
let joins: JoinStore;
let meter: Meter;
let clients: ReturnType<typeof createAwsClients>;

beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true, names });
  clients = createAwsClients(services.target, names);
  store = createThreadStore(clients);
  executions = createExecutionIndex(clients);
  joins = createJoinStore(clients);
  meter = meterClient(clients.dynamo);
});
afterAll(() => services.close());
beforeEach(() => meter.reset());

/** An item as stored, read past the store (and its meter). */
async function rawItem(key: ItemKey): Promise<Record<string, unknown>> {
  const { Item } = await createWireDocumentClient(services.target.dynamoEndpoint).send(
    new GetCommand({ TableName: names.tableName, Key: key, ConsistentRead: true }),
  );
  return Item ?? {};
}

function historyEntry(step: number, nodeId = `node-${step}`): ExecutionHistoryEntry {
  return { nodeId, nodeType: 'LLM', status: 'COMPLETED', at: '2025-01-01T00:00:01.000Z', step };
}

function resultOf(nodeId: string): NodeResult {
  return {
    nodeId,
    nodeType: 'LLM',
    status: 'COMPLETED',
    startedAt: '2025-01-01T00:00:00.000Z',
    endedAt: '2025-01-01T00:00:01.000Z',
  };
}

describe('thread store', () => {
  it('round-trips a thread at version 1', async () => {
    const thread = makeThread('t-roundtrip', { output: { nested: [1, { a: null }] } });
    expect(await store.createThread(thread)).toEqual({ version: 1, created: true });
    expect(await store.getThread('t-roundtrip')).toEqual({ thread, version: 1 });
  });

  it('reports a missing thread as THREAD_NOT_FOUND', async () => {
    await expect(store.getThread('t-missing')).rejects.toMatchObject({ code: 'THREAD_NOT_FOUND' });
  });

  it('makes a repeated create with identical content a no-op, and different content a conflict', async () => {
    const thread = makeThread('t-idem');
    await store.createThread(thread);
    await store.updateThread('t-idem', 1, { set: { status: 'PAUSED' } });
    // Same content with keys in another order: still the same create (e.g. a Lambda retry).
    const reordered = Object.fromEntries(Object.entries(thread).reverse()) as typeof thread;
    expect(await store.createThread(reordered)).toEqual({ version: 2, created: false });
    await expect(store.createThread({ ...thread, input: { ticket: 'other' } })).rejects.toMatchObject({
      code: 'CREATE_CONFLICT',
    });
    expect((await store.getThread('t-idem')).thread.status).toBe('PAUSED');
  });

  it('commits a change as one PutItem (its step record) and one UpdateItem: set, remove, list appends', async () => {
    await store.createThread(makeThread('t-update'));
    const result: NodeResult = {
      nodeId: 'llm-1',
      nodeType: 'LLM',
      status: 'COMPLETED',
      output: { text: 'hi' },
      startedAt: '2025-01-01T00:00:00.000Z',
      endedAt: '2025-01-01T00:00:01.000Z',
    };
    meter.reset();
    const { version } = await store.updateThread('t-update', 1, {
      set: { status: 'COMPLETED', output: { answer: 42 }, endTime: '2025-01-01T00:00:02.000Z', step: 1 },
      remove: ['currentNodeId'],
      append: { errors: [{ code: 'JOIN_FAILED', message: 'x' }] },
      step: { step: 1, result, events: [] },
    });
    expect(version).toBe(2);
    expect(meter.snapshot()).toEqual({
      PutItemCommand: { requests: 1, bytes: expect.any(Number) },
      UpdateItemCommand: { requests: 1, bytes: expect.any(Number) },
    });
    await store.putNodeResults('t-update', [result]);

    const { thread, version: read } = await store.getThread('t-update');
    expect(read).toBe(2);
    expect(thread.status).toBe('COMPLETED');
    expect(thread.output).toEqual({ answer: 42 });
    expect(thread.currentNodeId).toBeUndefined();
    // Results and history live in their own items, read on demand.
    expect(thread.nodeResults).toEqual({});
    expect(await store.getNodeResults(['t-update'], ['llm-1'])).toEqual({ 'llm-1': result });
    expect((await store.readJournal('t-update')).executionHistory).toEqual([historyEntry(1, 'llm-1')]);
    expect(thread.errors).toEqual([{ code: 'JOIN_FAILED', message: 'x' }]);
  });

  it('keeps events recorded outside steps off the head: each batch in an item of its own, the head names the latest', async () => {
    const threadId = 't-continued';
    const created = makeThread(threadId);
    await store.createThread(created);
    const continued = (i: number): StepthreadEvent => ({
      type: 'THREAD_CONTINUED',
      threadId,
      workflowId: 'triage',
      at: '2025-01-01T00:00:00.000Z',
      nodeId: 'le',
      // Fixed widths, so sizes compare.
      fromExecutionId: `x-${String(i).padStart(3, '0')}`,
      toExecutionId: `x-${String(i + 1).padStart(3, '0')}`,
      step: 100_000 + i,
    });
    const headBytes: number[] = [];
    let version = 1;
    for (let i = 0; i < 40; i += 1) {
      meter.reset();
      ({ version } = await store.updateThread(threadId, version, {
        set: { currentNodeId: `le-${i % 10}` },
        append: { events: [continued(i)] },
      }));
      headBytes.push(itemBytes(await rawItem(itemKeys.thread(threadId))));
      // One GetItem of the head's version and latest batch key, the batch (PutItem), the update.
      expect(meter.snapshot()).toEqual({
        GetItemCommand: { requests: 1, bytes: expect.any(Number) },
        PutItemCommand: { requests: 1, bytes: expect.any(Number) },
        UpdateItemCommand: { requests: 1, bytes: expect.any(Number) },
      });
    }
    // The head holds none of the events: the 40th head is the size of the 1st.
    expect(headBytes[39]).toBe(headBytes[0]);
    expect(JSON.stringify(await rawItem(itemKeys.thread(threadId)))).not.toContain('THREAD_CONTINUED');
    const { thread } = await store.getThread(threadId);
    expect(thread.events).toEqual(created.events);
    const journal = await store.readJournal(threadId);
    expect(journal.events).toEqual([
      ...(created.events ?? []),
      ...Array.from({ length: 40 }, (_, i) => continued(i)),
    ]);

    // A stale update changes nothing.
    await expect(
      store.updateThread(threadId, version - 1, { append: { events: [continued(99)] } }),
    ).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
    expect((await store.readJournal(threadId)).events).toHaveLength(journal.events.length);
  });

  it('records events outside a step on a head it read without reading it again; a head moved on since still refuses them', async () => {
    const threadId = 't-known-head';
    await store.createThread(makeThread(threadId));
    const paused = (at: string): StepthreadEvent => ({
      type: 'THREAD_PAUSED',
      threadId,
      workflowId: 'triage',
      at,
      from: 'RUNNING',
      to: 'PAUSED',
    });
    // Read (as a step or a branch report loads its thread), then events recorded outside a step.
    let { version } = await store.getThread(threadId);
    meter.reset();
    ({ version } = await store.updateThread(threadId, version, {
      append: { events: [paused('2025-01-01T00:00:01.000Z')] },
    }));
    // The batch (PutItem) and the update: its step and tail were those of the head read.
    expect(meter.snapshot()).toEqual({
      PutItemCommand: { requests: 1, bytes: expect.any(Number) },
      UpdateItemCommand: { requests: 1, bytes: expect.any(Number) },
    });
    // Followed through its own update: the next batch chains after the first, again with no read.
    meter.reset();
    ({ version } = await store.updateThread(threadId, version, {
      append: { events: [paused('2025-01-01T00:00:02.000Z')] },
    }));
    expect(meter.requests('GetItemCommand')).toBe(0);
    // Another writer moves the head on: the store's facts are of an older version. Its batch is
    // written, then its update refused; the batch is on no chain and never read.
    const other = createThreadStore(clients);
    await other.updateThread(threadId, version, { set: { currentNodeId: 'elsewhere' } });
    await expect(
      store.updateThread(threadId, version, { append: { events: [paused('2025-01-01T00:00:09.000Z')] } }),
    ).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
    const journal = await store.readJournal(threadId);
    expect(journal.events.filter((event) => event.type === 'THREAD_PAUSED').map((event) => event.at)).toEqual(
      ['2025-01-01T00:00:01.000Z', '2025-01-01T00:00:02.000Z'],
    );
  });

  it('reads no batch whose update never committed, and places each batch between the steps it came between', async () => {
    const threadId = 't-batches';
    const created = makeThread(threadId);
    await store.createThread(created);
    const status = (to: 'PAUSED' | 'RUNNING', at: string): StepthreadEvent => ({
      type: to === 'PAUSED' ? 'THREAD_PAUSED' : 'THREAD_RESUMED',
      threadId,
      workflowId: 'triage',
      at,
      from: to === 'PAUSED' ? 'RUNNING' : 'PAUSED',
      to,
    });
    const started = (step: number): StepthreadEvent => ({
      type: 'NODE_STARTED',
      threadId,
      workflowId: 'triage',
      nodeId: `node-${step}`,
      nodeType: 'LLM',
      at: '2025-01-01T00:00:00.000Z',
    });
    const stepChange = (step: number) => ({
      set: { step },
      step: { step, result: resultOf(`node-${step}`), events: [started(step)] },
    });
    let { version } = await store.updateThread(threadId, 1, stepChange(1));
    // An update dies after writing its batch, before its commit: the next update (a step) takes its version.
    const dying = { ...clients, dynamo: createWireDocumentClient(services.target.dynamoEndpoint) };
    aroundCommands(dying.dynamo, ({ commandName }, next) =>
      commandName === 'UpdateItemCommand' ? Promise.reject(new Error('process killed')) : next(),
    );
    await expect(
      createThreadStore(dying).updateThread(threadId, version, {
        append: { events: [status('PAUSED', '2025-01-01T00:00:09.000Z')] },
      }),
    ).rejects.toThrow('process killed');
    ({ version } = await store.updateThread(threadId, version, stepChange(2)));
    ({ version } = await store.updateThread(threadId, version, {
      append: { events: [status('PAUSED', '2025-01-01T00:00:02.000Z')] },
    }));
    ({ version } = await store.updateThread(threadId, version, {
      append: { events: [status('RUNNING', '2025-01-01T00:00:03.000Z')] },
    }));
    ({ version } = await store.updateThread(threadId, version, stepChange(3)));
    const order = (await store.readJournal(threadId)).events.map((event) => `${event.type} ${event.at}`);
    expect(order).toEqual([
      ...(created.events ?? []).map((event) => `${event.type} ${event.at}`),
      'NODE_STARTED 2025-01-01T00:00:00.000Z',
      'NODE_STARTED 2025-01-01T00:00:00.000Z',
      'THREAD_PAUSED 2025-01-01T00:00:02.000Z',
      'THREAD_RESUMED 2025-01-01T00:00:03.000Z',
      'NODE_STARTED 2025-01-01T00:00:00.000Z',
    ]);
    // A window of the last step still lists every batch, before that step.
    const last = await store.readJournal(threadId, { window: (length) => [{ from: length, to: length }] });
    expect(last.events.map((event) => event.type)).toEqual([
      ...(created.events ?? []).map((event) => event.type),
      'THREAD_PAUSED',
      'THREAD_RESUMED',
      'NODE_STARTED',
    ]);
  });

  it("reads an earlier layout's batches (on the head, and moved off it) and moves the head's off at the next batch", async () => {
    const threadId = 't-legacy-batches';
    const created = makeThread(threadId);
    await store.createThread(created);
    const paused = (at: string): StepthreadEvent => ({
      type: 'THREAD_PAUSED',
      threadId,
      workflowId: 'triage',
      at,
      from: 'RUNNING',
      to: 'PAUSED',
    });
    // As the earlier layout left it: one batch moved to EVENTS#<version>, the latest on the head.
    const raw = createWireDocumentClient(services.target.dynamoEndpoint);
    await raw.send(
      new PutCommand({
        TableName: names.tableName,
        Item: {
          ...itemKeys.events(threadId, 2),
          kind: 'events',
          events: [paused('2025-01-01T00:00:02.000Z')],
        },
      }),
    );
    await raw.send(
      new UpdateCommand({
        TableName: names.tableName,
        Key: itemKeys.thread(threadId),
        UpdateExpression: 'SET recentEvents = :e, recentEventsAt = :at, version = :v',
        ExpressionAttributeValues: { ':e': [paused('2025-01-01T00:00:03.000Z')], ':at': 3, ':v': 3 },
      }),
    );
    const at = (events: StepthreadEvent[]) => events.map((event) => event.at);
    const createdAt = at(created.events ?? []);
    expect(at((await store.readJournal(threadId)).events)).toEqual([
      ...createdAt,
      '2025-01-01T00:00:02.000Z',
      '2025-01-01T00:00:03.000Z',
    ]);
    expect((await store.getThread(threadId)).thread.events).toEqual(created.events);
    await store.updateThread(threadId, 3, { append: { events: [paused('2025-01-01T00:00:04.000Z')] } });
    const head = await rawItem(itemKeys.thread(threadId));
    expect(head).not.toHaveProperty('recentEvents');
    expect(head).not.toHaveProperty('recentEventsAt');
    expect(at((await store.readJournal(threadId)).events)).toEqual([
      ...createdAt,
      '2025-01-01T00:00:02.000Z',
      '2025-01-01T00:00:03.000Z',
      '2025-01-01T00:00:04.000Z',
    ]);
  });

  it('refuses a change that touches one field twice, before sending anything', async () => {
    meter.reset();
    await expect(
      store.updateThread('t-update', 3, {
        set: { errors: [] },
        append: { errors: [{ code: 'JOIN_FAILED', message: 'y' }] },
      }),
    ).rejects.toThrow(/errors/);
    expect(meter.requests()).toBe(0);
  });

  it('rejects a stale version with VERSION_CONFLICT and leaves the thread unchanged', async () => {
    await store.createThread(makeThread('t-conflict'));
    await store.updateThread('t-conflict', 1, { set: { currentNodeId: 'a' } });
    await expect(store.updateThread('t-conflict', 1, { set: { currentNodeId: 'b' } })).rejects.toMatchObject({
      code: 'VERSION_CONFLICT',
    });
    expect(await store.getThread('t-conflict')).toMatchObject({ version: 2, thread: { currentNodeId: 'a' } });
    await expect(store.updateThread('t-nope', 1, { set: { currentNodeId: 'b' } })).rejects.toMatchObject({
      code: 'VERSION_CONFLICT',
    });
  });

  it('with reuseWrittenHeads, reads the head its own commit wrote once, without a request', async () => {
    const reusing = createThreadStore(clients, { reuseWrittenHeads: true });
    await reusing.createThread(makeThread('t-reuse'));
    await reusing.updateThread('t-reuse', 1, {
      set: { currentNodeId: 'a', step: 1 },
      step: { step: 1, result: resultOf('a'), events: [] },
    });
    meter.reset();
    const reused = await reusing.getThread('t-reuse', { afterOwnWrite: true });
    expect(meter.requests()).toBe(0);
    expect(reused).toEqual(await store.getThread('t-reuse'));
    expect(reused).toMatchObject({ version: 2, thread: { currentNodeId: 'a', step: 1 } });
    // Once: the next read asks the table; a plain getThread never reuses.
    meter.reset();
    await reusing.getThread('t-reuse', { afterOwnWrite: true });
    expect(meter.requests('GetItemCommand')).toBe(1);
  });

  it('with reuseWrittenHeads, a step run on a stale head neither commits nor replaces a committed record', async () => {
    const reusing = createThreadStore(clients, { reuseWrittenHeads: true });
    await reusing.createThread(makeThread('t-stale'));
    await reusing.updateThread('t-stale', 1, {
      set: { currentNodeId: 'a', step: 1 },
      step: { step: 1, result: resultOf('a'), events: [] },
    });
    const stale = await reusing.getThread('t-stale', { afterOwnWrite: true });
    // Another writer commits step 2 meanwhile.
    await store.updateThread('t-stale', 2, {
      set: { currentNodeId: 'b', step: 2 },
      step: { step: 2, result: resultOf('b'), events: [] },
    });
    await expect(
      reusing.updateThread('t-stale', stale.version, {
        set: { currentNodeId: 'x', step: 2 },
        step: { step: 2, result: resultOf('x'), events: [] },
      }),
    ).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
    expect((await store.getStep('t-stale', 2))?.result.nodeId).toBe('b');
    expect(await store.getThread('t-stale')).toMatchObject({ version: 3, thread: { currentNodeId: 'b' } });

    // A record the head has not committed (a dead attempt's) is replaced, and the step commits.
    await store.putStepRecord('t-stale', { step: 3, result: resultOf('dead'), events: [] });
    await reusing.updateThread('t-stale', 3, {
      set: { currentNodeId: 'c', step: 3 },
      step: { step: 3, result: resultOf('c'), events: [] },
    });
    expect((await store.getStep('t-stale', 3))?.result.nodeId).toBe('c');
    expect(await reusing.getThread('t-stale', { afterOwnWrite: true })).toMatchObject({
      version: 4,
      thread: { currentNodeId: 'c', step: 3 },
    });
  });

  it('sends the same update bytes whatever the thread ran before', async () => {
    await store.createThread(makeThread('t-small'));
    await store.createThread(makeThread('t-large'));
    await store.putNodeResults(
      't-large',
      Array.from({ length: 200 }, (_, i) => ({
        nodeId: `n${i}`,
        nodeType: 'LLM' as const,
        status: 'COMPLETED' as const,
        output: 'x'.repeat(1000),
        startedAt: '2025-01-01T00:00:00.000Z',
        endedAt: '2025-01-01T00:00:01.000Z',
      })),
    );
    // Same id length, so the keys are the same size too.
    const change = { set: { currentNodeId: 'next' } };
    meter.reset();
    await store.updateThread('t-small', 1, change);
    const small = meter.bytes('UpdateItemCommand');
    meter.reset();
    await store.updateThread('t-large', 1, change);
    expect(meter.bytes('UpdateItemCommand')).toBe(small);
    expect(small).toBeLessThan(1000);
    expect(JSON.stringify((await store.getThread('t-large')).thread).length).toBeLessThan(1500);
  });

  it('reads many threads with one BatchGetItem, in the order asked', async () => {
    await store.createThread(makeThread('t-batch-1'));
    await store.createThread(makeThread('t-batch-2'));
    meter.reset();
    const threads = await store.getThreads(['t-batch-2', 't-batch-1']);
    expect(threads.map((t) => t.thread.id)).toEqual(['t-batch-2', 't-batch-1']);
    expect(meter.snapshot()).toEqual({ BatchGetItemCommand: { requests: 1, bytes: expect.any(Number) } });
    await expect(store.getThreads(['t-batch-1', 't-ghost'])).rejects.toMatchObject({
      code: 'THREAD_NOT_FOUND',
      message: expect.stringContaining('t-ghost'),
    });
  });

  it('reads step records and other items with the threads, in the same BatchGetItem', async () => {
    await store.createThread(makeThread('t-with'));
    await store.updateThread('t-with', 1, {
      set: { currentNodeId: 'a', step: 1 },
      step: { step: 1, result: resultOf('a'), events: [] },
    });
    await joins.recordBranchOutcome('join-with', 'a', {
      threadId: 't-with',
      status: 'COMPLETED',
      endedAt: 'x',
    });
    meter.reset();
    const found = await store.findThreadsWith(['t-with', 't-ghost'], {
      steps: [
        { threadId: 't-with', step: 1 },
        { threadId: 't-with', step: 2 },
      ],
      items: [itemKeys.join('join-with'), itemKeys.join('join-ghost')],
    });
    expect(meter.snapshot()).toEqual({ BatchGetItemCommand: { requests: 1, bytes: expect.any(Number) } });
    expect(found.threads.map((entry) => entry?.thread.currentNodeId)).toEqual(['a', undefined]);
    expect(found.steps.map((record) => record?.result.nodeId)).toEqual(['a', undefined]);
    expect(found.steps[0]).toEqual(await store.getStep('t-with', 1));
    expect(found.items.map((item) => item && joinStateOf(item).order)).toEqual([['a'], undefined]);
  });

  it('lists the threads of an execution', async () => {
    await store.createThread(makeThread('t-list-a', { metadata: { executionId: 'exec-list' } }));
    await store.createThread(
      makeThread('t-list-b', { metadata: { executionId: 'exec-list', forkPathId: 'b' } }),
    );
    const listed = await store.listThreadsOfExecution('exec-list');
    expect(listed.map((t) => t.thread.id).sort()).toEqual(['t-list-a', 't-list-b']);
  });
});

describe('thread store, a create that died between its head and its listing', () => {
  /** Clients of their own whose process dies when it first writes a listing (after the thread's head). */
  const clientsDyingAtFirstListing = () => {
    const dying = { ...clients, dynamo: createWireDocumentClient(services.target.dynamoEndpoint) };
    let failListing = true;
    aroundCommands(dying.dynamo, ({ commandName, input }, next) => {
      const item = (input as { Item?: { kind?: unknown } }).Item;
      if (commandName === 'PutItemCommand' && item?.kind === 'listing' && failListing) {
        failListing = false;
        return Promise.reject(new Error('process killed'));
      }
      return next();
    });
    return dying;
  };

  it('lists the thread when the create is retried', async () => {
    const dying = clientsDyingAtFirstListing();
    const thread = makeThread('t-list-died', { metadata: { executionId: 'exec-list-died' } });
    await expect(createThreadStore(dying).createThread(thread)).rejects.toThrow('process killed');
    expect(await store.listThreadsOfExecution('exec-list-died')).toEqual([]);
    // The retry finds the head there (created: false) and still writes the listing.
    expect(await store.createThread(thread)).toEqual({ version: 1, created: false });
    const listed = await store.listThreadsOfExecution('exec-list-died');
    expect(listed.map((entry) => entry.thread.id)).toEqual(['t-list-died']);
  });

  it('lists the thread when the retry read the clock differently (CREATE_CONFLICT, then adopted)', async () => {
    const dying = clientsDyingAtFirstListing();
    const thread = makeThread('t-list-clock', { metadata: { executionId: 'exec-list-clock' } });
    await expect(createThreadStore(dying).createThread(thread)).rejects.toThrow('process killed');
    // A retried FORK makes the same child with its own timestamps: a conflict, which it adopts.
    await expect(
      store.createThread({ ...thread, startTime: '2031-01-01T00:00:00.000Z' }),
    ).rejects.toMatchObject({ code: 'CREATE_CONFLICT' });
    const listed = await store.listThreadsOfExecution('exec-list-clock');
    expect(listed.map((entry) => entry.thread.id)).toEqual(['t-list-clock']);
  });
});

describe('execution index', () => {
  const record = {
    executionId: 'exec-index-1',
    rootThreadId: 't-root',
    workflowId: 'wf-index',
    workflowVersion: 1,
    status: 'RUNNING',
    startTime: '2025-01-01T00:00:00.000Z',
  } as const;

  it('stores, reads, updates and lists executions; creates idempotently', async () => {
    expect(await executions.putExecution(record)).toEqual({ created: true });
    expect(await executions.putExecution({ ...record })).toEqual({ created: false });
    await expect(executions.putExecution({ ...record, rootThreadId: 'other' })).rejects.toMatchObject({
      code: 'CREATE_CONFLICT',
    });
    expect(await executions.getExecution('exec-index-1')).toEqual(record);

    await executions.setExecutionStatus('exec-index-1', 'COMPLETED', {
      fromStatus: 'RUNNING',
      endTime: '2025-01-01T00:01:00.000Z',
    });
    await expect(
      executions.setExecutionStatus('exec-index-1', 'FAILED', { fromStatus: 'RUNNING' }),
    ).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
    await expect(executions.setExecutionStatus('exec-none', 'FAILED')).rejects.toMatchObject({
      code: 'EXECUTION_NOT_FOUND',
    });
    await expect(executions.getExecution('exec-none')).rejects.toMatchObject({ code: 'EXECUTION_NOT_FOUND' });

    await executions.putExecution({
      ...record,
      executionId: 'exec-index-2',
      startTime: '2025-01-02T00:00:00.000Z',
    });
    const listed = await executions.listExecutions('wf-index');
    expect(listed.map((e) => [e.executionId, e.status])).toEqual([
      ['exec-index-1', 'COMPLETED'],
      ['exec-index-2', 'RUNNING'],
    ]);
  });
});

describe('join bookkeeping', () => {
  const outcome = (threadId: string): BranchOutcome => ({
    threadId,
    status: 'COMPLETED',
    endedAt: '2025-01-01T00:00:00.000Z',
    output: { from: threadId },
  });

  it('records each path at most once and returns everything recorded so far', async () => {
    const first = await joins.recordBranchOutcome('join-1', 'a', outcome('t-a'));
    expect(first).toEqual({ recorded: true, outcomes: { a: outcome('t-a') }, order: ['a'] });

    const second = await joins.recordBranchOutcome('join-1', 'b', outcome('t-b'));
    expect(second.outcomes).toEqual({ a: outcome('t-a'), b: outcome('t-b') });

    // A retry of path a, even with a different payload, neither double counts nor overwrites.
    const retried = await joins.recordBranchOutcome('join-1', 'a', { ...outcome('t-a'), status: 'FAILED' });
    expect(retried).toEqual({
      recorded: false,
      outcomes: { a: outcome('t-a'), b: outcome('t-b') },
      order: ['a', 'b'],
    });
    expect(Object.keys(await joins.getBranchOutcomes('join-1'))).toHaveLength(2);
  });

  it('keeps the order the paths reported in, in the same one UpdateItem as each outcome', async () => {
    meter.reset();
    for (const path of ['c', 'a', 'b']) await joins.recordBranchOutcome('join-order', path, outcome(path));
    expect(meter.snapshot()).toEqual({ UpdateItemCommand: { requests: 3, bytes: expect.any(Number) } });
    expect(joinStateOf(await rawItem(itemKeys.join('join-order'))).order).toEqual(['c', 'a', 'b']);
    // A retry appends nothing.
    expect((await joins.recordBranchOutcome('join-order', 'a', outcome('a'))).order).toEqual(['c', 'a', 'b']);
  });

  it("reads an earlier layout's join item: paths without an order first, its recorded decision kept", async () => {
    await createWireDocumentClient(services.target.dynamoEndpoint).send(
      new PutCommand({
        TableName: names.tableName,
        Item: {
          ...itemKeys.join('join-old'),
          kind: 'join',
          'path:b': outcome('t-b'),
          'path:a': outcome('t-a'),
          decision: ['a', 'b'],
        },
      }),
    );
    const { order } = await joins.recordBranchOutcome('join-old', 'c', outcome('t-c'));
    expect(order).toEqual(['a', 'b', 'c']);
    expect(joinStateOf(await rawItem(itemKeys.join('join-old')))).toMatchObject({ decision: ['a', 'b'] });
  });

  it('counts concurrent records of the same path once', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () => joins.recordBranchOutcome('join-race', 'a', outcome('t-a'))),
    );
    expect(results.filter((r) => r.recorded)).toHaveLength(1);
    expect(await joins.getBranchOutcomes('join-race')).toEqual({ a: outcome('t-a') });
    expect(await joins.getBranchOutcomes('join-none')).toEqual({});
  });
});
