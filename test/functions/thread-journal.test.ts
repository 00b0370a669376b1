/**
 * Journal pages: a thread item keeps only its recent history and events; older entries move to
 * `JOURNAL#<page>` items, and readers of the full history (readJournal, inspect, copies) see them all.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { ExecutionHistoryEntry } from '../../engine/thread/types.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { type Meter, meterClient } from '../../functions/aws/meter.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { itemKeys } from '../../functions/stores/table.ts';
import {
  createThreadStore,
  JOURNAL_PAGE_STEPS,
  type ThreadStore,
  withJournalPage,
} from '../../functions/stores/thread-store.ts';
import { valid } from '../e2e/helpers.ts';
import { makeThread } from './fixtures.ts';

const names = { tableName: 'journal-pages', bucketName: 'journal-pages' };

let services: LocalServices;
let clients: AwsClients;
let store: ThreadStore;
let meter: Meter;

beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true, names });
  clients = createAwsClients(services.target, names);
  store = createThreadStore(clients);
  meter = meterClient(clients.dynamo);
});
afterAll(() => services.close());

const entry = (step: number): ExecutionHistoryEntry => ({
  nodeId: `n${step}`,
  nodeType: 'VARIABLE',
  status: 'COMPLETED',
  at: '2025-01-01T00:00:00.000Z',
  step,
});
const event = (step: number): StepthreadEvent =>
  ({
    type: 'NODE_COMPLETED',
    threadId: 't',
    workflowId: 'w',
    at: '2025-01-01T00:00:00.000Z',
    nodeId: `n${step}`,
    nodeType: 'VARIABLE',
    status: 'COMPLETED',
  }) as StepthreadEvent;

async function rawItem(threadId: string): Promise<Record<string, unknown>> {
  const { Item } = await clients.dynamo.send(
    new GetCommand({ TableName: names.tableName, Key: itemKeys.thread(threadId), ConsistentRead: true }),
  );
  return Item!;
}

async function pageItems(threadId: string): Promise<Record<string, unknown>[]> {
  const { Items } = await clients.dynamo.send(
    new QueryCommand({
      TableName: names.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': `THREAD#${threadId}`, ':p': 'JOURNAL#' },
    }),
  );
  return Items ?? [];
}

/** Commits `steps` one-entry steps the way the pipeline does (load, withJournalPage, update). */
async function commitSteps(threadId: string, from: number, to: number): Promise<void> {
  for (let step = from; step <= to; step += 1) {
    const { thread, version } = await store.getThread(threadId);
    await store.updateThread(
      threadId,
      version,
      withJournalPage(thread, {
        set: { step },
        append: { executionHistory: [entry(step)], events: [event(step)] },
      }),
    );
  }
}

describe('withJournalPage', () => {
  const loaded = (n: number) => ({
    executionHistory: Array.from({ length: n }, (_, i) => entry(i + 1)),
    events: Array.from({ length: n }, (_, i) => event(i + 1)),
  });
  const change = { set: { step: 9 }, append: { executionHistory: [entry(99)], events: [event(99)] } };

  it('leaves a change alone while the item has room', () => {
    expect(withJournalPage(loaded(JOURNAL_PAGE_STEPS - 1), change)).toBe(change);
  });

  it('moves the loaded lists to the next page and keeps only the step’s entries', () => {
    const full = { ...loaded(JOURNAL_PAGE_STEPS), journalPages: 4 };
    const paged = withJournalPage(full, change);
    expect(paged.journalPage).toEqual({
      page: 5,
      executionHistory: full.executionHistory,
      events: full.events,
    });
    expect(paged.set).toEqual({
      step: 9,
      executionHistory: [entry(99)],
      events: [event(99)],
      journalPages: 5,
    });
    expect(paged.append).toEqual({});
  });

  it('never pages a change that appends no history (terminal status events)', () => {
    const eventsOnly = { append: { events: [event(1)] } };
    expect(withJournalPage(loaded(JOURNAL_PAGE_STEPS), eventsOnly)).toBe(eventsOnly);
  });
});

