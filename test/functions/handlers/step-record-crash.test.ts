/**
 * Crashes around a step record: after the record's PutItem and before the thread's UpdateItem (the
 * retry runs the step again and replaces the record), and after the UpdateItem that commits it (the
 * retry replays the step from its record). Either way a retry of the same Task leaves exactly the
 * fault-free state: head, records, latest results and published events.
 */
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepthreadEvent } from '../../../engine/events.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import { createAwsClients } from '../../../functions/aws/clients.ts';
import type { HandlerDeps } from '../../../functions/handlers/deps.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { createThreadStore } from '../../../functions/stores/thread-store.ts';
import { type Harness, INJECTED, startEvent, startHarness, withRetry } from './harness.ts';

let h: Harness;
let clients: { dynamo: { send(command: unknown): Promise<unknown> }; tableName: string };
beforeAll(async () => {
  h = await startHarness('steprec');
  // The harness's table, through a client of our own that the crashing store wraps.
  const names = { tableName: 'handlers-steprec', bucketName: 'handlers-steprec' };
  clients = { dynamo: createAwsClients(h.services.target, names).dynamo, tableName: names.tableName };
});
afterAll(() => h.close());

const ITEMS = Array.from({ length: 25 }, (_, i) => i);
const loopStart: TaskNode = {
  id: 'ls',
  type: 'LOOP_START',
  config: { loopId: 'L', dataSource: '{{input.items}}', maxIterations: 50 },
};
const body: TaskNode = {
  id: 'inc',
  type: 'VARIABLE',
  config: { variableName: 'count', variableType: 'number', expression: 'count + item' },
};
const loopEnd: TaskNode = { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } };
const end: TaskNode = { id: 'end', type: 'END' };

type Crash = 'after-record' | 'after-update' | 'none';

/** Crash around every CRASH_EVERY-th step's record. */
const CRASH_EVERY = 20;

/** Crashes injected by the last store `depsCrashing` made. */
let crashCount = 0;

/** Handler deps whose thread store dies once per CRASH_EVERY-th step at the `crash` point. */
function depsCrashing(crash: Crash, published: StepthreadEvent[][], reuseWrittenHeads: boolean): HandlerDeps {
  const base = h.deps();
  const real = clients;
  const crashed = new Set<string>();
  crashCount = 0;
  let pendingRecord: string | undefined;
  const send = async (command: unknown) => {
    const result = await real.dynamo.send(command as never);
    if (command instanceof PutCommand) {
      const sk = String(command.input.Item?.sk ?? '');
      if (sk.startsWith('STEP#') && Number(sk.slice(5)) % CRASH_EVERY === 0) {
        const key = `${String(command.input.Item?.pk)}${sk}`;
        if (crash === 'after-record' && !crashed.has(key)) {
          crashed.add(key);
          crashCount += 1;
          throw new Error(INJECTED);
        }
        pendingRecord = key;
      }
    } else if (command instanceof UpdateCommand && pendingRecord !== undefined) {
      const key = pendingRecord;
      pendingRecord = undefined;
      if (crash === 'after-update' && !crashed.has(key)) {
        crashed.add(key);
        crashCount += 1;
        throw new Error(INJECTED);
      }
    }
    return result;
  };
  const threads = createThreadStore(
    { dynamo: { send } as never, tableName: real.tableName },
    { reuseWrittenHeads },
  );
  return {
    ...base,
    threads,
    events: { publish: async (events) => void published.push([...events]) },
  };
}

async function runLoop(deps: HandlerDeps, executionId: string): Promise<string> {
  const call = async (event: unknown) => withRetry(async () => (await dispatch(event, deps)) as Envelope);
  let env = await call(
    startEvent(executionId, { items: ITEMS }, [{ name: 'count', type: 'number', initial: 0 }]),
  );
  for (;;) {
    env = await call({ action: 'execute', node: loopStart, envelope: env });
    if (env.loop?.exit) break;
    env = await call({ action: 'execute', node: body, envelope: env });
    env = await call({ action: 'execute', node: loopEnd, envelope: env });
  }
  await call({ action: 'execute', node: end, envelope: env });
  return env.threadId;
}

async function finalState(executionId: string, threadId: string): Promise<string> {
  const { thread, version } = await h.stores.threads.getThread(threadId);
  const journal = await h.stores.threads.readJournal(threadId);
  const { Items } = await (clients.dynamo.send(
    new QueryCommand({
      TableName: clients.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': `THREAD#${threadId}`, ':p': 'STEP#' },
    }),
  ) as Promise<{ Items?: Record<string, unknown>[] }>);
  const records = (Items ?? []).map(({ pk: _pk, ...record }) => record);
  const results = await h.stores.threads.getNodeResults([threadId], 'all');
  return JSON.stringify({ thread, version, journal, records, results })
    .split(executionId)
    .join('<exec>')
    .split(threadId)
    .join('<thread>');
}

// Also with the embedded runtime's store, which reads the head its previous commit wrote.
describe.each([
  { reuse: false, store: 'a store that reads every head' },
  { reuse: true, store: 'a store that reuses the heads it wrote' },
])('step records under crashes, $store', ({ reuse }) => {
  it('a crash after the record write or after the committing update, then a retry, leaves the fault-free state', async () => {
    const published: Record<Crash, StepthreadEvent[][]> = {
      none: [],
      'after-record': [],
      'after-update': [],
    };
    const states: Partial<Record<Crash, string>> = {};
    const crashes: Record<Crash, number> = { none: 0, 'after-record': 0, 'after-update': 0 };
    for (const crash of ['none', 'after-record', 'after-update'] as const) {
      const executionId = `journal-${crash}-${reuse}`;
      const deps = depsCrashing(crash, published[crash], reuse);
      const threadId = await runLoop(deps, executionId);
      crashes[crash] = crashCount;
      states[crash] = await finalState(executionId, threadId);
    }
    const steps = 1 + ITEMS.length * 3 + 2;
    const reference = JSON.parse(states.none!) as {
      journal: { executionHistory: { step: number }[] };
      records: unknown[];
    };
    expect(reference.journal.executionHistory.map((e) => e.step)).toEqual(
      Array.from({ length: steps }, (_, i) => i + 1),
    );
    expect(reference.records).toHaveLength(steps);
    expect(states['after-record']).toBe(states.none);
    expect(states['after-update']).toBe(states.none);

    // A crash after the committing update comes before the step publishes: the retry replays the step
    // and publishes its events from its record, so nothing is lost.
    const shape = (batches: StepthreadEvent[][]) =>
      batches.map((batch) => batch.map((e) => `${e.type}:${'nodeId' in e ? e.nodeId : ''}`).join(','));
    expect(shape(published['after-update'])).toEqual(shape(published.none));
    expect(shape(published['after-record'])).toEqual(shape(published.none));
    const crashPoints = Math.floor(steps / CRASH_EVERY);
    expect(crashes).toEqual({ none: 0, 'after-record': crashPoints, 'after-update': crashPoints });
  });
});
