/**
 * Threads in DynamoDB, laid out so a step's reads and writes do not grow with the run's past
 * (functions/stores/README.md has the whole layout):
 *
 * - `THREAD#<id>` / `THREAD` — the head: what the next step needs (status, current node, step,
 *   variables, conversation index, …), rewritten by each step with one conditional UpdateItem
 *   guarded by a numeric `version`. It holds no node results and no history.
 * - `THREAD#<id>` / `STEP#<step>` — one immutable record per step: the node's result, the events
 *   it recorded, and the head fields as the step left them. Written (PutItem) just before the head
 *   update that commits the step; a retry that re-runs an uncommitted step overwrites it.
 * - `THREAD#<id>` / `NODE#<nodeId>` — the latest result of each node on the thread, what
 *   `{{nodes.<id>}}` reads. Written after the commit (a replayed retry writes it again).
 * - `THREAD#<id>` / `EVENTS#<version>#<hash>` — a batch of events recorded outside steps (a
 *   status change, a continuation), written just before the head update that commits it, which
 *   sets the head's `eventsTail` to its key; each batch names the one before (`prev`). The head
 *   holds that one key however often a run continues.
 *
 * No transactions, only single-item conditional writes.
 */
import {
  BatchGetCommand,
  BatchWriteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { StepthreadError } from '../../engine/errors.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { ExecutionHistoryEntry, ModelUsage, NodeResult, Thread } from '../../engine/thread/types.ts';
import { contentHash, sameJson } from './canonical-json.ts';
import {
  ExpressionBuilder,
  entityOf,
  isConditionalCheckFailed,
  queryGsi1Partition,
  type TableRef,
} from './dynamo-items.ts';
import { expireThread, pinForCopy } from './retention.ts';
import {
  EVENTS_PREFIX,
  eventBatchId,
  gsi1Keys,
  gsi1Partitions,
  type ItemKey,
  itemKeys,
  NODE_RESULT_PREFIX,
  PARTITION_KEY,
  SORT_KEY,
  STEP_PREFIX,
  TTL_ATTRIBUTE,
} from './table.ts';

/** A thread's journal: every history entry and event, oldest first. */
export interface ThreadJournal {
  readonly executionHistory: ExecutionHistoryEntry[];
  readonly events: StepthreadEvent[];
  /**
   * Each history entry's console output (CODE), at the same index; undefined for a step that printed
   * nothing. As the records hold it: `NodeLogs`, or a reference to it. (Indexed like the history, not
   * by step: a copy's own steps are numbered from 1 after its source's.)
   */
  readonly logs: unknown[];
  /** Each history entry's model calls (an LLM node's tokens and cost), at the same index; undefined for others. */
  readonly usage: (ModelUsage | undefined)[];
}

/** Positions in a thread's history, 1-based and inclusive (a copy's history starts with its source's steps). */
export interface HistoryRange {
  readonly from: number;
  readonly to: number;
}

/** Part of a thread's journal: the entries of some positions of its history, and how long it is. */
export interface JournalWindow extends ThreadJournal {
  /** How many entries the whole history has. */
  readonly length: number;
  /** Each entry's position in the whole history, at the same index as `executionHistory`. */
  readonly positions: number[];
}

/** Head fields a step record keeps: what the thread looked like after the step (time travel). */
export type StepState = Partial<Omit<Thread, 'id' | 'nodeResults' | 'executionHistory' | 'events'>>;

/** What one step left behind, written once. */
export interface StepRecord {
  readonly step: number;
  readonly result: NodeResult;
  /** Events the step recorded, in order. */
  readonly events: StepthreadEvent[];
  /** The head fields the step changed, as it left them (absent: it changed none). */
  readonly state?: StepState;
  /** Head fields the step removed. */
  readonly removed?: readonly string[];
  /** What the step put on the next envelope (route, loop, fork), kept when a retry may need it. */
  readonly out?: Record<string, unknown>;
}

/** A step as its record's result says it ran: what the AWS cost estimate counts (cli/aws-cost.ts). */
export type StepMeter = Pick<
  NodeResult,
  'nodeId' | 'nodeType' | 'startedAt' | 'endedAt' | 'usage' | 'toolCalls'
>;

export interface VersionedThread {
  readonly thread: Thread;
  readonly version: number;
}

/** Thread fields holding lists that grow during a run; appended to, never rewritten. */
export type ThreadListField = 'errors' | 'events';

/** Optional Thread fields, the only ones a change may remove. */
export type ThreadOptionalField = {
  [K in keyof Thread]-?: object extends Pick<Thread, K> ? K : never;
}[keyof Thread];

/** Head fields a change may set (results and history live in their own items). */
export type HeadField = Exclude<keyof Thread, 'id' | 'nodeResults' | 'executionHistory'>;

/** One update of a thread. Its request size depends on the change, never on the thread. */
export interface ThreadChange {
  /** Top-level head fields to replace. */
  readonly set?: { readonly [K in HeadField]?: Thread[K] };
  /** Optional fields to delete (e.g. `currentNodeId` when the run ends). */
  readonly remove?: readonly ThreadOptionalField[];
  /**
   * Items appended to the thread's lists: errors (on the head: only a failure appends one, and it
   * ends the thread, so no later update carries it), and events recorded outside a step, which go
   * to an item of their own (`putEventBatch`): the head only names the latest such item.
   */
  readonly append?: { readonly [K in ThreadListField]?: Thread[K] };
  /** Epoch seconds after which DynamoDB may delete the item (TTL). */
  readonly expiresAt?: number;
  /** The step this change commits: its record is written (PutItem) before the head update. */
  readonly step?: StepRecord;
}

/** One fork child's increment of a global number on the root (see ThreadStore.addToGlobal). */
export interface GlobalIncrement {
  readonly name: string;
  readonly delta: number;
  /** The child thread and the step of it that writes: applied once, whatever the retries. */
  readonly writerId: string;
  readonly step: number;
  /** The branch's join: once it has decided, the branch's writes are dropped. */
  readonly joinKey?: string;
}

/** What `findThreadsWith` reads besides heads. */
export interface AlsoRead {
  readonly steps?: readonly { readonly threadId: string; readonly step: number }[];
  readonly items?: readonly ItemKey[];
}

export interface FoundWith {
  readonly threads: (VersionedThread | undefined)[];
  readonly steps: (StepRecord | undefined)[];
  readonly items: (Record<string, unknown> | undefined)[];
}

export interface ThreadStore {
  /**
   * Creates the thread's head at version 1, then writes `options.step` unless that step already has
   * a record; its `nodeResults` become NODE# items. Creating the same content again is a no-op that reports the
   * current version (a retried create); different content under the same id is CREATE_CONFLICT.
   */
  createThread(
    thread: Thread,
    options?: {
      expiresAt?: number;
      step?: StepRecord;
      /**
       * List the thread under its execution before creating its head: a create that dies in between
       * leaves a listing the listing's readers skip, never a head that no listing names (for a caller
       * that will not create the thread again once its head exists: a lazily created Map item thread).
       */
      listFirst?: boolean;
    },
  ): Promise<{ version: number; created: boolean }>;
  /**
   * A FORK's children: every head at version 1 with its listing (and NODE# items), in BatchWriteItem
   * requests of 25, unconditionally. Only for threads nothing has run on yet: a FORK writes them before
   * its own commit, and a branch runs only once the FORK's Task has returned, so writing them again (a
   * retried FORK, whose clock read differently) replaces heads no step has moved.
   */
  createForkChildren(threads: readonly Thread[]): Promise<void>;
  /**
   * Consistent read of the head (`nodeResults` and `executionHistory` empty); THREAD_NOT_FOUND when absent.
   * With `afterOwnWrite`, a store made with `reuseWrittenHeads` answers from the head its last
   * `updateThread` of that thread wrote, once, without a request (see ThreadStoreOptions).
   */
  getThread(threadId: string, options?: { afterOwnWrite?: boolean }): Promise<VersionedThread>;
  /** Consistent reads in BatchGetItem requests (one per 100 ids), in the order of `threadIds`. */
  getThreads(threadIds: readonly string[]): Promise<VersionedThread[]>;
  /** As getThreads, with undefined for each thread that does not exist. */
  findThreads(threadIds: readonly string[]): Promise<(VersionedThread | undefined)[]>;
  /**
   * As findThreads, with step records and other items of the table read in the same BatchGetItem
   * (a branch's report reads its last step's record with its thread and root; the JOIN its join
   * item with the threads it merges): each in the order asked, undefined when absent; items as stored.
   */
  findThreadsWith(threadIds: readonly string[], also: AlsoRead): Promise<FoundWith>;
  /**
   * The thread a copy was made from, as its journal and time travel read it: its head, or, when
   * `stepthread prune` removed it while a copy still pointed at it, the head the prune kept for the
   * copies (`itemKeys.prunedHead`). THREAD_NOT_FOUND when neither is there.
   */
  getCopySource(threadId: string): Promise<VersionedThread>;
  /**
   * Applies `change` if the thread is at `expectedVersion`, in one UpdateItem (after the PutItem of
   * its step record), and returns the new version. VERSION_CONFLICT otherwise.
   */
  updateThread(
    threadId: string,
    expectedVersion: number,
    change: ThreadChange,
    /**
     * A write the commit must follow (the step's new conversation segment), made at the same time as
     * the step's record: the head moves only once both have landed, so a record whose segment is
     * missing is one of a step never committed, which its retry replaces.
     */
    alongside?: Promise<unknown>,
  ): Promise<{ version: number }>;
  /**
   * A fork child's increment of the root's global number `name` (global-increments.ts), in one
   * UpdateItem that reads nothing first: it lands unless the writer's step already did (its
   * `globalWriters` entry), the branch's join closed, the run was cancelled, or the value is not a
   * number. The new value and the root's version, or `refused` (the caller reloads and decides why).
   */
  addToGlobal(
    rootId: string,
    increment: GlobalIncrement,
  ): Promise<{ value: number; version: number } | 'refused'>;
  /**
   * Drops a child's `globalWriters` entry from the root once the step it names has committed, so the
   * root's head holds the writers in flight, not every branch that ever wrote (10,000 Map items).
   */
  forgetGlobalWriter(rootId: string, writerId: string, step: number): Promise<void>;
  /** Threads whose `metadata.executionId` is `executionId` (GSI: eventually consistent). */
  listThreadsOfExecution(executionId: string): Promise<VersionedThread[]>;
  /** Sets the expiry (TTL) of each of the thread's items but those a copy pinned (retention.ts). */
  expireThread(threadId: string, expiresAt: number): Promise<void>;
  /** A copy was made at `copiedAtStep`: keeps what it reads of this thread from expiring (retention.ts). */
  pinForCopy(threadId: string, copiedAtStep: number): Promise<void>;
  /** Sets the latest result of each node (plain PutItems: writing them again changes nothing). */
  putNodeResults(threadId: string, results: readonly NodeResult[]): Promise<void>;
  /**
   * The latest result of each named node (or of every node) along `lineage`: the thread first, then
   * the threads it was forked from, nearest first; the first thread that ran a node wins.
   */
  getNodeResults(
    lineage: readonly string[],
    nodeIds: readonly string[] | 'all',
  ): Promise<Record<string, NodeResult>>;
  /** Writes a step record (replacing an uncommitted attempt's). */
  putStepRecord(threadId: string, record: StepRecord): Promise<void>;
  /** Writes a step record unless that step has one (a record stands for a committed step). */
  putStepOnce(threadId: string, record: StepRecord): Promise<void>;
  /**
   * The conversation segments these threads' steps wrote (from their step records), for a cold
   * read of a log they share: one Query per thread, in parallel.
   */
  segmentIds(threadIds: readonly string[]): Promise<string[]>;
  /** One step record, or undefined. */
  getStep(threadId: string, step: number): Promise<StepRecord | undefined>;
  /** The thread's step records from step `from` (default 1) up to `to` (inclusive), in order. */
  readSteps(threadId: string, range?: { from?: number; to?: number }): Promise<StepRecord[]>;
  /**
   * What each of the thread's own steps 1..`to` ran, without values or events: its node, type, times,
   * model and tool calls (a projection of the step records, one Query), for a run's AWS cost estimate.
   */
  readStepMeters(threadId: string, to: number): Promise<StepMeter[]>;
  /**
   * The thread's history and events: those of the thread it was copied from up to the copy, then
   * its step records, then the events recorded outside steps. THREAD_NOT_FOUND when absent.
   * With `window`, only the step records at the positions it returns for the history's length are
   * read (a Query per range and thread), so a long run's journal costs what is shown of it.
   */
  readJournal(
    threadId: string,
    options?: { window?: (length: number) => readonly HistoryRange[] | undefined },
  ): Promise<JournalWindow>;
  /**
   * The latest result of each node the thread ran (keys in the order the nodes first ran), from its
   * step records and, for a copy, those of the thread it was copied from up to the copy (seed 002: a
   * copy holds the source's node results). Reads each step's node id only, then the records of
   * each node's latest step.
   */
  readStepResults(threadId: string): Promise<Record<string, NodeResult>>;
  /**
   * readStepResults and readStepMeters (the thread's own steps up to its head) from the same pass
   * over the step records, for a report that shows both (inspect): one Query per 1 MB of records,
   * not two.
   */
  readStepResultsAndMeters(threadId: string): Promise<StepResultsAndMeters>;
}

/** A thread's latest result of each node, and the meters of its own steps (readStepResultsAndMeters). */
export interface StepResultsAndMeters {
  readonly results: Record<string, NodeResult>;
  readonly meters: StepMeter[];
}

/** The fields of a step record's result a StepMeter holds. */
const METER_FIELDS = ['nodeId', 'nodeType', 'startedAt', 'endedAt', 'usage', 'toolCalls'] as const;

/** The history entry a step record stands for. */
export function historyEntryOf(record: StepRecord): ExecutionHistoryEntry {
  const { result, step } = record;
  return {
    nodeId: result.nodeId,
    nodeType: result.nodeType,
    status: result.status,
    at: result.endedAt,
    step,
  };
}

const BATCH_GET_LIMIT = 100;
const BATCH_WRITE_LIMIT = 25;
const MAX_UNPROCESSED_ROUNDS = 8;

/** Thread fields that never go in the head item. */
const NOT_IN_HEAD = new Set(['nodeResults', 'executionHistory']);

function headOf(thread: Thread): Record<string, unknown> {
  const head = Object.fromEntries(Object.entries(thread).filter(([name]) => !NOT_IN_HEAD.has(name)));
  return encodeHeadFields(head, thread.id);
}

/*
 * Stored forms drop what the key already says, because DynamoDB bills every write by item size: a
 * conversation state's threadId, an envelope's threadId/workflowId/workflowVersion (and its
 * rootThreadId on a root thread), and each event's threadId and workflowId. Reading puts them back.
 */

function encodeHeadFields(fields: Record<string, unknown>, threadId: string): Record<string, unknown> {
  const out = { ...fields };
  if (isRecord(out.conversation) && out.conversation.threadId === threadId) {
    const { threadId: _id, ...conversation } = out.conversation;
    out.conversation = conversation;
  }
  if (isRecord(out.lastEnvelope)) {
    const {
      threadId: _id,
      workflowId: _w,
      workflowVersion: _v,
      rootThreadId,
      ...envelope
    } = out.lastEnvelope;
    out.lastEnvelope = rootThreadId === threadId ? envelope : { ...envelope, rootThreadId };
  }
  return out;
}

function decodeHead(head: Record<string, unknown>, threadId: string): Record<string, unknown> {
  const out = { ...head };
  if (isRecord(out.conversation) && out.conversation.threadId === undefined) {
    out.conversation = { threadId, ...out.conversation };
  }
  if (isRecord(out.lastEnvelope)) {
    out.lastEnvelope = {
      workflowId: out.workflowId,
      workflowVersion: out.workflowVersion,
      rootThreadId: threadId,
      threadId,
      ...out.lastEnvelope,
    };
  }
  return out;
}

/** The node's own lifecycle events, which its result determines: stored as their type alone. */
const LIFECYCLE_TYPES = new Set(['NODE_STARTED', 'NODE_COMPLETED', 'NODE_FAILED']);

function lifecycleEvent(
  type: string,
  result: NodeResult,
  threadId: string,
  workflowId: unknown,
): StepthreadEvent {
  const base = { threadId, workflowId, nodeId: result.nodeId, nodeType: result.nodeType };
  if (type === 'NODE_STARTED') {
    const attempt = result.attempt === undefined ? {} : { attempt: result.attempt };
    return { type, ...base, at: result.startedAt, ...attempt } as StepthreadEvent;
  }
  if (type === 'NODE_FAILED')
    return { type, ...base, at: result.endedAt, error: result.error } as StepthreadEvent;
  return { type, ...base, at: result.endedAt, status: result.status } as StepthreadEvent;
}

function encodeRecord(record: StepRecord, threadId: string): Record<string, unknown> {
  const workflowId = record.events[0]?.workflowId;
  const events = record.events.map((event) => {
    const derived = LIFECYCLE_TYPES.has(event.type)
      ? lifecycleEvent(event.type, record.result, threadId, workflowId)
      : undefined;
    if (derived && sameJson(derived, event)) return event.type;
    const { threadId: id, workflowId: w, ...rest } = event;
    return {
      ...rest,
      ...(id === threadId ? {} : { threadId: id }),
      ...(w === workflowId ? {} : { workflowId: w }),
    };
  });
  return {
    ...record,
    events,
    ...(workflowId === undefined ? {} : { workflowId }),
    ...(record.state ? { state: encodeHeadFields(record.state, threadId) } : {}),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export interface ThreadStoreOptions {
  /**
   * Where one process runs a thread's steps one after another (the embedded runtime), the next
   * step's read of the head can be the head the previous step's commit wrote: its UpdateItem returns
   * the new item (ReturnValues ALL_NEW, in the same request), kept for one `getThread(id,
   * { afterOwnWrite: true })`. That saves a GetItem per step. Should another writer have moved the
   * thread on meanwhile, nothing is lost: the commit's UpdateItem is conditional on the version, and
   * the step record's PutItem does not replace the record of a step the head has committed (see
   * `putRecordOfUncommitted`); either way the step fails with VERSION_CONFLICT and its retry reads
   * the head afresh. Off for the Lambdas, where consecutive steps run in different processes.
   */
  readonly reuseWrittenHeads?: boolean;
}

export function createThreadStore(table: TableRef, options: ThreadStoreOptions = {}): ThreadStore {
  const { dynamo, tableName } = table;
  /** Heads this store's updateThread wrote, by thread id, each kept for one read. */
  const written = new Map<string, Record<string, unknown>>();
  /** The newest version each thread's updates here wrote: a late answer to an older write is not kept. */
  const newest = new Map<string, number>();
  const reuse = options.reuseWrittenHeads === true;
  /**
   * What `putEventBatch` needs of a head (its step, `eventsTail`, workflow), from the last head of
   * each thread this store read or wrote, with its version. Events recorded outside a step then cost
   * no read of the head when the caller's version is the one seen: a head at the same version has the
   * same tail and step, and a head that moved on fails the update, leaving the batch on no chain.
   */
  const journals = new Map<string, HeadJournal>();
  const seen = (item: Record<string, unknown>): VersionedThread => {
    rememberJournal(journals, item);
    return versioned(item);
  };
  const readItem = async (threadId: string): Promise<Record<string, unknown> | undefined> => {
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: tableName, Key: itemKeys.thread(threadId), ConsistentRead: true }),
    );
    return Item;
  };

  const putStep = async (threadId: string, record: StepRecord, options: { once?: boolean } = {}) => {
    try {
      await putRecord(threadId, record, options);
    } catch (error) {
      if (!(options.once && isConditionalCheckFailed(error))) throw error;
    }
  };

  const putRecord = (threadId: string, record: StepRecord, options: { once?: boolean } = {}) =>
    dynamo.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...itemKeys.step(threadId, record.step), kind: 'step', ...encodeRecord(record, threadId) },
        ...(options.once ? { ConditionExpression: 'attribute_not_exists(pk)' } : {}),
      }),
    );

  /**
   * A step's record before its commit, when the head it ran on may be stale (a reused head): written
   * if absent; an existing one is replaced only when the head has not committed that step (it is a
   * dead attempt's), and is otherwise VERSION_CONFLICT. One request unless a record is there.
   */
  const putRecordOfUncommitted = async (threadId: string, record: StepRecord) => {
    try {
      await putRecord(threadId, record, { once: true });
      return;
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    const head = await readItem(threadId);
    if (head === undefined || Number(head.step ?? 0) >= record.step) {
      throw new StepthreadError(
        'VERSION_CONFLICT',
        `thread ${threadId} has committed step ${record.step} already (changed concurrently, or missing)`,
      );
    }
    await putRecord(threadId, record);
  };

  /**
   * The thread's entry in the executions listing (GSI1), an item of its own so the head, rewritten
   * every step, does not carry the index keys. Rewritten when the thread moves to another execution.
   */
  async function putListing(threadId: string, executionId: string | undefined): Promise<void> {
    await dynamo.send(new PutCommand({ TableName: tableName, Item: listingItem(threadId, executionId) }));
  }

  /** Items in BatchWriteItem requests of 25, each request again for what it left unprocessed. */
  async function putItems(items: readonly Record<string, unknown>[]): Promise<void> {
    for (let start = 0; start < items.length; start += BATCH_WRITE_LIMIT) {
      let pending: { PutRequest: { Item: Record<string, unknown> } }[] = items
        .slice(start, start + BATCH_WRITE_LIMIT)
        .map((Item) => ({ PutRequest: { Item } }));
      for (let round = 0; pending.length > 0; round += 1) {
        if (round === MAX_UNPROCESSED_ROUNDS)
          throw new Error('BatchWriteItem kept returning unprocessed items');
        if (round > 0) await delay(2 ** round * 10);
        const response = await dynamo.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
        pending = (response.UnprocessedItems?.[tableName] ?? []) as typeof pending;
      }
    }
  }

  /** The listed threads that exist (a listing written just before its thread's create failed). */
  async function missingTolerant(ids: readonly string[]): Promise<VersionedThread[]> {
    const found = await batchGet(ids.map((id) => ({ ...itemKeys.thread(id) })));
    return found.map(seen);
  }

  /** Every item of one partition whose sort key starts with `prefix`, optionally up to `upTo`. */
  async function queryPrefix(
    threadId: string,
    prefix: string,
    range: { from?: string; to?: string } = {},
    projection?: string,
    projectionNames: Record<string, string> = {},
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    const bounded = range.from !== undefined || range.to !== undefined;
    do {
      const response = await dynamo.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: bounded
            ? '#pk = :pk AND #sk BETWEEN :from AND :to'
            : '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY, ...projectionNames },
          ...(projection ? { ProjectionExpression: projection } : {}),
          ExpressionAttributeValues: {
            ':pk': itemKeys.thread(threadId).pk,
            ...(bounded
              ? { ':from': range.from ?? prefix, ':to': range.to ?? `${prefix}\uffff` }
              : { ':prefix': prefix }),
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(response.Items ?? []));
      startKey = response.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  async function batchGet(keys: Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
    const found: Record<string, unknown>[] = [];
    for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
      let pending = keys.slice(start, start + BATCH_GET_LIMIT);
      for (let round = 0; pending.length > 0; round += 1) {
        if (round === MAX_UNPROCESSED_ROUNDS) throw new Error('BatchGetItem kept returning unprocessed keys');
        if (round > 0) await delay(2 ** round * 10);
        const response = await dynamo.send(
          new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }),
        );
        found.push(...(response.Responses?.[tableName] ?? []));
        pending = response.UnprocessedKeys?.[tableName]?.Keys ?? [];
      }
    }
    return found;
  }

  /**
   * Before an update that records events outside a step: writes them to a batch item of their own,
   * keyed by the head version the update will make and the events' hash, holding the head's step
   * (where the journal places them) and the key of the batch before (a chain from the head's
   * `eventsTail`, which the update sets). So the head holds one key, whatever the run recorded. A
   * batch the update then fails to commit (a lost race, a crash) is on no chain and never read; a
   * retry writes the same item again. The head's step and tail come from the head this store last
   * saw at `expectedVersion` (no request), else from a read of it: VERSION_CONFLICT early when the
   * head moved on, as the update would. An earlier layout's head still holding its latest batch has it
   * moved to its own item.
   */
  async function putEventBatch(
    threadId: string,
    expectedVersion: number,
    events: readonly StepthreadEvent[],
  ): Promise<{ tail: string; legacy: boolean }> {
    const known = journals.get(threadId);
    if (known?.version === expectedVersion) return writeEventBatch(threadId, expectedVersion, events, known);
    const { Item } = await dynamo.send(
      new GetCommand({
        TableName: tableName,
        Key: itemKeys.thread(threadId),
        ConsistentRead: true,
        ProjectionExpression: '#version, #step, #tail, #workflow, #recent, #at',
        ExpressionAttributeNames: {
          '#version': 'version',
          '#step': 'step',
          '#tail': 'eventsTail',
          '#workflow': 'workflowId',
          '#recent': 'recentEvents',
          '#at': 'recentEventsAt',
        },
      }),
    );
    if (Item === undefined || Number(Item.version) !== expectedVersion) {
      throw new StepthreadError(
        'VERSION_CONFLICT',
        `thread ${threadId} is not at version ${expectedVersion} (changed concurrently, or missing)`,
      );
    }
    const legacy = Array.isArray(Item.recentEvents) && Item.recentEvents.length > 0;
    if (legacy) {
      await dynamo.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            ...itemKeys.events(threadId, Number(Item.recentEventsAt)),
            kind: 'events',
            events: Item.recentEvents,
          },
        }),
      );
    }
    const written = await writeEventBatch(threadId, expectedVersion, events, headJournalOf(Item));
    return { ...written, legacy };
  }

  async function writeEventBatch(
    threadId: string,
    expectedVersion: number,
    events: readonly StepthreadEvent[],
    head: HeadJournal,
  ): Promise<{ tail: string; legacy: boolean }> {
    const stored = encodeEvents(events, threadId, head.workflowId);
    const tail = eventBatchId(expectedVersion + 1, contentHash(stored).slice(0, 16));
    await dynamo.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          pk: itemKeys.thread(threadId).pk,
          sk: `${EVENTS_PREFIX}${tail}`,
          kind: 'events',
          events: stored,
          afterStep: head.step,
          ...(head.tail === undefined ? {} : { prev: head.tail }),
        },
      }),
    );
    return { tail, legacy: false };
  }

  /**
   * Every batch of events recorded outside steps that the head's chain reaches, oldest first: an
   * earlier layout's batches (keyed by version alone, and the one still on its head) before the
   * chain from `eventsTail`. A batch no chain reaches belongs to an update that never committed.
   */
  async function eventBatches(head: Record<string, unknown>): Promise<EventBatch[]> {
    const legacyOnHead = Array.isArray(head.recentEvents) && head.recentEvents.length > 0;
    if (head.eventsTail === undefined && !legacyOnHead) return [];
    const threadId = String(head.id);
    const workflowId = typeof head.workflowId === 'string' ? head.workflowId : undefined;
    const legacy = new Map<number, StepthreadEvent[]>();
    const chained = new Map<string, Record<string, unknown>>();
    for (const item of await queryPrefix(threadId, EVENTS_PREFIX)) {
      const id = String(item.sk).slice(EVENTS_PREFIX.length);
      if (id.includes('#')) chained.set(id, item);
      else legacy.set(Number(id), item.events as StepthreadEvent[]);
    }
    // The head's batch may also have been moved already (an update that then failed): same content.
    if (legacyOnHead) legacy.set(Number(head.recentEventsAt), head.recentEvents as StepthreadEvent[]);
    const chain: EventBatch[] = [];
    for (let id = head.eventsTail; typeof id === 'string'; ) {
      const item = chained.get(id);
      if (item === undefined) break;
      chain.push({
        afterStep: Number(item.afterStep ?? 0),
        events: decodeEvents(item.events as unknown[], threadId, workflowId),
      });
      id = item.prev;
    }
    const earlier = [...legacy.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, events]) => ({ afterStep: Number.POSITIVE_INFINITY, events }));
    return [...earlier, ...chain.reverse()];
  }

  const store: ThreadStore = {
    async createThread(thread, options = {}) {
      written.delete(thread.id);
      const item = {
        ...newHeadItem(thread),
        ...(options.expiresAt !== undefined ? { [TTL_ATTRIBUTE]: options.expiresAt } : {}),
      };
      const { createHash } = item;
      let created = true;
      let version = 1;
      let listedUnder = thread.metadata.executionId;
      if (options.listFirst) await putListing(thread.id, listedUnder);
      try {
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        const existing = await readItem(thread.id);
        const conflict = () =>
          new StepthreadError('CREATE_CONFLICT', `thread ${thread.id} already exists with different content`);
        if (!existing) throw conflict();
        // The first create may have died between the head and its listing: list the thread (again,
        // the same item) under the execution it is in now, or it would stay out of its listing.
        // On a conflict too: a retried FORK or START reads the clock differently, so it meets
        // CREATE_CONFLICT on the thread its first attempt created, and adopts it.
        listedUnder = versioned(existing).thread.metadata.executionId;
        // Compared by the hash of the content it was created with, so a retried create still
        // succeeds after later updates moved the thread on.
        if (existing.createHash !== createHash) {
          await putListing(thread.id, listedUnder);
          throw conflict();
        }
        created = false;
        version = Number(existing.version);
      }
      if (!options.listFirst || listedUnder !== thread.metadata.executionId) {
        await putListing(thread.id, listedUnder);
      }
      // After the head, and only once: a retried create (e.g. a START whose head landed with other
      // timestamps) never replaces the record of the step that did commit.
      if (options.step) await putStep(thread.id, options.step, { once: true });
      await store.putNodeResults(thread.id, Object.values(thread.nodeResults));
      return { version, created };
    },

    async getThread(threadId, options = {}) {
      const own = options.afterOwnWrite ? written.get(threadId) : undefined;
      written.delete(threadId);
      if (own) return versioned(own);
      const item = await readItem(threadId);
      if (!item) throw new StepthreadError('THREAD_NOT_FOUND', `thread ${threadId} not found`);
      return seen(item);
    },

    async getCopySource(threadId) {
      const item = await readItem(threadId);
      if (item) return versioned(item);
      const { Item: kept } = await dynamo.send(
        new GetCommand({ TableName: tableName, Key: itemKeys.prunedHead(threadId), ConsistentRead: true }),
      );
      if (!kept) throw new StepthreadError('THREAD_NOT_FOUND', `thread ${threadId} not found`);
      return versioned(kept);
    },

    async getThreads(threadIds) {
      const found = await store.findThreads(threadIds);
      const missing = [...new Set(threadIds.filter((_, i) => found[i] === undefined))];
      if (missing.length > 0) {
        throw new StepthreadError('THREAD_NOT_FOUND', `thread(s) not found: ${missing.join(', ')}`);
      }
      return found as VersionedThread[];
    },

    async findThreads(threadIds) {
      return (await store.findThreadsWith(threadIds, {})).threads;
    },

    async findThreadsWith(threadIds, also) {
      const stepKeys = (also.steps ?? []).map(({ threadId, step }) => itemKeys.step(threadId, step));
      const otherKeys = also.items ?? [];
      const keyOf = (key: { pk: unknown; sk: unknown }) => `${String(key.pk)}\u0000${String(key.sk)}`;
      const keys = new Map<string, ItemKey>();
      for (const key of [...threadIds.map((id) => itemKeys.thread(id)), ...stepKeys, ...otherKeys])
        keys.set(keyOf(key), key);
      const items = new Map<string, Record<string, unknown>>();
      for (const item of await batchGet([...keys.values()].map((key) => ({ ...key }))))
        items.set(keyOf(item as { pk: unknown; sk: unknown }), item);
      const heads = new Map<string, VersionedThread | undefined>();
      for (const id of threadIds) {
        const item = heads.has(id) ? undefined : items.get(keyOf(itemKeys.thread(id)));
        if (!heads.has(id)) heads.set(id, item === undefined ? undefined : seen(item));
      }
      const threads = threadIds.map((id) => heads.get(id));
      return {
        threads,
        steps: stepKeys.map((key) => {
          const item = items.get(keyOf(key));
          return item === undefined ? undefined : stepRecordOf(item);
        }),
        items: otherKeys.map((key) => items.get(keyOf(key))),
      };
    },

    async updateThread(threadId, expectedVersion, change, alongside) {
      written.delete(threadId);
      const outside = change.append?.events ?? [];
      const batch = outside.length > 0 ? await putEventBatch(threadId, expectedVersion, outside) : undefined;
      const expression = buildUpdate(threadId, change, expectedVersion, batch);
      // Before the update, so a committed step always has its record. Unconditional when the head
      // was read for this step: only a retry of the same, uncommitted step can write here, and its
      // record replaces the dead attempt's. A reused head may be stale: see putRecordOfUncommitted.
      const record = !change.step
        ? undefined
        : reuse
          ? putRecordOfUncommitted(threadId, change.step)
          : putStep(threadId, change.step);
      await Promise.all([record, alongside]);
      let item: Record<string, unknown> | undefined;
      try {
        const response = await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.thread(threadId),
            UpdateExpression: expression.update,
            ConditionExpression: expression.condition,
            ExpressionAttributeNames: expression.names,
            ExpressionAttributeValues: expression.values,
            ReturnValues: reuse ? 'ALL_NEW' : 'NONE',
          }),
        );
        item = response.Attributes;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        throw new StepthreadError(
          'VERSION_CONFLICT',
          `thread ${threadId} is not at version ${expectedVersion} (changed concurrently, or missing)`,
          { cause: error },
        );
      }
      if (change.set?.metadata) await putListing(threadId, change.set.metadata.executionId);
      if (item) rememberJournal(journals, item);
      else followJournal(journals, threadId, expectedVersion, change, batch?.tail);
      if (reuse && item && expectedVersion + 1 > (newest.get(threadId) ?? 0)) {
        newest.set(threadId, expectedVersion + 1);
        written.set(threadId, item);
      }
      return { version: expectedVersion + 1 };
    },

    async addToGlobal(rootId, increment) {
      written.delete(rootId);
      const x = new ExpressionBuilder();
      const value = `${x.name('variables')}.${x.name('global')}.${x.name(increment.name)}`;
      const writer = `${x.name('globalWriters')}.${x.name(increment.writerId)}`;
      const version = x.name('version');
      const step = x.value(increment.step);
      const conditions = [
        `attribute_type(${value}, ${x.value('N')})`,
        `(attribute_not_exists(${writer}) OR ${writer} <> ${step})`,
        `${x.name('status')} <> ${x.value('CANCELLED')}`,
        ...(increment.joinKey === undefined
          ? []
          : [`NOT contains(${x.name('closedJoins')}, ${x.value(increment.joinKey)})`]),
      ];
      const update = `SET ${value} = ${value} + ${x.value(increment.delta)}, ${writer} = ${step}, ${version} = ${version} + ${x.value(1)}`;
      const send = () =>
        dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.thread(rootId),
            UpdateExpression: update,
            ConditionExpression: conditions.join(' AND '),
            ExpressionAttributeNames: x.names,
            ExpressionAttributeValues: x.values,
            ReturnValues: 'UPDATED_NEW',
          }),
        );
      try {
        let response: Awaited<ReturnType<typeof send>>;
        try {
          response = await send();
        } catch (error) {
          // The root has no `globalWriters` map yet (a path inside a missing map is invalid): make one.
          if (!(error instanceof Error && error.name === 'ValidationException')) throw error;
          await dynamo
            .send(
              new UpdateCommand({
                TableName: tableName,
                Key: itemKeys.thread(rootId),
                UpdateExpression: 'SET #w = :empty',
                ConditionExpression: 'attribute_exists(#v) AND attribute_not_exists(#w)',
                ExpressionAttributeNames: { '#w': 'globalWriters', '#v': 'version' },
                ExpressionAttributeValues: { ':empty': {} },
              }),
            )
            .catch((created: unknown) => {
              if (!isConditionalCheckFailed(created)) throw created;
            });
          response = await send();
        }
        const attributes = response.Attributes as
          | { version: number; variables: { global: Record<string, number> } }
          | undefined;
        if (attributes === undefined) throw new Error('UpdateItem returned no attributes');
        return { value: attributes.variables.global[increment.name]!, version: attributes.version };
      } catch (error) {
        if (isConditionalCheckFailed(error)) return 'refused';
        throw error;
      }
    },

    async forgetGlobalWriter(rootId, writerId, step) {
      written.delete(rootId);
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.thread(rootId),
            UpdateExpression: 'REMOVE #w.#me',
            // Only the entry of this step: a later step of the same writer may have set its own.
            ConditionExpression: '#w.#me = :step',
            ExpressionAttributeNames: { '#w': 'globalWriters', '#me': writerId },
            ExpressionAttributeValues: { ':step': step },
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    },

    async listThreadsOfExecution(executionId) {
      const items = await queryGsi1Partition(table, gsi1Partitions.threadsOfExecution(executionId));
      const ids = items.map((item) => String(item.threadId));
      const threads = ids.length === 0 ? [] : await store.getThreads(ids).catch(() => missingTolerant(ids));
      // The index is eventually consistent: keep only threads still listed under this execution.
      return threads.filter((entry) => entry.thread.metadata.executionId === executionId);
    },

    expireThread: (threadId, expiresAt) => expireThread(table, threadId, expiresAt),
    pinForCopy: (threadId, copiedAtStep) => pinForCopy(table, threadId, copiedAtStep),

    async putNodeResults(threadId, results) {
      if (results.length === 0) return;
      const items = nodeResultItems(threadId, results);
      if (items.length === 1) {
        await dynamo.send(new PutCommand({ TableName: tableName, Item: items[0] }));
        return;
      }
      await putItems(items);
    },

    async createForkChildren(threads) {
      for (const thread of threads) written.delete(thread.id);
      await putItems(
        threads.flatMap((thread) => [
          newHeadItem(thread),
          listingItem(thread.id, thread.metadata.executionId),
          ...nodeResultItems(thread.id, Object.values(thread.nodeResults)),
        ]),
      );
    },

    async getNodeResults(lineage, nodeIds) {
      const byThread = new Map<string, Map<string, NodeResult>>();
      const add = (item: Record<string, unknown>) => {
        const threadId = String(item.pk).slice(itemKeys.thread('').pk.length);
        const result = item.result as NodeResult;
        if (!byThread.has(threadId)) byThread.set(threadId, new Map());
        byThread.get(threadId)!.set(result.nodeId, result);
      };
      if (nodeIds === 'all') {
        const pages = await Promise.all(lineage.map((id) => queryPrefix(id, NODE_RESULT_PREFIX)));
        for (const page of pages) for (const item of page) add(item);
      } else if (nodeIds.length > 0) {
        const keys = lineage.flatMap((threadId) =>
          [...new Set(nodeIds)].map((nodeId) => ({ ...itemKeys.nodeResult(threadId, nodeId) })),
        );
        for (const item of await batchGet(keys)) add(item);
      }
      const results: Record<string, NodeResult> = {};
      // Farthest ancestor first, so nearer threads overwrite: the thread's own result wins.
      for (const threadId of [...lineage].reverse()) {
        for (const [nodeId, result] of byThread.get(threadId) ?? []) {
          Object.defineProperty(results, nodeId, {
            value: result,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
      }
      return results;
    },

    putStepRecord: (threadId, record) => putStep(threadId, record),
    putStepOnce: (threadId, record) => putStep(threadId, record, { once: true }),

    async segmentIds(threadIds) {
      const pages = await Promise.all(
        threadIds.map((threadId) =>
          queryPrefix(threadId, STEP_PREFIX, {}, '#state.#conversation.#log.#id', {
            '#state': 'state',
            '#conversation': 'conversation',
            '#log': 'log',
            '#id': 'id',
          }),
        ),
      );
      return pages.flat().flatMap((item) => {
        const id = (item.state as { conversation?: { log?: { id?: unknown } } } | undefined)?.conversation
          ?.log?.id;
        return typeof id === 'string' ? [id] : [];
      });
    },

    async getStep(threadId, step) {
      const { Item } = await dynamo.send(
        new GetCommand({ TableName: tableName, Key: itemKeys.step(threadId, step), ConsistentRead: true }),
      );
      return Item ? stepRecordOf(Item) : undefined;
    },

    async readSteps(threadId, range = {}) {
      const items = await queryPrefix(threadId, STEP_PREFIX, {
        ...(range.from !== undefined ? { from: itemKeys.step(threadId, range.from).sk } : {}),
        ...(range.to !== undefined ? { to: itemKeys.step(threadId, range.to).sk } : {}),
      });
      return items.map(stepRecordOf);
    },

    async readStepMeters(threadId, to) {
      return (await stepPass(threadId, to, METER_FIELDS)).map((step) => step.result as StepMeter);
    },

    async readJournal(threadId, options = {}) {
      const item = await readItem(threadId);
      if (!item) throw new StepthreadError('THREAD_NOT_FOUND', `thread ${threadId} not found`);
      const { thread } = versioned(item);
      // Records past the head's step belong to an attempt that never committed.
      const segments = await segmentsOf(thread, thread.step ?? 0, (item.events ?? []) as StepthreadEvent[]);
      const length = segments.reduce((sum, segment) => sum + segment.steps, 0);
      const [parts, batches] = await Promise.all([
        readParts(segments, options.window?.(length)),
        eventBatches(item),
      ]);
      return { ...journalOf(segments, parts, batches), length };
    },

    readStepResults: async (threadId) => (await latestResults(threadId, false)).results,
    readStepResultsAndMeters: (threadId) => latestResults(threadId, true),
  };

  /**
   * The latest result of each node the thread ran (readStepResults) and, `withMeters`, the meters of
   * its own steps, read in the same projected pass over its step records.
   */
  async function latestResults(threadId: string, withMeters: boolean): Promise<StepResultsAndMeters> {
    // A copy's source (time travel) may be a pruned thread its copies still read.
    const { thread } = await store.getCopySource(threadId);
    // Each node's latest step, in the order the nodes first ran (a Map keeps first insertion's place).
    const latest = new Map<string, { threadId: string; step: number }>();
    let meters: StepMeter[] = [];
    for (const segment of await segmentsOf(thread, thread.step ?? 0)) {
      // The last segment is the thread's own steps; a copy's earlier ones were its source's run.
      const own = withMeters && segment.threadId === thread.id;
      const steps = await stepPass(segment.threadId, segment.steps, own ? METER_FIELDS : ['nodeId']);
      for (const { step, result } of steps) latest.set(result.nodeId, { threadId: segment.threadId, step });
      if (own) meters = steps.map((step) => step.result as StepMeter);
    }
    const keys = [...latest.values()].map(({ threadId: id, step }) => ({ ...itemKeys.step(id, step) }));
    const bySk = new Map((await batchGet(keys)).map((item) => [`${item.pk} ${item.sk}`, item]));
    const results: Record<string, NodeResult> = {};
    for (const [nodeId, { threadId: id, step }] of latest) {
      const key = itemKeys.step(id, step);
      const item = bySk.get(`${key.pk} ${key.sk}`);
      if (item === undefined) continue;
      // defineProperty: a node id such as `__proto__` stays plain data.
      Object.defineProperty(results, nodeId, {
        value: stepRecordOf(item).result,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return { results, meters };
  }

  /**
   * The step number and these fields of the result of a thread's first `to` step records: no values
   * or events, so a long run's pass is small (DynamoDB still pages it by the records' stored size).
   */
  async function stepPass(
    threadId: string,
    to: number,
    fields: readonly (keyof NodeResult)[],
  ): Promise<{ step: number; result: Pick<NodeResult, 'nodeId'> & Partial<NodeResult> }[]> {
    if (to < 1) return [];
    const items = await queryPrefix(
      threadId,
      STEP_PREFIX,
      { to: itemKeys.step(threadId, to).sk },
      ['#step', ...fields.map((field) => `#result.#${field}`)].join(', '),
      {
        '#step': 'step',
        '#result': 'result',
        ...Object.fromEntries(fields.map((field) => [`#${field}`, field])),
      },
    );
    return items.map((item) => ({ step: Number(item.step), result: item.result as NodeResult }));
  }

  /**
   * The parts of a thread's history, oldest first: the steps of the thread it was copied from up to
   * the copy (read through `copiedAtStep`, recursively: a copy of a copy), then its own first `step`
   * steps, after the events its head was created with (`created`: a copy's THREAD_COPIED).
   */
  async function segmentsOf(
    thread: Thread,
    step: number,
    created: readonly StepthreadEvent[] = [],
  ): Promise<HistorySegment[]> {
    const source = copySourceOf(thread);
    const before = source
      ? await segmentsOf((await store.getCopySource(source.threadId)).thread, source.step)
      : [];
    return [...before, { threadId: thread.id, steps: step, created }];
  }

  /**
   * The step records of `segments`: every step, or those at the positions `ranges` name (one Query
   * per range that meets a segment, in parallel).
   */
  async function readParts(
    segments: readonly HistorySegment[],
    ranges: readonly HistoryRange[] | undefined,
  ): Promise<JournalPart[]> {
    let offset = 0;
    const reads = segments.map((segment) => {
      const start = offset;
      offset += segment.steps;
      const spans =
        ranges === undefined ? [{ from: 1, to: segment.steps }] : spansWithin(ranges, start, segment.steps);
      return Promise.all(
        spans.map((span) =>
          span.from > span.to ? Promise.resolve([]) : store.readSteps(segment.threadId, span),
        ),
      ).then((read) => ({ start, steps: read.flat() }));
    });
    return Promise.all(reads);
  }

  return store;
}

/** The step records read of one history segment, and the position its first step has less one. */
interface JournalPart {
  readonly start: number;
  readonly steps: StepRecord[];
}

/** Events an update recorded outside a step, committed when the thread's head was at `afterStep`. */
interface EventBatch {
  readonly afterStep: number;
  readonly events: StepthreadEvent[];
}

/**
 * The history and events of `segments` from the records read of them: each segment's creation
 * events, then its steps' events; the thread's own batches recorded outside steps (the last
 * segment's) each after the events of the step the head was at when it was committed, so a
 * continuation's THREAD_CONTINUED sits between the steps it came between (a batch whose step was not
 * read, outside a window, goes where that step would be).
 */
function journalOf(
  segments: readonly HistorySegment[],
  parts: readonly JournalPart[],
  batches: readonly EventBatch[],
): Omit<JournalWindow, 'length'> {
  const own = parts.length - 1;
  const events = parts.flatMap(({ steps }, i) => {
    const out = [...segments[i]!.created];
    const pending = i === own ? [...batches] : [];
    for (const record of steps) {
      while (pending.length > 0 && pending[0]!.afterStep < record.step) out.push(...pending.shift()!.events);
      out.push(...record.events);
    }
    for (const batch of pending) out.push(...batch.events);
    return out;
  });
  return {
    executionHistory: parts.flatMap(({ steps }) => steps.map(historyEntryOf)),
    events,
    logs: parts.flatMap(({ steps }) => steps.map((record) => record.result.logs)),
    usage: parts.flatMap(({ steps }) => steps.map((record) => record.result.usage)),
    positions: parts.flatMap(({ start, steps }) => steps.map((record) => start + record.step)),
  };
}

/**
 * Events as a batch item holds them: without the thread id and workflow id the key and the head
 * already say (DynamoDB bills by item size); `decodeEvents` puts them back.
 */
function encodeEvents(
  events: readonly StepthreadEvent[],
  threadId: string,
  workflowId: string | undefined,
): Record<string, unknown>[] {
  return events.map((event) => {
    const { threadId: id, workflowId: w, ...rest } = event;
    return {
      ...rest,
      ...(id === threadId ? {} : { threadId: id }),
      ...(w === workflowId ? {} : { workflowId: w }),
    };
  });
}

function decodeEvents(
  stored: readonly unknown[],
  threadId: string,
  workflowId: string | undefined,
): StepthreadEvent[] {
  return stored.map((event) => ({ threadId, workflowId, ...(event as object) }) as StepthreadEvent);
}

/** One thread's part of a history: its first `steps` step records, after the events it was created with. */
interface HistorySegment {
  readonly threadId: string;
  readonly steps: number;
  readonly created: readonly StepthreadEvent[];
}

/**
 * The step numbers of a segment (its steps at positions `start + 1 … start + steps`) that `ranges`
 * cover, as ranges of its own steps, merged where they overlap so no record is read twice.
 */
export function spansWithin(ranges: readonly HistoryRange[], start: number, steps: number): HistoryRange[] {
  const spans = ranges
    .map(({ from, to }) => ({ from: Math.max(from - start, 1), to: Math.min(to - start, steps) }))
    .filter(({ from, to }) => from <= to)
    .sort((a, b) => a.from - b.from);
  const merged: HistoryRange[] = [];
  for (const span of spans) {
    const last = merged.at(-1);
    if (last !== undefined && span.from <= last.to + 1)
      merged[merged.length - 1] = { ...last, to: Math.max(last.to, span.to) };
    else merged.push(span);
  }
  return merged;
}

/** Where a copy came from: its source thread and the source's step count it was copied at. */
export function copySourceOf(thread: Thread): { threadId: string; step: number } | undefined {
  const { copiedFrom, copiedAtStep } = thread.metadata;
  return typeof copiedFrom === 'string' && typeof copiedAtStep === 'number'
    ? { threadId: copiedFrom, step: copiedAtStep }
    : undefined;
}

function stepRecordOf(item: Record<string, unknown>): StepRecord {
  const { step, result, events, state, removed, out } = item as unknown as StepRecord;
  const threadId = String(item.pk).slice(itemKeys.thread('').pk.length);
  const workflowId = item.workflowId;
  return {
    step: Number(step),
    result,
    events: (events ?? []).map((event) =>
      typeof event === 'string'
        ? lifecycleEvent(event, result, threadId, workflowId)
        : ({ threadId, workflowId, ...(event as object) } as StepthreadEvent),
    ),
    ...(state === undefined ? {} : { state: decodeHead(state, threadId) as StepState }),
    ...(removed === undefined ? {} : { removed }),
    ...(out === undefined ? {} : { out }),
  };
}

/** Latest-result items (NODE#), what `{{nodes.<id>}}` reads. */
function nodeResultItems(threadId: string, results: readonly NodeResult[]): Record<string, unknown>[] {
  return results.map(({ logs: _logs, ...result }) => ({
    ...itemKeys.nodeResult(threadId, result.nodeId),
    kind: 'node',
    // Console output stays in the step record: `{{nodes.<id>}}` reads the output only.
    result,
  }));
}

/** A new thread's head item, at version 1, with the hash of the content it was created with. */
function newHeadItem(thread: Thread): Record<string, unknown> & { createHash: string } {
  const head = headOf(thread);
  return {
    ...head,
    ...itemKeys.thread(thread.id),
    kind: 'thread',
    version: 1,
    createHash: contentHash(head).slice(0, 32),
  };
}

/** A thread's entry in the executions listing (GSI1): an item of its own beside the head. */
function listingItem(threadId: string, executionId: string | undefined): Record<string, unknown> {
  return {
    ...itemKeys.listing(threadId),
    kind: 'listing',
    threadId,
    ...(executionId ? gsi1Keys.threadOfExecution(executionId, threadId) : {}),
  };
}

/** The parts of a head an event batch records: where the journal places it, and the chain it extends. */
interface HeadJournal {
  readonly version: number;
  readonly step: number;
  readonly tail?: string;
  readonly workflowId?: string;
}

function headJournalOf(item: Record<string, unknown>): HeadJournal {
  return {
    version: Number(item.version),
    step: Number(item.step ?? 0),
    ...(typeof item.eventsTail === 'string' ? { tail: item.eventsTail } : {}),
    ...(typeof item.workflowId === 'string' ? { workflowId: item.workflowId } : {}),
  };
}

/** Heads a store keeps journal facts of: enough for a run's threads, bounded for a long-lived Lambda. */
const JOURNALS_KEPT = 10_000;

/** Keeps `item`'s journal facts, unless it still holds an earlier layout's batch (that needs the read). */
function rememberJournal(journals: Map<string, HeadJournal>, item: Record<string, unknown>): void {
  const threadId = typeof item.id === 'string' ? item.id : undefined;
  if (threadId === undefined || item.version === undefined) return;
  journals.delete(threadId);
  if (Array.isArray(item.recentEvents) && item.recentEvents.length > 0) return;
  if (journals.size >= JOURNALS_KEPT) journals.delete(journals.keys().next().value!);
  journals.set(threadId, headJournalOf(item));
}

/** A head this store updated without reading it back: its facts after the update, from before it. */
function followJournal(
  journals: Map<string, HeadJournal>,
  threadId: string,
  expectedVersion: number,
  change: ThreadChange,
  tail: string | undefined,
): void {
  const before = journals.get(threadId);
  journals.delete(threadId);
  if (before?.version !== expectedVersion) return;
  const step = change.set?.step;
  journals.set(threadId, {
    ...before,
    version: expectedVersion + 1,
    ...(typeof step === 'number' ? { step } : {}),
    ...(tail === undefined ? {} : { tail }),
  });
}

/**
 * The head as a thread. Its `events` are those it was created with; `readJournal` has them all (the
 * steps' and those recorded outside steps).
 */
function versioned(item: Record<string, unknown>): VersionedThread {
  const head = decodeHead(entityOf<Record<string, unknown>>(item), String(item.id));
  return {
    thread: { ...head, nodeResults: {}, executionHistory: [] } as unknown as Thread,
    version: Number(item.version),
  };
}

interface UpdateExpressionParts {
  update: string;
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/**
 * The UpdateItem of `change`. `batch`: the item its events recorded outside a step were written to
 * (`putEventBatch`), which the head's `eventsTail` comes to name; `legacy` when the head still holds
 * an earlier layout's batch, which that moved to its own item and this removes.
 */
export function buildUpdate(
  threadId: string,
  change: ThreadChange,
  expectedVersion: number,
  batch?: { readonly tail: string; readonly legacy: boolean },
): UpdateExpressionParts {
  const x = new ExpressionBuilder();
  const sets: string[] = [];
  const removes: string[] = [];
  const touched = new Set<string>();
  const touch = (field: string) => {
    // DynamoDB rejects overlapping paths in one expression; say which field, early.
    if (touched.has(field)) throw new TypeError(`thread change touches "${field}" twice`);
    if (NOT_IN_HEAD.has(field)) throw new TypeError(`"${field}" is not stored in the thread item`);
    touched.add(field);
  };

  for (const [field, value] of Object.entries(encodeHeadFields(change.set ?? {}, threadId))) {
    if (value === undefined) continue;
    touch(field);
    sets.push(`${x.name(field)} = ${x.value(value)}`);
  }
  for (const field of change.remove ?? []) {
    touch(field);
    removes.push(x.name(field));
  }
  for (const [field, items] of Object.entries(change.append ?? {})) {
    if (!Array.isArray(items) || items.length === 0) continue;
    touch(field);
    if (field === 'events') {
      // The events are in their own item (putEventBatch): the head names it, the newest of a chain.
      if (batch === undefined)
        throw new TypeError('events recorded outside a step need their batch written first');
      sets.push(`${x.name('eventsTail')} = ${x.value(batch.tail)}`);
      if (batch.legacy) removes.push(x.name('recentEvents'), x.name('recentEventsAt'));
      continue;
    }
    const name = x.name(field);
    // if_not_exists: items written before a list field existed have no attribute yet.
    sets.push(`${name} = list_append(if_not_exists(${name}, ${x.value([])}), ${x.value(items)})`);
  }
  if (change.expiresAt !== undefined) sets.push(`${x.name(TTL_ATTRIBUTE)} = ${x.value(change.expiresAt)}`);

  const version = x.name('version');
  sets.push(`${version} = ${x.value(expectedVersion + 1)}`);
  const condition = `${version} = ${x.value(expectedVersion)}`;
  const update = `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`;
  return { update, condition, names: x.names, values: x.values };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
