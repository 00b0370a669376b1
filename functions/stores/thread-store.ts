/**
 * Threads in DynamoDB: one item per thread (`THREAD#<id>`), the Thread's fields as top-level
 * attributes so one UpdateItem can set a field, one nodeResults entry, or append to a list
 * without resending the rest. A numeric `version` guards every write (optimistic concurrency);
 * no transactions, only single-item conditional writes.
 *
 * The journal (executionHistory and events) grows with every step, so it is paged: when a step
 * would take the item's history past JOURNAL_PAGE_STEPS entries, the lists as loaded go to a page
 * item (`THREAD#<id>` / `JOURNAL#<page>`) and the step's own entries replace them in the item. The
 * page's content and number follow from the loaded version alone, so a retry writes the same page,
 * and the page only counts once the conditional UpdateItem raising `journalPages` lands.
 */
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { StepthreadError } from '../../engine/errors.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { ExecutionHistoryEntry, NodeResult, Thread } from '../../engine/thread/types.ts';
import { contentHash } from './canonical-json.ts';
import {
  ExpressionBuilder,
  entityOf,
  isConditionalCheckFailed,
  queryGsi1Partition,
  type TableRef,
} from './dynamo-items.ts';
import {
  GSI1_PARTITION_KEY,
  GSI1_SORT_KEY,
  gsi1Keys,
  gsi1Partitions,
  itemKeys,
  JOURNAL_PAGE_PREFIX,
  PARTITION_KEY,
  SORT_KEY,
  TTL_ATTRIBUTE,
} from './table.ts';

/** History entries (one per step) a thread item keeps before they move to a journal page. */
export const JOURNAL_PAGE_STEPS = 32;

/** A thread's journal: every history entry and event, oldest first. */
export interface ThreadJournal {
  readonly executionHistory: ExecutionHistoryEntry[];
  readonly events: StepthreadEvent[];
}

/** One journal page: the item's lists as they were when a step moved them out. */
export interface JournalPage extends ThreadJournal {
  /** From 1; `journalPages` on the thread counts the pages written so far. */
  readonly page: number;
}

export interface VersionedThread {
  readonly thread: Thread;
  readonly version: number;
}

/** Thread fields holding lists that grow during a run; appended to, never rewritten. */
export type ThreadListField = {
  [K in keyof Thread]-?: NonNullable<Thread[K]> extends readonly unknown[] ? K : never;
}[keyof Thread];

/** Optional Thread fields, the only ones a change may remove. */
export type ThreadOptionalField = {
  [K in keyof Thread]-?: object extends Pick<Thread, K> ? K : never;
}[keyof Thread];

/** One update of a thread. Its request size depends on the change, never on the thread. */
export interface ThreadChange {
  /** Top-level fields to replace. `id` is the key and cannot change. */
  readonly set?: { readonly [K in Exclude<keyof Thread, 'id'>]?: Thread[K] };
  /** Optional fields to delete (e.g. `currentNodeId` when the run ends). */
  readonly remove?: readonly ThreadOptionalField[];
  /** Replaces the entry `nodeResults[nodeResult.nodeId]`. */
  readonly nodeResult?: NodeResult;
  /** Items appended to list fields (executionHistory, errors, …). */
  readonly append?: { readonly [K in ThreadListField]?: Thread[K] };
  /** Epoch seconds after which DynamoDB may delete the item (TTL). */
  readonly expiresAt?: number;
  /** Written (PutItem) before the update; made by `withJournalPage`, which also resets the lists. */
  readonly journalPage?: JournalPage;
}

export interface ThreadStore {
  /**
   * Creates the thread at version 1. Creating the same content again is a no-op that reports the
   * current version (a retried create); different content under the same id is CREATE_CONFLICT.
   */
  createThread(
    thread: Thread,
    options?: { expiresAt?: number },
  ): Promise<{ version: number; created: boolean }>;
  /** Consistent read; THREAD_NOT_FOUND when absent. */
  getThread(threadId: string): Promise<VersionedThread>;
  /** Consistent reads in BatchGetItem requests (one per 100 ids), in the order of `threadIds`. */
  getThreads(threadIds: readonly string[]): Promise<VersionedThread[]>;
  /**
   * Applies `change` if the thread is at `expectedVersion`, in one UpdateItem, and returns the new
   * version. VERSION_CONFLICT otherwise: reload and check whether this write already landed.
   */
  updateThread(threadId: string, expectedVersion: number, change: ThreadChange): Promise<{ version: number }>;
  /** Threads whose `metadata.executionId` is `executionId` (GSI: eventually consistent). */
  listThreadsOfExecution(executionId: string): Promise<VersionedThread[]>;
  /**
   * The thread's full history and events: its journal pages in order (one Query), then the lists
   * in its item. THREAD_NOT_FOUND when absent.
   */
  readJournal(threadId: string): Promise<ThreadJournal>;
  /**
   * Writes `fromThreadId`'s first `pages` journal pages under `toThreadId` (a copy shares the
   * source's history up to the copy). Plain PutItems: writing them again changes nothing.
   */
  copyJournalPages(fromThreadId: string, toThreadId: string, pages: number): Promise<void>;
}

