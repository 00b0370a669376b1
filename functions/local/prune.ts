/**
 * `stepthread prune`: removes the runs of a data directory that ended before a time, and reclaims
 * their DynamoDB items and S3 objects, without breaking any thread that stays (functions/stores/README.md,
 * "Retention", has the safety argument):
 *
 * - **Runs, not threads.** A run is the executions sharing a root thread (continue-as-new and resumes
 *   included). It goes only when every execution ended (COMPLETED, FAILED, CANCELLED, TIMEOUT, or
 *   continued) before the cutoff; one still running, waiting at a question, or interrupted is skipped
 *   and reported. Its threads are the heads that name one of its executions, less the copies made
 *   from them that never ran (CREATED: they keep their source's execution id and are runs of their own).
 * - **Copies pin what they read.** A thread that stays and was copied from a pruned one reads its
 *   source's first steps through `copiedFrom`/`copiedAtStep` (journal, time travel): those step
 *   records (up to the copy point and one past it) and the source's head, moved under
 *   `itemKeys.prunedHead`, stay; nothing else of the source does. Inspecting the source answers not found.
 * - **Objects: mark and sweep.** Segments and values are content-addressed and shared (forks, copies,
 *   equal content), so an object a pruned item names is deleted only when no item that stays names it,
 *   directly or down a conversation's chain of segments and the pages their covers name. Every item is read whole and searched for
 *   segment ids and value references, whatever field holds them. An object written since the earliest
 *   start of a run in progress (or of this prune) stays: it may be a run's write whose commit has not landed.
 */
import { DeleteObjectCommand, GetObjectCommand, ListObjectsCommand } from '@aws-sdk/client-s3';
import { BatchWriteCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { isTerminalStatus } from '../../engine/thread/index.ts';
import type { Thread, ThreadStatus } from '../../engine/thread/types.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { mapBounded } from '../bounded.ts';
import { linkedKeys, SEGMENT_PREFIX, segmentKey } from '../stores/conversation-store.ts';
import type { TableRef } from '../stores/dynamo-items.ts';
import type { ExecutionRecord } from '../stores/execution-index.ts';
import { ITEM_LIST_PREFIX, ITEM_SOURCE_PREFIX, MAP_RESULTS_PREFIX } from '../stores/item-lists.ts';
import {
  GSI1_PARTITION_KEY,
  GSI1_SORT_KEY,
  itemKeys,
  PRUNED_HEAD_SORT_KEY,
  STEP_PREFIX,
  TTL_ATTRIBUTE,
} from '../stores/table.ts';
import { copySourceOf } from '../stores/thread-store.ts';
import { VALUES_PREFIX, valuesKey } from '../stores/value-store.ts';
import { isRunnerAlive, type LocalRunRecord, runnerGone } from './run-registry.ts';

export interface PruneStores extends TableRef {
  readonly s3: ObjectClient;
  readonly bucketName: string;
}

export interface PruneOptions {
  /** Runs that ended before this time go. */
  readonly endedBefore: Date;
  /** Report what would go, delete nothing. */
  readonly dryRun?: boolean;
  /** The prune's own start (default now): objects written since stay. */
  readonly now?: Date;
}

export interface PrunedRun {
  readonly rootThreadId: string;
  readonly workflowId: string;
  /** Its executions, first to last. */
  readonly executionIds: string[];
  readonly status: string;
  readonly endTime: string;
  readonly threads: number;
}

export interface SkippedRun {
  readonly executionId: string;
  readonly rootThreadId?: string;
  readonly workflowId: string;
  /** RUNNING (a process runs it, or waits at a question) or INTERRUPTED (its process is gone: `resume` continues it). */
  readonly status: 'RUNNING' | 'INTERRUPTED';
}

/** A pruned thread whose first steps stay because copies read them. */
export interface PinnedThread {
  readonly threadId: string;
  /** Its step records kept: 1 to this. */
  readonly steps: number;
  /** The threads that stay and read them (copies, or copies of copies). */
  readonly readBy: string[];
}

export interface PruneTotals {
  readonly runs: number;
  readonly threads: number;
  readonly items: number;
  readonly itemBytes: number;
  readonly objects: number;
  readonly objectBytes: number;
  readonly bytes: number;
}

export interface PruneReport {
  readonly endedBefore: string;
  readonly dryRun: boolean;
  readonly pruned: PrunedRun[];
  /** Runs in progress, whatever their age: never pruned. */
  readonly skipped: SkippedRun[];
  readonly pinned: PinnedThread[];
  /** What was removed (with --dry-run: what would be). */
  readonly removed: PruneTotals;
  /** Objects the pruned runs wrote that stay: threads that stay read them (shared), or they are newer than a run in progress. */
  readonly objectsKept: { readonly shared: number; readonly recent: number };
}

type Item = Record<string, unknown>;

interface StoredObject {
  readonly size: number;
  readonly lastModified: number;
}

const ENDED_EXECUTION = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'CONTINUED']);
const BATCH_WRITE_LIMIT = 25;
const MAX_UNPROCESSED_ROUNDS = 8;
/** Reads of objects in flight at once. */
const OBJECT_CONCURRENCY = 16;
/** Clock slack for the "written since" guard (object times have a second's precision on some stores). */
const GUARD_SLACK_MS = 2_000;