describe('journal pages in the thread store', () => {
  it('writes a page every JOURNAL_PAGE_STEPS steps and reads the journal back in order', async () => {
    await store.createThread(makeThread('paged', { executionHistory: [entry(1)], events: [event(1)] }));
    meter.reset();
    await commitSteps('paged', 2, 100);
    // 99 steps: one GetItem and one UpdateItem each, plus a PutItem for each of the 3 pages.
    expect(meter.requests('PutItemCommand')).toBe(3);
    expect(meter.requests('UpdateItemCommand')).toBe(99);

    const item = await rawItem('paged');
    expect(item.journalPages).toBe(3);
    expect((item.executionHistory as unknown[]).length).toBe(100 - 3 * JOURNAL_PAGE_STEPS);
    const pages = await pageItems('paged');
    expect(pages.map((p) => p.sk)).toEqual(['JOURNAL#000001', 'JOURNAL#000002', 'JOURNAL#000003']);
    expect(pages.map((p) => (p.executionHistory as unknown[]).length)).toEqual([32, 32, 32]);

    const journal = await store.readJournal('paged');
    expect(journal.executionHistory.map((e) => e.step)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(journal.events.map((e) => ('nodeId' in e ? e.nodeId : ''))).toEqual(
      Array.from({ length: 100 }, (_, i) => `n${i + 1}`),
    );
  });

  it('ignores a page whose commit never landed: its entries are still in the item', async () => {
    await store.createThread(makeThread('crashed', { executionHistory: [entry(1)], events: [event(1)] }));
    await commitSteps('crashed', 2, JOURNAL_PAGE_STEPS);
    const { thread, version } = await store.getThread('crashed');
    const change = withJournalPage(thread, {
      append: { executionHistory: [entry(33)], events: [event(33)] },
    });
    expect(change.journalPage?.page).toBe(1);
    // The page is written, then the update loses a race: the thread still counts no page.
    await expect(store.updateThread('crashed', version - 1, change)).rejects.toMatchObject({
      code: 'VERSION_CONFLICT',
    });
    expect(await pageItems('crashed')).toHaveLength(1);
    const journal = await store.readJournal('crashed');
    expect(journal.executionHistory.map((e) => e.step)).toEqual(
      Array.from({ length: JOURNAL_PAGE_STEPS }, (_, i) => i + 1),
    );
    // The retry at the right version rewrites the same page and commits.
    await store.updateThread('crashed', version, change);
    expect(await pageItems('crashed')).toHaveLength(1);
    expect((await store.readJournal('crashed')).executionHistory).toHaveLength(JOURNAL_PAGE_STEPS + 1);
  });

  it('copies a thread’s pages under another id', async () => {
    await store.copyJournalPages('paged', 'paged-copy', 2);
    const pages = await pageItems('paged-copy');
    expect(pages.map((p) => p.sk)).toEqual(['JOURNAL#000001', 'JOURNAL#000002']);
    const source = await pageItems('paged');
    expect(pages.map((p) => p.executionHistory)).toEqual(source.slice(0, 2).map((p) => p.executionHistory));
  });
});

describe('a long run', () => {
  const ITERATIONS = 300;
  let runtime: LocalRuntime;
  let threadId: string;

  beforeAll(async () => {
    runtime = createLocalRuntime({ clients });
    const workflow = valid({
      id: 'long-loop',
      version: 1,
      maxSteps: 5000,
      variables: [{ name: 'count', type: 'number', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ls', type: 'LOOP_START', config: { loopId: 'L', maxIterations: ITERATIONS } },
        {
          id: 'inc',
          type: 'VARIABLE',
          config: { variableName: 'count', variableType: 'number', expression: 'count + 1' },
        },
        { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
        { id: 'done', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'ls' },
        { from: 'ls', to: 'inc' },
        { from: 'inc', to: 'le' },
        { from: 'le', to: 'done' },
      ],
    });
    const outcome = await runtime.prepare(workflow).run({});
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('COMPLETED');
    threadId = outcome.threadId;
  }, 30_000);

  it('completes 900+ steps with a bounded thread item and the full history in its journal', async () => {
    const item = await rawItem(threadId);
    expect(JSON.stringify(item).length).toBeLessThan(40_000);
    expect((item.executionHistory as unknown[]).length).toBeLessThanOrEqual(JOURNAL_PAGE_STEPS);
    expect((await runtime.stores.threads.getThread(threadId)).thread.variables.thread.count).toBe(ITERATIONS);

    const journal = await runtime.stores.threads.readJournal(threadId);
    const steps = 3 * ITERATIONS + 3; // START, 300 × (LOOP_START, VARIABLE, LOOP_END), the exit LOOP_START, END
    expect(journal.executionHistory).toHaveLength(steps);
    expect(journal.executionHistory.map((e) => e.step)).toEqual(
      Array.from({ length: steps }, (_, i) => i + 1),
    );
    expect(journal.executionHistory.at(-1)?.nodeId).toBe('done');
    expect(await pageItems(threadId)).toHaveLength(item.journalPages as number);

    const report = await buildInspectReport(runtime, threadId);
    expect(report.threads[0]?.nodes).toHaveLength(steps);
  });

  it('gives a copy the source’s full history (inspect shows every node run)', async () => {
    const copy = await runtime.copyThread(threadId, { fromNodeId: 'done' });
    const source = await runtime.stores.threads.readJournal(threadId);
    const copied = await runtime.stores.threads.readJournal(copy.id);
    expect(copied.executionHistory).toEqual(source.executionHistory);
    expect(copied.events.slice(0, -1)).toEqual(source.events);
    expect(copied.events.at(-1)?.type).toBe('THREAD_COPIED');
    const report = await buildInspectReport(runtime, copy.id);
    const sourceReport = await buildInspectReport(runtime, threadId);
    expect(report.threads.find((t) => t.threadId === copy.id)?.nodes).toEqual(sourceReport.threads[0]?.nodes);
  });
});
