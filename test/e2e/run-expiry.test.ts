/**
 * Retention as a deployed stack applies it (`retentionDays`): the step that ends a run sets the TTL of
 * the run's items, and a copy pins what it reads of its source. dynalite keeps the attribute but never
 * expires anything, so the test deletes what DynamoDB's TTL would (every item whose `expiresAt` has
 * passed) and checks that the copy still runs and reads its conversation.
 */
import { DeleteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { itemKeys, TTL_ATTRIBUTE } from '../../functions/stores/table.ts';
import { type E2e, plain, startE2e } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

const NAMES = { tableName: 'e2e-run-expiry', bucketName: 'e2e-run-expiry' };
const DAY = 86_400;
let e2e: E2e;
let runtime: LocalRuntime;
beforeAll(async () => {
  e2e = await startE2e('run-expiry');
  runtime = createLocalRuntime({ clients: createAwsClients(e2e.services.target, NAMES), retentionDays: 30 });
});
afterAll(() => e2e.close());

type Item = Record<string, unknown>;

async function items(): Promise<Item[]> {
  const { dynamo } = createAwsClients(e2e.services.target, NAMES);
  const found: Item[] = [];
  let startKey: Item | undefined;
  do {
    const page = await dynamo.send(
      new ScanCommand({ TableName: NAMES.tableName, ExclusiveStartKey: startKey }),
    );
    found.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return found;
}

/** What DynamoDB's TTL does by `at` (epoch seconds): deletes every item whose expiry has passed. */
async function expireAt(at: number): Promise<number> {
  const { dynamo } = createAwsClients(e2e.services.target, NAMES);
  const expired = (await items()).filter(
    (item) => typeof item[TTL_ATTRIBUTE] === 'number' && item[TTL_ATTRIBUTE] <= at,
  );
  for (const item of expired) {
    await dynamo.send(new DeleteCommand({ TableName: NAMES.tableName, Key: { pk: item.pk, sk: item.sk } }));
  }
  return expired.length;
}

const workflow = forkWorkflow('expiring', {
  paths: ['a', 'b'],
  join: { mainPathId: 'a' },
  fallback: ['again'],
});

describe('retentionDays', () => {
  it("sets every item of an ended run to expire retentionDays after its end; a copy pins its source's steps and still runs after the rest expired", async () => {
    const source = await runtime.prepare(workflow).run();
    expect(source.status).toBe('COMPLETED');
    const { thread: ended } = await runtime.stores.threads.getThread(source.threadId);
    const expiry = Math.floor(Date.parse(ended.endTime!) / 1000) + 30 * DAY;
    const all = await items();
    expect(all.length).toBeGreaterThan(10);
    // Every item of the run (its threads, records, results, listings, execution) but the join bookkeeping.
    const withoutExpiry = all.filter((item) => item[TTL_ATTRIBUTE] !== expiry).map((item) => String(item.pk));
    expect(withoutExpiry.every((pk) => pk.startsWith('JOIN#'))).toBe(true);
    const conversation = plain(await e2e.conversation(source.threadId));

    const copy = await runtime.copyThread(source.threadId, { fromNodeId: 'after' });
    const pinned = copy.metadata.copiedAtStep! + 1;
    const after = await items();
    const sourceItems = after.filter((item) => item.pk === itemKeys.thread(source.threadId).pk);
    for (const item of sourceItems) {
      const kept =
        item.sk === 'THREAD' || (String(item.sk).startsWith('STEP#') && Number(item.step) <= pinned);
      expect([item.sk, item[TTL_ATTRIBUTE]]).toEqual([item.sk, kept ? undefined : expiry]);
    }

    // A month and a day later: the run's other items are gone, the copy's own never had an expiry.
    expect(await expireAt(expiry + DAY)).toBeGreaterThan(0);
    const rerun = await runtime.prepare(workflow, { startNodeId: 'after' }).runThread(copy.id);
    expect(rerun.error).toBeUndefined();
    expect(rerun.output).toEqual(source.output);
    expect(plain(await e2e.conversation(copy.id))).toEqual(conversation);
    const journal = await runtime.stores.threads.readJournal(copy.id);
    expect(journal.executionHistory.length).toBeGreaterThan(copy.metadata.copiedAtStep!);
    // The copy's run ended too: it expires as its own run, a month after its end.
    const copyHead = (await items()).find(
      (item) => item.pk === itemKeys.thread(copy.id).pk && item.sk === 'THREAD',
    );
    expect(copyHead?.[TTL_ATTRIBUTE]).toBeGreaterThanOrEqual(expiry);
  });
});