const SEGMENT_ID = /[0-9a-f]{64}/g;
const VALUE_OBJECT = /v:([0-9a-f]{16,64})\//g;

export async function pruneEndedRuns(stores: PruneStores, options: PruneOptions): Promise<PruneReport> {
  const now = options.now ?? new Date();
  const [items, objects] = await Promise.all([scanTable(stores), listObjects(stores)]);
  const table = classify(items);
  const { pruned, skipped, guardFrom } = await chooseRuns(table, options.endedBefore, now);

  const prunedThreads = new Set(pruned.flatMap((run) => run.threadIds));
  // Threads pruned earlier whose heads stay for their copies are weighed again: their copies may be gone.
  const removable = new Set([...prunedThreads, ...table.keptHeads.keys()]);
  const pins = pinsOf(table, removable);

  const deletions = new Map<string, Item>();
  const keepHeads: Item[] = [];
  const remove = (item: Item) => deletions.set(keyOf(item), item);
  for (const threadId of removable) {
    const partition = table.partitions.get(itemKeys.thread(threadId).pk) ?? [];
    const pin = pins.get(threadId);
    for (const item of partition) {
      const sk = String(item.sk);
      if (pin !== undefined && sk.startsWith(STEP_PREFIX) && Number(item.step) <= pin.steps) continue;
      if (pin !== undefined && sk === PRUNED_HEAD_SORT_KEY) continue;
      remove(item);
    }
    const head = table.heads.get(threadId);
    if (pin !== undefined && head !== undefined) keepHeads.push(keptHeadOf(head));
  }
  for (const run of pruned) {
    for (const executionId of run.executionIds) {
      for (const item of table.partitions.get(`EXEC#${executionId}`) ?? []) remove(item);
    }
  }
  for (const item of table.joins) {
    const key = String(item.pk).slice('JOIN#'.length);
    const parent = key.slice(0, key.indexOf('/'));
    // A FORK's bookkeeping: no copy reads it.
    if (removable.has(parent)) remove(item);
  }

  // Objects: candidates named by what goes, less what the items that stay reach.
  const reader = conversationLinks(stores, objects);
  const staying = [...items.filter((item) => !deletions.has(keyOf(item))), ...keepHeads];
  const marked = await reachable(staying, objects, reader);
  const named = await reachable([...deletions.values()], objects, reader);
  const guard = Math.min(guardFrom ?? now.getTime(), now.getTime()) - GUARD_SLACK_MS;
  const objectDeletions: string[] = [];
  let shared = 0;
  let recent = 0;
  for (const key of named) {
    if (marked.has(key)) shared += 1;
    else if ((objects.get(key)?.lastModified ?? 0) >= guard) recent += 1;
    else objectDeletions.push(key);
  }
  for (const key of runObjectsOf(
    pruned,
    [...prunedThreads].map((id) => table.heads.get(id)!),
    objects,
  )) {
    if ((objects.get(key)?.lastModified ?? 0) >= guard) recent += 1;
    else objectDeletions.push(key);
  }

  const itemBytes = [...deletions.values()].reduce((sum, item) => sum + itemSize(item), 0);
  const objectBytes = objectDeletions.reduce((sum, key) => sum + (objects.get(key)?.size ?? 0), 0);
  if (!options.dryRun) {
    // Order: heads kept for copies first, then objects, then items, heads and executions last, so a
    // prune stopped half way leaves each run findable by the next, and no item that stays names a
    // deleted object.
    for (const item of keepHeads)
      await stores.dynamo.send(new PutCommand({ TableName: stores.tableName, Item: item }));
    // One at a time: s3rver removes emptied folders after a delete, and parallel deletes in one
    // folder race on that.
    for (const key of objectDeletions) {
      await stores.s3.send(new DeleteObjectCommand({ Bucket: stores.bucketName, Key: key }));
    }
    const last = (item: Item) => item.sk === 'THREAD' || String(item.pk).startsWith('EXEC#');
    const all = [...deletions.values()];
    await deleteItems(
      stores,
      all.filter((item) => !last(item)),
    );
    await deleteItems(
      stores,
      all.filter((item) => item.sk === 'THREAD'),
    );
    await deleteItems(
      stores,
      all.filter((item) => String(item.pk).startsWith('EXEC#')),
    );
  }
  return {
    endedBefore: options.endedBefore.toISOString(),
    dryRun: options.dryRun === true,
    pruned: pruned.map(({ threadIds, ...run }) => ({ ...run, threads: threadIds.length })),
    skipped,
    pinned: [...pins.entries()].map(([threadId, pin]) => ({
      threadId,
      steps: pin.steps,
      readBy: [...pin.readBy],
    })),
    removed: {
      runs: pruned.length,
      threads: prunedThreads.size,
      items: deletions.size,
      itemBytes,
      objects: objectDeletions.length,
      objectBytes,
      bytes: itemBytes + objectBytes,
    },
    objectsKept: { shared, recent },
  };
}

