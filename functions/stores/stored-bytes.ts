/**
 * What a thread keeps stored, as `inspect` and the console show it (issue 29):
 *
 * - **DynamoDB**: every item of its partition `THREAD#<id>` (head, step records, latest results,
 *   event batches, listing, questions, a root's spend and cancel mark), each at its size by
 *   DynamoDB's rules plus the 100 bytes of overhead per item DynamoDB bills storage with.
 * - **S3**: the objects it owns. Segments and values are content-addressed and shared by pointer: a
 *   fork child or a copy points at what the thread it came from had written, a JOIN at its main
 *   path's conversation. So a thread owns the objects its items name (a segment id, a value
 *   reference: the same search `stepthread prune` makes) less those the thread it was forked or
 *   copied from named up to the fork or the copy (its step records up to that step), and less those
 *   its JOINs took over from their children (a child's head names them; they count for the child).
 *   A copy that has not run owns none, and the threads of one run own each object it wrote once.
 *   An object two unrelated threads wrote with equal content (the bucket holds it once) counts for
 *   each; a segment reached only down a chain counts for the thread that named it. Sizes are the
 *   objects' own (HeadObject); a missing one counts nothing. Not counted: the conversation's pages
 *   and tail pages (`segments/pages/`, gzipped: a few percent of a conversation's S3 bytes), which only
 *   later segments' covers name; finding them would read every segment.
 *
 * It reads each thread's partition whole (and its origin's records), so it costs what the thread
 * stored: `inspect` asks for it once, the console once per thread and status.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Thread } from '../../engine/thread/types.ts';
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { itemBytes } from '../aws/write-meter.ts';
import { mapBounded } from '../bounded.ts';
import { forkStepOfJoinKey } from '../nodes/ids.ts';
import { segmentKey } from './conversation-store.ts';
import { batchGetItems, type TableRef } from './dynamo-items.ts';
import { itemKeys, PARTITION_KEY, STEP_PREFIX } from './table.ts';
import { valuesKey } from './value-store.ts';

/** DynamoDB bills each item's storage at its size plus this much for indexing. */
export const DYNAMODB_ITEM_OVERHEAD_BYTES = 100;

export interface StoredBytes {
  /** The items of the thread's partition. */
  readonly items: number;
  /** Their sizes plus DYNAMODB_ITEM_OVERHEAD_BYTES each: what DynamoDB bills storage by. */
  readonly itemBytes: number;
  /** The S3 objects the thread owns (see above). */
  readonly objects: number;
  readonly objectBytes: number;
  /** itemBytes + objectBytes. */
  readonly bytes: number;
}

export interface StoredBytesReader {
  /** Each thread's stored bytes, by thread id. */
  storedBytes(threads: readonly Thread[]): Promise<Map<string, StoredBytes>>;
}

type Item = Record<string, unknown>;

/** As `stepthread prune` finds them (functions/local/prune.ts): a segment id, a value object's id. */
const SEGMENT_ID = /[0-9a-f]{64}/g;
const VALUE_OBJECT = /v:([0-9a-f]{16,64})\//g;
/** Loaded on first use, as the other stores do (a command that never measures never loads it). */
const s3Commands = once(() => import('@aws-sdk/client-s3'));
/** HeadObject requests in flight at once. */
const OBJECT_CONCURRENCY = 16;

export function createStoredBytesReader(
  table: TableRef,
  objects: { readonly s3: ObjectClient; readonly bucketName: string },
): StoredBytesReader {
  return {
    async storedBytes(threads) {
      // Per call: an object pruned since is missing.
      const sizes = new Map<string, Promise<number | undefined>>();
      const objectSize = (key: string): Promise<number | undefined> => {
        let size = sizes.get(key);
        if (size === undefined) {
          size = s3Commands()
            .then(({ HeadObjectCommand }) =>
              objects.s3.send(new HeadObjectCommand({ Bucket: objects.bucketName, Key: key })),
            )
            .then(
              (head) => head.ContentLength ?? 0,
              () => undefined,
            );
          sizes.set(key, size);
        }
        return size;
      };
      const partitions = new Map<string, Promise<Item[]>>();
      const partition = (threadId: string) => {
        let items = partitions.get(threadId);
        if (items === undefined) {
          items = queryPartition(table, threadId);
          partitions.set(threadId, items);
        }
        return items;
      };
      const result = new Map<string, StoredBytes>();
      for (const thread of threads) {
        const items = await partition(thread.id);
        const named = objectsNamedBy(items);
        for (const key of await adoptedByJoins(table, items)) named.delete(key);
        const origin = originOf(thread);
        if (origin !== undefined) {
          const inherited = (await partition(origin.threadId)).filter(
            (item) => origin.step === undefined || recordUpTo(item, origin.step),
          );
          for (const key of objectsNamedBy(inherited)) named.delete(key);
        }
        const found = (await mapBounded([...named], OBJECT_CONCURRENCY, objectSize)).filter(
          (size): size is number => size !== undefined,
        );
        const dynamoBytes = items.reduce(
          (sum, item) => sum + itemBytes(item) + DYNAMODB_ITEM_OVERHEAD_BYTES,
          0,
        );
        const objectBytes = found.reduce((sum, size) => sum + size, 0);
        result.set(thread.id, {
          items: items.length,
          itemBytes: dynamoBytes,
          objects: found.length,
          objectBytes,
          bytes: dynamoBytes + objectBytes,
        });
      }
      return result;
    },
  };
}