/**
 * `change` as committed on top of `loaded` (the thread at the version the change expects): when its
 * history entries would take the item past `pageSteps`, the loaded lists become the next journal
 * page and the change's entries replace them. Only the history length decides, so the step's own
 * events always stay in the item with its history entry (a replayed retry reads them there).
 */
export function withJournalPage(
  loaded: Pick<Thread, 'executionHistory' | 'events' | 'journalPages'>,
  change: ThreadChange,
  pageSteps: number = JOURNAL_PAGE_STEPS,
): ThreadChange {
  const { executionHistory: entries, events: newEvents, ...otherAppends } = change.append ?? {};
  if (entries === undefined || entries.length === 0) return change;
  if (loaded.executionHistory.length === 0 || loaded.executionHistory.length + entries.length <= pageSteps) {
    return change;
  }
  const page = (loaded.journalPages ?? 0) + 1;
  return {
    ...change,
    set: { ...change.set, executionHistory: entries, events: newEvents ?? [], journalPages: page },
    append: otherAppends,
    journalPage: { page, executionHistory: loaded.executionHistory, events: loaded.events ?? [] },
  };
}

const BATCH_GET_LIMIT = 100;
const MAX_UNPROCESSED_ROUNDS = 8;

export function createThreadStore(table: TableRef): ThreadStore {
  const { dynamo, tableName } = table;
  const readItem = async (threadId: string): Promise<Record<string, unknown> | undefined> => {
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: tableName, Key: itemKeys.thread(threadId), ConsistentRead: true }),
    );
    return Item;
  };

  return {
    async createThread(thread, options = {}) {
      const createHash = contentHash(thread);
      const item = {
        ...thread,
        ...itemKeys.thread(thread.id),
        ...executionGsi(thread),
        kind: 'thread',
        version: 1,
        createHash,
        ...(options.expiresAt !== undefined ? { [TTL_ATTRIBUTE]: options.expiresAt } : {}),
      };
      try {
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return { version: 1, created: true };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      const existing = await readItem(thread.id);
      // Compared by the hash of the content it was created with, so a retried create still
      // succeeds after later updates moved the thread on.
      if (existing && existing.createHash === createHash) {
        return { version: Number(existing.version), created: false };
      }
      throw new StepthreadError(
        'CREATE_CONFLICT',
        `thread ${thread.id} already exists with different content`,
      );
    },

    async getThread(threadId) {
      const item = await readItem(threadId);
      if (!item) throw new StepthreadError('THREAD_NOT_FOUND', `thread ${threadId} not found`);
      return versioned(item);
    },

    async getThreads(threadIds) {
      const unique = [...new Set(threadIds)];
      const found = new Map<string, VersionedThread>();
      for (let start = 0; start < unique.length; start += BATCH_GET_LIMIT) {
        let keys: Record<string, unknown>[] = unique
          .slice(start, start + BATCH_GET_LIMIT)
          .map((id) => ({ ...itemKeys.thread(id) }));
        for (let round = 0; keys.length > 0; round += 1) {
          if (round === MAX_UNPROCESSED_ROUNDS)
            throw new Error('BatchGetItem kept returning unprocessed keys');
          if (round > 0) await delay(2 ** round * 10);
          const response = await dynamo.send(
            new BatchGetCommand({ RequestItems: { [tableName]: { Keys: keys, ConsistentRead: true } } }),
          );
          for (const item of response.Responses?.[tableName] ?? []) {
            const entry = versioned(item);
            found.set(entry.thread.id, entry);
          }
          keys = response.UnprocessedKeys?.[tableName]?.Keys ?? [];
        }
      }
      const missing = unique.filter((id) => !found.has(id));
      if (missing.length > 0) {
        throw new StepthreadError('THREAD_NOT_FOUND', `thread(s) not found: ${missing.join(', ')}`);
      }
      return threadIds.map((id) => found.get(id)!);
    },

    async updateThread(threadId, expectedVersion, change) {
      const expression = buildUpdate(threadId, change, expectedVersion);
      if (change.journalPage) {
        // Before the update, so the thread never counts a page that is not there. Unconditional:
        // a retry (or a racing writer at the same version) writes the very same content.
        const { page, executionHistory, events } = change.journalPage;
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              ...itemKeys.journalPage(threadId, page),
              kind: 'journal',
              page,
              executionHistory,
              events,
            },
          }),
        );
      }
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.thread(threadId),
            UpdateExpression: expression.update,
            ConditionExpression: expression.condition,
            ExpressionAttributeNames: expression.names,
            ExpressionAttributeValues: expression.values,
            ReturnValues: 'NONE',
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        throw new StepthreadError(
          'VERSION_CONFLICT',
          `thread ${threadId} is not at version ${expectedVersion} (changed concurrently, or missing)`,
          { cause: error },
        );
      }
      return { version: expectedVersion + 1 };
    },

    async listThreadsOfExecution(executionId) {
      const items = await queryGsi1Partition(table, gsi1Partitions.threadsOfExecution(executionId));
      return items.map(versioned);
    },

    async readJournal(threadId) {
      // The item first: pages above its `journalPages` are a crashed commit's, not yet (or never)
      // part of the journal, and their entries are still in the item's lists.
      const item = await readItem(threadId);
      if (!item) throw new StepthreadError('THREAD_NOT_FOUND', `thread ${threadId} not found`);
      const { thread } = versioned(item);
      const pages = await readPages(threadId, thread.journalPages ?? 0);
      return {
        executionHistory: [...pages.flatMap((p) => p.executionHistory), ...thread.executionHistory],
        events: [...pages.flatMap((p) => p.events), ...(thread.events ?? [])],
      };
    },

    async copyJournalPages(fromThreadId, toThreadId, pages) {
      for (const { page, executionHistory, events } of await readPages(fromThreadId, pages)) {
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              ...itemKeys.journalPage(toThreadId, page),
              kind: 'journal',
              page,
              executionHistory,
              events,
            },
          }),
        );
      }
    },
  };

  /** Pages 1..`count` of a thread, in order (consistent Query over its partition). */
  async function readPages(threadId: string, count: number): Promise<JournalPage[]> {
    if (count === 0) return [];
    const found: JournalPage[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const response = await dynamo.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': PARTITION_KEY, '#sk': SORT_KEY },
          ExpressionAttributeValues: {
            ':pk': itemKeys.thread(threadId).pk,
            ':prefix': JOURNAL_PAGE_PREFIX,
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of response.Items ?? []) {
        const page = Number(item.page);
        if (page <= count) {
          found.push({
            page,
            executionHistory: item.executionHistory as ExecutionHistoryEntry[],
            events: item.events as StepthreadEvent[],
          });
        }
      }
      startKey = response.LastEvaluatedKey;
    } while (startKey);
    found.sort((a, b) => a.page - b.page);
    if (found.length !== count || found.some((p, i) => p.page !== i + 1)) {
      throw new StepthreadError(
        'THREAD_NOT_FOUND',
        `thread ${threadId} counts ${count} journal pages but ${found.length} are stored`,
      );
    }
    return found;
  }
}