interface Table {
  readonly heads: Map<string, Item>;
  /** Heads of pruned threads kept for their copies, by thread id. */
  readonly keptHeads: Map<string, Item>;
  readonly partitions: Map<string, Item[]>;
  readonly executions: Map<string, ExecutionRecord>;
  readonly locals: Map<string, LocalRunRecord>;
  readonly joins: Item[];
}

function classify(items: readonly Item[]): Table {
  const table: Table = {
    heads: new Map(),
    keptHeads: new Map(),
    partitions: new Map(),
    executions: new Map(),
    locals: new Map(),
    joins: [],
  };
  for (const item of items) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    const partition = table.partitions.get(pk);
    if (partition) partition.push(item);
    else table.partitions.set(pk, [item]);
    if (pk.startsWith('THREAD#')) {
      const threadId = pk.slice('THREAD#'.length);
      if (sk === 'THREAD') table.heads.set(threadId, item);
      else if (sk === PRUNED_HEAD_SORT_KEY) table.keptHeads.set(threadId, item);
    } else if (pk.startsWith('EXEC#')) {
      if (sk === 'EXEC') table.executions.set(pk.slice('EXEC#'.length), item as unknown as ExecutionRecord);
      else if (sk === 'LOCAL') table.locals.set(pk.slice('EXEC#'.length), item as unknown as LocalRunRecord);
    } else if (pk.startsWith('JOIN#')) {
      table.joins.push(item);
    }
  }
  return table;
}

