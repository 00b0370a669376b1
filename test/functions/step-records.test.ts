/**
 * Step records: each step leaves one immutable `STEP#<n>` item (result, events, the head fields it
 * changed), the head holds no history, and readers of the full history (readJournal, inspect, copies)
 * read the records.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { NodeResult } from '../../engine/thread/types.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { type Meter, meterClient } from '../../functions/aws/meter.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { itemKeys } from '../../functions/stores/table.ts';
import { createThreadStore, type StepRecord, type ThreadStore } from '../../functions/stores/thread-store.ts';
import { valid } from '../e2e/helpers.ts';
import { makeThread } from './fixtures.ts';

const names = { tableName: 'step-records', bucketName: 'step-records' };

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

const result = (step: number): NodeResult => ({
  nodeId: `n${step}`,
  nodeType: 'VARIABLE',
  status: 'COMPLETED',
  output: step,
  startedAt: '2025-01-01T00:00:00.000Z',
  endedAt: '2025-01-01T00:00:00.000Z',
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
const record = (step: number): StepRecord => ({ step, result: result(step), events: [event(step)] });

async function rawItem(threadId: string): Promise<Record<string, unknown>> {
  const { Item } = await clients.dynamo.send(
    new GetCommand({ TableName: names.tableName, Key: itemKeys.thread(threadId), ConsistentRead: true }),
  );
  return Item!;
}

/** Commits steps the way the pipeline does: the record, then the conditional head update. */
async function commitSteps(threadId: string, from: number, to: number): Promise<void> {
  for (let step = from; step <= to; step += 1) {
    const { version } = await store.getThread(threadId);
    await store.updateThread(threadId, version, { set: { step }, step: record(step) });
  }
}

describe('step records in the thread store', () => {
  it('writes one record per step and reads the journal back in order', async () => {
    await store.createThread(makeThread('stepped', { step: 1 }), { step: record(1) });
    meter.reset();
    await commitSteps('stepped', 2, 100);
    // 99 steps: one GetItem, one PutItem (the record) and one UpdateItem each.
    expect(meter.requests('PutItemCommand')).toBe(99);
    expect(meter.requests('UpdateItemCommand')).toBe(99);
    const item = await rawItem('stepped');
    expect(item.executionHistory).toBeUndefined();
    expect(item.nodeResults).toBeUndefined();

    const journal = await store.readJournal('stepped');
    expect(journal.executionHistory.map((e) => e.step)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(journal.events.map((e) => ('nodeId' in e ? e.nodeId : ''))).toEqual(
      Array.from({ length: 100 }, (_, i) => `n${i + 1}`),
    );
    expect((await store.readSteps('stepped', { from: 40, to: 42 })).map((r) => r.step)).toEqual([40, 41, 42]);
  });

  it('ignores the record of a step whose commit never landed', async () => {
    await store.createThread(makeThread('crashed', { step: 1 }), { step: record(1) });
    const { version } = await store.getThread('crashed');
    // The record is written, then the update loses a race: the step did not happen.
    await expect(
      store.updateThread('crashed', version - 1, { set: { step: 2 }, step: record(2) }),
    ).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
    expect((await store.readJournal('crashed')).executionHistory.map((e) => e.step)).toEqual([1]);
    // The retry at the right version replaces the record and commits.
    await store.updateThread('crashed', version, { set: { step: 2 }, step: { ...record(2), events: [] } });
    expect((await store.getStep('crashed', 2))?.events).toEqual([]);
    expect((await store.readJournal('crashed')).executionHistory).toHaveLength(2);
  });

  it('never replaces a record with putStepOnce (a retried create)', async () => {
    await store.putStepOnce('once', record(1));
    await store.putStepOnce('once', { ...record(1), events: [] });
    expect((await store.getStep('once', 1))?.events).toEqual([event(1)]);
  });

  it('keeps the latest result per node and reads them along a lineage, nearest first', async () => {
    await store.putNodeResults('parent', [result(1), result(2)]);
    await store.putNodeResults('child', [{ ...result(2), output: 'child' }]);
    meter.reset();
    const named = await store.getNodeResults(['child', 'parent'], ['n1', 'n2', 'n9']);
    expect(meter.requests('BatchGetItemCommand')).toBe(1);
    expect(Object.keys(named).sort()).toEqual(['n1', 'n2']);
    expect(named.n2?.output).toBe('child');
    expect(named.n1?.output).toBe(1);
    const all = await store.getNodeResults(['child', 'parent'], 'all');
    expect(all).toEqual(named);
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
        { id: 'done', type: 'END', config: { output: { count: '{{count}}', last: '{{nodes.inc}}' } } },
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
    expect(outcome.output).toEqual({ count: ITERATIONS, last: ITERATIONS });
    threadId = outcome.threadId;
  }, 60_000);

  it('completes 900+ steps with a small thread item and the full history in its records', async () => {
    const item = await rawItem(threadId);
    expect(JSON.stringify(item).length).toBeLessThan(2_000);
    expect((await runtime.stores.threads.getThread(threadId)).thread.variables.thread.count).toBe(ITERATIONS);

    const journal = await runtime.stores.threads.readJournal(threadId);
    const steps = 3 * ITERATIONS + 3; // START, 300 × (LOOP_START, VARIABLE, LOOP_END), the exit LOOP_START, END
    expect(journal.executionHistory).toHaveLength(steps);
    expect(journal.executionHistory.map((e) => e.step)).toEqual(
      Array.from({ length: steps }, (_, i) => i + 1),
    );
    expect(journal.executionHistory.at(-1)?.nodeId).toBe('done');

    const report = await buildInspectReport(runtime, threadId);
    expect(report.threads[0]?.nodes).toHaveLength(steps);
  });

  it('gives a copy the source’s history up to the copy point, without copying it', async () => {
    meter.reset();
    const copy = await runtime.copyThread(threadId, { fromNodeId: 'done' });
    // A copy writes its head and its listing, never the source's records.
    expect(meter.requests('PutItemCommand')).toBe(2);
    const source = await runtime.stores.threads.readJournal(threadId);
    const copied = await runtime.stores.threads.readJournal(copy.id);
    expect(copied.executionHistory).toEqual(source.executionHistory.slice(0, -1));
    expect(copied.events.at(-1)?.type).toBe('THREAD_COPIED');
    const report = await buildInspectReport(runtime, copy.id);
    const sourceReport = await buildInspectReport(runtime, threadId);
    // Each marked copied: a run the copy holds from its source, numbered as the source's step.
    expect(report.threads.find((t) => t.threadId === copy.id)?.nodes).toEqual(
      sourceReport.threads[0]?.nodes.slice(0, -1).map((run) => ({ ...run, copied: true })),
    );
  });
});