/**
 * The thread a thread came from and the step it came at: a copy's source at `copiedAtStep`, a fork
 * child's parent at its FORK's step (from its join key); undefined step: all of the origin.
 */
function originOf(thread: Thread): { threadId: string; step?: number } | undefined {
  const { copiedFrom, copiedAtStep, parentThreadId, joinKey } = thread.metadata;
  if (typeof copiedFrom === 'string') {
    return typeof copiedAtStep === 'number'
      ? { threadId: copiedFrom, step: copiedAtStep }
      : { threadId: copiedFrom };
  }
  if (typeof parentThreadId !== 'string') return undefined;
  const step = typeof joinKey === 'string' ? forkStepOfJoinKey(joinKey) : undefined;
  return step === undefined ? { threadId: parentThreadId } : { threadId: parentThreadId, step };
}

/** A step record of step `step` or earlier (the origin's state as a fork or copy took it). */
function recordUpTo(item: Item, step: number): boolean {
  const sk = String(item.sk);
  return sk.startsWith(STEP_PREFIX) && Number(sk.slice(STEP_PREFIX.length)) <= step;
}

/**
 * What a thread's JOINs took over from its fork children by pointer (the main path's conversation):
 * the objects a JOIN's record is the first of the thread's records to name that a joined child's head
 * names too. The child wrote them: they count for the child. One BatchGetItem of the children's heads
 * per JOIN that took any.
 */
async function adoptedByJoins(table: TableRef, items: readonly Item[]): Promise<Set<string>> {
  const adopted = new Set<string>();
  const records = items
    .filter((item) => String(item.sk).startsWith(STEP_PREFIX))
    .sort((a, b) => String(a.sk).localeCompare(String(b.sk)));
  const seen = new Set<string>();
  for (const record of records) {
    const introduced = [...objectsNamedBy([record])].filter((key) => !seen.has(key));
    for (const key of introduced) seen.add(key);
    const children =
      (record.result as { nodeType?: unknown } | undefined)?.nodeType === 'JOIN' ? joinedOf(record) : [];
    if (introduced.length === 0 || children.length === 0) continue;
    const heads = await batchGetItems(
      table,
      children.map((id) => ({ ...itemKeys.thread(id) })),
    );
    const theirs = objectsNamedBy(heads);
    for (const key of introduced) if (theirs.has(key)) adopted.add(key);
  }
  return adopted;
}

/**
 * The children a JOIN's record names (its THREAD_JOINED event): the joined paths' threads, or for a
 * join over a list the one item whose conversation it restored (the only one it can have adopted).
 */
function joinedOf(record: Item): string[] {
  const events = Array.isArray(record.events) ? record.events : [];
  return events.flatMap((entry) => {
    const event = entry as { type?: unknown; childThreadIds?: unknown; mainThreadId?: unknown } | null;
    if (event?.type !== 'THREAD_JOINED') return [];
    const ids = Array.isArray(event.childThreadIds) ? event.childThreadIds : [];
    return [...ids, event.mainThreadId].filter((id): id is string => typeof id === 'string');
  });
}

/** The object keys `items` name, anywhere in them. */
function objectsNamedBy(items: readonly Item[]): Set<string> {
  const keys = new Set<string>();
  for (const item of items) {
    const text = JSON.stringify(item);
    for (const [id] of text.matchAll(SEGMENT_ID)) keys.add(segmentKey(id));
    for (const [, id] of text.matchAll(VALUE_OBJECT)) keys.add(valuesKey(id!));
  }
  return keys;
}

async function queryPartition({ dynamo, tableName }: TableRef, threadId: string): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY },
        ExpressionAttributeValues: { ':pk': itemKeys.thread(threadId).pk },
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}
