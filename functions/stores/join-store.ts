/**
 * Join bookkeeping: which fork paths have finished, and how. One item per join instance
 * (`JOIN#<joinKey>`), one attribute per path, each written at most once.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { CodedError } from '../../engine/errors.ts';
import type { ThreadStatus } from '../../engine/thread/types.ts';
import { isConditionalCheckFailed, type TableRef } from './dynamo-items.ts';
import { itemKeys, TTL_ATTRIBUTE } from './table.ts';

/** What a finished fork path reports to its join. */
export interface BranchOutcome {
  readonly threadId: string;
  readonly status: Extract<ThreadStatus, 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMEOUT'>;
  /** ISO timestamp. */
  readonly endedAt: string;
  readonly output?: unknown;
  readonly error?: CodedError;
}

export interface RecordedOutcomes<T> {
  /** False when this path had already been recorded (a retry): the first outcome stands. */
  readonly recorded: boolean;
  /** Every outcome recorded so far, by forkPathId. */
  readonly outcomes: Readonly<Record<string, T>>;
}

export interface JoinStore {
  /**
   * Records `outcome` for `forkPathId` unless that path is already recorded, and returns all
   * outcomes so far: one UpdateItem, plus one read only when the path was already there.
   */
  recordBranchOutcome<T = BranchOutcome>(
    joinKey: string,
    forkPathId: string,
    outcome: T,
    options?: { expiresAt?: number },
  ): Promise<RecordedOutcomes<T>>;
  /** Consistent read of the outcomes recorded so far (empty when none). */
  getBranchOutcomes<T = BranchOutcome>(joinKey: string): Promise<Readonly<Record<string, T>>>;
  /**
   * Records which paths the join's decision counted, unless one was recorded already (the first
   * decision stands), and returns the recorded one: the JOIN merges exactly those paths, so a
   * branch that finishes after the decision (a straggler) cannot change it.
   */
  recordDecision(joinKey: string, paths: readonly string[]): Promise<string[]>;
  /** The paths the decision counted, or undefined before a decision. */
  getDecision(joinKey: string): Promise<string[] | undefined>;
  /**
   * A FORK over a list: counts one finished item (one UpdateItem on a fixed-size item, whatever the
   * number of items) and returns the counts so far. Not idempotent by itself: the caller counts an
   * item only in the invocation that finished its thread, so a retry undercounts rather than overcounts.
   */
  countItem(joinKey: string, status: 'COMPLETED' | 'FAILED'): Promise<{ completed: number; failed: number }>;
}

const PATH_PREFIX = 'path:';

export function createJoinStore({ dynamo, tableName }: TableRef): JoinStore {
  async function getBranchOutcomes<T>(joinKey: string): Promise<Record<string, T>> {
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: tableName, Key: itemKeys.join(joinKey), ConsistentRead: true }),
    );
    return outcomesOf<T>(Item ?? {});
  }

  return {
    async recordBranchOutcome<T>(
      joinKey: string,
      forkPathId: string,
      outcome: T,
      options: { expiresAt?: number } = {},
    ) {
      const names: Record<string, string> = { '#path': `${PATH_PREFIX}${forkPathId}`, '#kind': 'kind' };
      const values: Record<string, unknown> = { ':outcome': outcome, ':kind': 'join' };
      let update = 'SET #path = :outcome, #kind = :kind';
      if (options.expiresAt !== undefined) {
        names['#ttl'] = TTL_ATTRIBUTE;
        values[':ttl'] = options.expiresAt;
        update += ', #ttl = :ttl';
      }
      try {
        const { Attributes } = await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.join(joinKey),
            UpdateExpression: update,
            // A retry of the same path must not count twice (nor overwrite the first outcome).
            ConditionExpression: 'attribute_not_exists(#path)',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
          }),
        );
        return { recorded: true, outcomes: outcomesOf<T>(Attributes ?? {}) };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      return { recorded: false, outcomes: await getBranchOutcomes<T>(joinKey) };
    },
    getBranchOutcomes,

    async recordDecision(joinKey, paths) {
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.join(joinKey),
            UpdateExpression: 'SET #decision = :paths',
            ConditionExpression: 'attribute_not_exists(#decision)',
            ExpressionAttributeNames: { '#decision': DECISION },
            ExpressionAttributeValues: { ':paths': [...paths] },
          }),
        );
        return [...paths];
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      return (await readDecision(joinKey)) ?? [...paths];
    },

    getDecision: readDecision,

    async countItem(joinKey, status) {
      const { Attributes } = await dynamo.send(
        new UpdateCommand({
          TableName: tableName,
          Key: itemKeys.join(joinKey),
          UpdateExpression: 'SET #kind = :kind ADD #counter :one',
          ExpressionAttributeNames: {
            '#kind': 'kind',
            '#counter': status === 'COMPLETED' ? ITEMS_COMPLETED : ITEMS_FAILED,
          },
          ExpressionAttributeValues: { ':kind': 'join', ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const count = (name: string): number => {
        const value = Attributes?.[name];
        return typeof value === 'number' ? value : 0;
      };
      return { completed: count(ITEMS_COMPLETED), failed: count(ITEMS_FAILED) };
    },
  };

  async function readDecision(joinKey: string): Promise<string[] | undefined> {
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: tableName, Key: itemKeys.join(joinKey), ConsistentRead: true }),
    );
    const decision = Item?.[DECISION];
    return Array.isArray(decision) ? (decision as string[]) : undefined;
  }
}

/** The join item's attribute naming the paths its decision counted. */
const DECISION = 'decision';
/** A FORK over a list: how many items finished, and how. */
const ITEMS_COMPLETED = 'itemsCompleted';
const ITEMS_FAILED = 'itemsFailed';

function outcomesOf<T>(item: Record<string, unknown>): Record<string, T> {
  const outcomes: Record<string, T> = {};
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith(PATH_PREFIX)) outcomes[name.slice(PATH_PREFIX.length)] = value as T;
  }
  return outcomes;
}