function versioned(item: Record<string, unknown>): VersionedThread {
  return { thread: entityOf<Thread>(item), version: Number(item.version) };
}

function executionGsi(thread: Pick<Thread, 'id' | 'metadata'>): Record<string, string> {
  const executionId = thread.metadata.executionId;
  return executionId ? { ...gsi1Keys.threadOfExecution(executionId, thread.id) } : {};
}

interface UpdateExpressionParts {
  update: string;
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

export function buildUpdate(
  threadId: string,
  change: ThreadChange,
  expectedVersion: number,
): UpdateExpressionParts {
  const x = new ExpressionBuilder();
  const sets: string[] = [];
  const removes: string[] = [];
  const touched = new Set<string>();
  const touch = (field: string) => {
    // DynamoDB rejects overlapping paths in one expression; say which field, early.
    if (touched.has(field)) throw new TypeError(`thread change touches "${field}" twice`);
    touched.add(field);
  };

  for (const [field, value] of Object.entries(change.set ?? {})) {
    if (value === undefined) continue;
    touch(field);
    sets.push(`${x.name(field)} = ${x.value(value)}`);
  }
  for (const field of change.remove ?? []) {
    touch(field);
    removes.push(x.name(field));
  }
  if (change.nodeResult) {
    touch('nodeResults');
    sets.push(`${x.name('nodeResults')}.${x.name(change.nodeResult.nodeId)} = ${x.value(change.nodeResult)}`);
  }
  for (const [field, items] of Object.entries(change.append ?? {})) {
    if (!Array.isArray(items) || items.length === 0) continue;
    touch(field);
    const name = x.name(field);
    // if_not_exists: items written before a list field existed have no attribute yet.
    sets.push(`${name} = list_append(if_not_exists(${name}, ${x.value([])}), ${x.value(items)})`);
  }
  if (change.set?.metadata) {
    // Keep the executions listing in step with metadata.executionId.
    const executionId = change.set.metadata.executionId;
    if (executionId) {
      const keys = gsi1Keys.threadOfExecution(executionId, threadId);
      sets.push(`${x.name(GSI1_PARTITION_KEY)} = ${x.value(keys.gsi1pk)}`);
      sets.push(`${x.name(GSI1_SORT_KEY)} = ${x.value(keys.gsi1sk)}`);
    } else {
      removes.push(x.name(GSI1_PARTITION_KEY), x.name(GSI1_SORT_KEY));
    }
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