interface ChosenRun extends Omit<PrunedRun, 'threads'> {
  readonly threadIds: string[];
}

/** The runs to prune, the runs in progress, and the earliest start among runs whose process is alive. */
async function chooseRuns(
  table: Table,
  endedBefore: Date,
  now: Date,
): Promise<{ pruned: ChosenRun[]; skipped: SkippedRun[]; guardFrom?: number }> {
  const byRoot = new Map<string, ExecutionRecord[]>();
  for (const execution of table.executions.values()) {
    const runs = byRoot.get(execution.rootThreadId) ?? [];
    runs.push(execution);
    byRoot.set(execution.rootThreadId, runs);
  }
  const pruned: ChosenRun[] = [];
  const skipped: SkippedRun[] = [];
  let guardFrom: number | undefined = now.getTime();
  const started = (at: string | undefined) => {
    const time = at === undefined ? Number.NaN : Date.parse(at);
    if (Number.isFinite(time)) guardFrom = Math.min(guardFrom ?? time, time);
  };
  const lookups = {
    localOf: (id: string) => table.locals.get(id),
    executionOf: (id: string) => table.executions.get(id),
  };
  for (const [rootThreadId, executions] of byRoot) {
    const chain = inChainOrder(executions);
    const continued = new Set(chain.flatMap((execution) => execution.continuedFrom ?? []));
    const statusOf = (execution: ExecutionRecord) =>
      execution.status === 'RUNNING' && continued.has(execution.executionId) ? 'CONTINUED' : execution.status;
    const last = chain.at(-1)!;
    const head = table.heads.get(rootThreadId);
    const headStatus = head?.status as ThreadStatus | undefined;
    const ended =
      chain.every((execution) => ENDED_EXECUTION.has(statusOf(execution))) &&
      statusOf(last) !== 'CONTINUED' &&
      (headStatus === undefined || isTerminalStatus(headStatus));
    if (!ended) {
      const gone = await runnerGone(last, lookups);
      if (!gone) {
        for (const execution of chain)
          started(table.locals.get(execution.executionId)?.claimedAt ?? execution.startTime);
      }
      skipped.push({
        executionId: last.executionId,
        rootThreadId,
        workflowId: last.workflowId,
        status: gone ? 'INTERRUPTED' : 'RUNNING',
      });
      continue;
    }
    const endTime = latest([
      ...chain.map((execution) => execution.endTime),
      head?.endTime as string | undefined,
    ]);
    if (endTime === undefined || Date.parse(endTime) >= endedBefore.getTime()) continue;
    const ids = new Set(chain.map((execution) => execution.executionId));
    const threadIds = [...table.heads.entries()]
      .filter(([threadId, item]) => {
        if (threadId === rootThreadId) return true;
        const metadata = (item.metadata ?? {}) as Thread['metadata'];
        // A copy that has not run keeps its source's execution id: a run of its own, to come.
        return (
          typeof metadata.executionId === 'string' && ids.has(metadata.executionId) && !metadata.copiedFrom
        );
      })
      .map(([threadId]) => threadId);
    pruned.push({
      rootThreadId,
      workflowId: last.workflowId,
      executionIds: chain.map((execution) => execution.executionId),
      status: statusOf(last),
      endTime,
      threadIds,
    });
  }
  // Killed before START committed (a record only): in progress while its process lives.
  for (const [executionId, local] of table.locals) {
    if (table.executions.has(executionId)) continue;
    const alive = isRunnerAlive(local);
    if (alive) started(local.claimedAt);
    skipped.push({ executionId, workflowId: local.workflowId, status: alive ? 'RUNNING' : 'INTERRUPTED' });
  }
  return { pruned, skipped, guardFrom };
}

/** A run's executions first to last, along `continuedFrom` (by start time where links are missing). */
function inChainOrder(executions: readonly ExecutionRecord[]): ExecutionRecord[] {
  return [...executions].sort(
    (a, b) => a.startTime.localeCompare(b.startTime) || a.executionId.localeCompare(b.executionId),
  );
}

