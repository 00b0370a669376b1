/**
 * Retention on a deployed stack (`retentionDays`): when a run ends, its END (or the failure that
 * ends it) sets DynamoDB's TTL attribute on the run's items, `retentionDays` after the end, and
 * DynamoDB deletes them some time after that. functions/stores/README.md ("Retention") has why the S3
 * objects get no expiry here.
 *
 * Copies pin what they read: a copy reads its source's step records up to one past the copy point,
 * and its source's head (thread-store.ts `segmentsOf`, time-travel.ts). `pinForCopy` adds that step to
 * the source head's `retentionPins` and removes the expiry from the head and those records;
 * `expireThread` leaves pinned items without one. The two can run at once (a copy made while its
 * source's run ends): the copy pins, then clears; the expiry sets, then reads the pins again and clears
 * what they cover. Whichever order their requests take, a pinned item ends without an expiry.
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, type TableRef } from './dynamo-items.ts';
import { itemKeys, PARTITION_KEY, SORT_KEY, STEP_PREFIX, TTL_ATTRIBUTE } from './table.ts';

/** The Lambda setting (and the CLI's `prune` default) in whole days; unset: runs are kept forever. */
export const RETENTION_DAYS_ENV = 'STEPTHREAD_RETENTION_DAYS';
/** The head attribute holding the steps copies pinned (a number set). */
export const RETENTION_PINS = 'retentionPins';

const DAY_SECONDS = 86_400;

/** STEPTHREAD_RETENTION_DAYS as a whole number of days from 1; undefined when unset, empty or not one. */
export function retentionDaysFromEnv(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const text = env[RETENTION_DAYS_ENV]?.trim();
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const days = Number(text);
  return Number.isSafeInteger(days) && days >= 1 ? days : undefined;
}

/** Epoch seconds `days` after `endTime` (ISO). */
export function expiryAfter(endTime: string, days: number): number {
  return Math.floor(Date.parse(endTime) / 1000) + days * DAY_SECONDS;
}

interface KeyedItem {
  readonly pk: string;
  readonly sk: string;
  readonly step?: number;
  readonly [RETENTION_PINS]?: Set<number> | number[];
}

async function partitionKeys({ dynamo, tableName }: TableRef, threadId: string): Promise<KeyedItem[]> {
  const items: KeyedItem[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: '#pk = :pk',
        ProjectionExpression: '#pk, #sk, #step, #pins',
        ExpressionAttributeNames: {
          '#pk': PARTITION_KEY,
          '#sk': SORT_KEY,
          '#step': 'step',
          '#pins': RETENTION_PINS,
        },
        ExpressionAttributeValues: { ':pk': itemKeys.thread(threadId).pk },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as KeyedItem[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** The highest step a copy pinned on this head (0: none). */
function pinnedStep(head: KeyedItem | Record<string, unknown> | undefined): number {
  const pins = head?.[RETENTION_PINS] as Iterable<number> | undefined;
  return pins === undefined ? 0 : Math.max(0, ...[...pins].map(Number));
}

/** Whether a copy reads this item of its source: the head, and step records up to the pin. */
function isPinned(item: KeyedItem, pin: number): boolean {
  if (pin === 0) return false;
  if (item.sk === 'THREAD') return true;
  return item.sk.startsWith(STEP_PREFIX) && Number(item.step ?? item.sk.slice(STEP_PREFIX.length)) <= pin;
}

async function setExpiry(
  { dynamo, tableName }: TableRef,
  key: { pk: string; sk: string },
  expiresAt: number | undefined,
) {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: expiresAt === undefined ? 'REMOVE #ttl' : 'SET #ttl = :ttl',
        // Never creates an item that is gone (deleted, or expired meanwhile).
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#pk': PARTITION_KEY },
        ...(expiresAt === undefined ? {} : { ExpressionAttributeValues: { ':ttl': expiresAt } }),
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
  }
}

const PARALLEL_UPDATES = 16;

async function eachInParallel<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_UPDATES, items.length) }, worker));
}

/**
 * Sets `expiresAt` on every item of a thread (head, step records, node results, events, listing,
 * questions) but those a copy pinned, then clears it again from whatever a copy pinned meanwhile.
 */
export async function expireThread(table: TableRef, threadId: string, expiresAt: number): Promise<void> {
  const items = await partitionKeys(table, threadId);
  const pin = pinnedStep(items.find((item) => item.sk === 'THREAD'));
  await eachInParallel(
    items.filter((item) => !isPinned(item, pin)),
    (item) => setExpiry(table, { pk: item.pk, sk: item.sk }, expiresAt),
  );
  const { Item: head } = await table.dynamo.send(
    new GetCommand({
      TableName: table.tableName,
      Key: itemKeys.thread(threadId),
      ConsistentRead: true,
      ProjectionExpression: '#pins',
      ExpressionAttributeNames: { '#pins': RETENTION_PINS },
    }),
  );
  const pinnedNow = pinnedStep(head);
  if (pinnedNow > pin) {
    await eachInParallel(
      items.filter((item) => isPinned(item, pinnedNow)),
      (item) => setExpiry(table, { pk: item.pk, sk: item.sk }, undefined),
    );
  }
}

/**
 * A copy of `threadId` made at `copiedAtStep` reads its head and its step records up to one past that:
 * pins them (on the head, only if the head exists) and removes any expiry from them.
 */
export async function pinForCopy(table: TableRef, threadId: string, copiedAtStep: number): Promise<void> {
  const pin = copiedAtStep + 1;
  try {
    await table.dynamo.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: itemKeys.thread(threadId),
        UpdateExpression: 'ADD #pins :pin REMOVE #ttl',
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { '#pins': RETENTION_PINS, '#ttl': TTL_ATTRIBUTE, '#pk': PARTITION_KEY },
        ExpressionAttributeValues: { ':pin': new Set([pin]) },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return;
  }
  const { dynamo, tableName } = table;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :from AND :to',
        FilterExpression: 'attribute_exists(#ttl)',
        ProjectionExpression: '#pk, #sk',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, '#ttl': TTL_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':pk': itemKeys.thread(threadId).pk,
          ':from': itemKeys.step(threadId, 1).sk,
          ':to': itemKeys.step(threadId, pin).sk,
        },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    await eachInParallel((page.Items ?? []) as KeyedItem[], (item) =>
      setExpiry(table, { pk: item.pk, sk: item.sk }, undefined),
    );
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}
