/**
 * Threads in DynamoDB: one item per thread (`THREAD#<id>`), the Thread's fields as top-level
 * attributes so one UpdateItem can set a field, one nodeResults entry, or append to a list
 * without resending the rest. A numeric `version` guards every write (optimistic concurrency);
 * no transactions, only single-item conditional writes.
 */
import { BatchGetCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeResult, Thread } from '../../engine/thread/types.ts';
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
  TTL_ATTRIBUTE,
} from './table.ts';

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
  };
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