function latest(times: readonly (string | undefined)[]): string | undefined {
  let found: string | undefined;
  for (const time of times)
    if (time !== undefined && (found === undefined || Date.parse(time) > Date.parse(found))) found = time;
  return found;
}

interface Pin {
  steps: number;
  readonly readBy: Set<string>;
}

/**
 * The threads of `removable` that threads which stay read through `copiedFrom`, with how many of their
 * step records they read: up to the copy point (the journal) and one past it (time travel rebuilds the
 * copy's first state from that step), along chains of copies of copies.
 */
function pinsOf(table: Table, removable: ReadonlySet<string>): Map<string, Pin> {
  const pins = new Map<string, Pin>();
  const headOf = (threadId: string) => table.heads.get(threadId) ?? table.keptHeads.get(threadId);
  for (const [threadId, head] of table.heads) {
    if (removable.has(threadId)) continue;
    const seen = new Set<string>([threadId]);
    for (let source = copySourceOf(head as unknown as Thread); source !== undefined; ) {
      if (seen.has(source.threadId)) break;
      seen.add(source.threadId);
      const sourceHead = headOf(source.threadId);
      if (sourceHead === undefined) break;
      if (removable.has(source.threadId)) {
        const steps = Math.min(source.step + 1, Number(sourceHead.step ?? 0));
        const pin = pins.get(source.threadId) ?? { steps: 0, readBy: new Set<string>() };
        pin.steps = Math.max(pin.steps, steps);
        pin.readBy.add(threadId);
        pins.set(source.threadId, pin);
      }
      source = copySourceOf(sourceHead as unknown as Thread);
    }
  }
  return pins;
}

/** A head as kept for copies: under `itemKeys.prunedHead`, out of every listing, never expiring. */
function keptHeadOf(head: Item): Item {
  const { [GSI1_PARTITION_KEY]: _pk, [GSI1_SORT_KEY]: _sk, [TTL_ATTRIBUTE]: _ttl, ...rest } = head;
  return { ...rest, ...itemKeys.prunedHead(String(head.id)), kind: 'prunedHead' };
}

/** Per-run objects: a local run's details, a FORK over a list's item source, a distributed one's item list and result files. */
function runObjectsOf(
  pruned: readonly ChosenRun[],
  heads: readonly Item[],
  objects: ReadonlyMap<string, StoredObject>,
): string[] {
  const keys = new Set<string>();
  for (const run of pruned) {
    for (const executionId of run.executionIds) {
      if (objects.has(`runs/${executionId}.json`)) keys.add(`runs/${executionId}.json`);
    }
  }
  // A list's item threads are `<base>-<index>`.
  const bases = new Set(
    heads.flatMap((head) =>
      (head.contextData as Thread['contextData'] | undefined)?.listItem === undefined
        ? []
        : [String(head.id).replace(/-\d+$/, '')],
    ),
  );
  for (const key of objects.keys()) {
    for (const prefix of [ITEM_LIST_PREFIX, ITEM_SOURCE_PREFIX]) {
      if (key.startsWith(prefix) && bases.has(key.slice(prefix.length, -'.json'.length))) keys.add(key);
    }
    if (key.startsWith(MAP_RESULTS_PREFIX)) {
      const base = key.slice(MAP_RESULTS_PREFIX.length).split('/')[0]!;
      if (bases.has(base)) keys.add(key);
    }
  }
  return [...keys];
}

/**
 * The segment and value objects `items` name, anywhere in them, and every conversation object those
 * segments lead to: down each chain, and to the pages and tail pages their covers name.
 */
async function reachable(
  items: readonly Item[],
  objects: ReadonlyMap<string, StoredObject>,
  linksOf: (key: string) => Promise<readonly string[]>,
): Promise<Set<string>> {
  const keys = new Set<string>();
  let frontier = new Set<string>();
  for (const item of items) {
    const text = JSON.stringify(item);
    for (const [id] of text.matchAll(SEGMENT_ID)) {
      const key = segmentKey(id);
      if (objects.has(key) && !keys.has(key)) {
        keys.add(key);
        frontier.add(key);
      }
    }
    for (const [, id] of text.matchAll(VALUE_OBJECT))
      if (objects.has(valuesKey(id!))) keys.add(valuesKey(id!));
  }
  while (frontier.size > 0) {
    const linked = await mapBounded([...frontier], OBJECT_CONCURRENCY, linksOf);
    frontier = new Set();
    for (const key of linked.flat()) {
      if (keys.has(key) || !objects.has(key)) continue;
      keys.add(key);
      frontier.add(key);
    }
  }
  return keys;
}

/** The conversation objects each segment or page names (each read once per prune). */
function conversationLinks(
  stores: PruneStores,
  objects: ReadonlyMap<string, StoredObject>,
): (key: string) => Promise<readonly string[]> {
  const known = new Map<string, Promise<readonly string[]>>();
  return (key) => {
    let links = known.get(key);
    if (links === undefined) {
      links = objects.has(key) ? readLinks(stores, key) : Promise.resolve([]);
      known.set(key, links);
    }
    return links;
  };
}

async function readLinks(stores: PruneStores, key: string): Promise<string[]> {
  const response = await stores.s3.send(new GetObjectCommand({ Bucket: stores.bucketName, Key: key }));
  return linkedKeys(key, (await response.Body?.transformToByteArray()) ?? new Uint8Array());
}

async function scanTable({ dynamo, tableName }: TableRef): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  do {
    const page = await dynamo.send(
      new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** Every object under the prefixes stepthread writes, with its size and time. */
async function listObjects(stores: PruneStores): Promise<Map<string, StoredObject>> {
  const objects = new Map<string, StoredObject>();
  for (const prefix of [SEGMENT_PREFIX, VALUES_PREFIX, 'map/', 'runs/']) {
    // Version 1, paged by the last key: s3rver cannot page version 2 (wire-clients.ts).
    let marker: string | undefined;
    for (let more = true; more; ) {
      const page = await stores.s3.send(
        new ListObjectsCommand({ Bucket: stores.bucketName, Prefix: prefix, Marker: marker }),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        objects.set(object.Key, {
          size: object.Size ?? 0,
          lastModified: object.LastModified?.getTime() ?? Date.now(),
        });
        marker = object.Key;
      }
      more = page.IsTruncated === true && (page.Contents?.length ?? 0) > 0;
    }
  }
  return objects;
}

async function deleteItems({ dynamo, tableName }: TableRef, items: readonly Item[]): Promise<void> {
  for (let start = 0; start < items.length; start += BATCH_WRITE_LIMIT) {
    let pending: Item[] = items
      .slice(start, start + BATCH_WRITE_LIMIT)
      .map((item) => ({ DeleteRequest: { Key: { pk: item.pk, sk: item.sk } } }));
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === MAX_UNPROCESSED_ROUNDS)
        throw new Error('BatchWriteItem kept returning unprocessed items');
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, 2 ** round * 10));
      const response = await dynamo.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
      pending = (response.UnprocessedItems?.[tableName] ?? []) as Item[];
    }
  }
}

function keyOf(item: Item): string {
  return `${String(item.pk)}\n${String(item.sk)}`;
}

/** An item's size as DynamoDB counts it: attribute names and values (numbers approximated). */
export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number')
    return Math.ceil(String(Math.abs(value)).replace(/[.e+-]/g, '').length / 2) + 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value) || value instanceof Set)
    return 3 + [...value].reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (typeof value === 'object') {
    return (
      3 + Object.entries(value).reduce((sum, [k, v]) => sum + 1 + Buffer.byteLength(k) + valueSize(v), 0)
    );
  }
  return 0;
}
