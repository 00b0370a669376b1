/**
 * Join bookkeeping: which fork paths have finished, and how. One item per join instance
 * (`JOIN#<joinKey>`), one attribute per path, each written at most once, and the order the paths
 * reported in (`reportOrder`), appended by the same update: the join's decision is the shortest
 * prefix of that order that decides it (functions/nodes/join.ts), so no report writes it apart.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { CodedError } from '../../engine/errors.ts';
import type { ThreadStatus } from '../../engine/thread/types.ts';
import { isConditionalCheckFailed, type TableRef } from './dynamo-items.ts';
import { type ItemKey, itemKeys, TTL_ATTRIBUTE } from './table.ts';

/** What a finished fork path reports to its join. */
export interface BranchOutcome {
  readonly threadId: string;
  readonly status: Extract<ThreadStatus, 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMEOUT'>;
  /** ISO timestamp. */
  readonly endedAt: string;
  readonly output?: unknown;
  readonly error?: CodedError;
}

/** A join item as read: what its paths reported, and in which order. */
export interface JoinState<T = BranchOutcome> {
  /** Every outcome recorded so far, by forkPathId. */
  readonly outcomes: Readonly<Record<string, T>>;
  /**
   * The paths in the order they reported; paths an earlier layout recorded without an order come
   * first (sorted: they reported before any path that has one).
   */
  readonly order: readonly string[];
  /** The paths an earlier layout's report recorded as its decision (the first decision stands). */
  readonly decision?: readonly string[];
}

export interface RecordedOutcomes<T> extends JoinState<T> {
  /** False when this path had already been recorded (a retry): the first outcome stands. */
  readonly recorded: boolean;
}

export interface JoinStore {
  /**
   * Records `outcome` for `forkPathId` unless that path is already recorded, appending the path to
   * the report order in the same conditional write, and returns the item so far: one UpdateItem,
   * plus one read only when the path was already there.
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
   * A FORK over a list: counts one finished item (one UpdateItem on a fixed-size item, whatever the
   * number of items) and returns the counts so far. Not idempotent by itself: the caller counts an
   * item only in the invocation that finished its thread, so a retry undercounts rather than overcounts.
   */
  countItem(joinKey: string, status: 'COMPLETED' | 'FAILED'): Promise<{ completed: number; failed: number }>;
}

const PATH_PREFIX = 'path:';

/** The key of a join's item, for a caller that reads it with other items (one BatchGetItem). */
export function joinItemKey(joinKey: string): ItemKey {
  return itemKeys.join(joinKey);
}

export function createJoinStore({ dynamo, tableName }: TableRef): JoinStore {
  async function readJoin<T>(joinKey: string): Promise<JoinState<T>> {
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: tableName, Key: itemKeys.join(joinKey), ConsistentRead: true }),
    );
    return joinStateOf<T>(Item);
  }

  return {
    async recordBranchOutcome<T>(
      joinKey: string,
      forkPathId: string,
      outcome: T,
      options: { expiresAt?: number } = {},
    ) {
      const names: Record<string, string> = {
        '#path': `${PATH_PREFIX}${forkPathId}`,
        '#kind': 'kind',
        '#order': REPORT_ORDER,
      };
      const values: Record<string, unknown> = {
        ':outcome': outcome,
        ':kind': 'join',
        ':reported': [forkPathId],
        ':none': [],
      };
      let update =
        'SET #path = :outcome, #kind = :kind, #order = list_append(if_not_exists(#order, :none), :reported)';
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
        return { recorded: true, ...joinStateOf<T>(Attributes) };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      return { recorded: false, ...(await readJoin<T>(joinKey)) };
    },

    async getBranchOutcomes<T>(joinKey: string) {
      return (await readJoin<T>(joinKey)).outcomes;
    },

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
}

/** The join item's list of its paths in the order they reported. */
const REPORT_ORDER = 'reportOrder';
/** An earlier layout's attribute naming the paths its decision counted (read, never written now). */
const DECISION = 'decision';
/** A FORK over a list: how many items finished, and how. */
const ITEMS_COMPLETED = 'itemsCompleted';
const ITEMS_FAILED = 'itemsFailed';

/** A join item as stored (absent: nothing reported yet) as its outcomes, report order and any old decision. */
export function joinStateOf<T = BranchOutcome>(item: Record<string, unknown> | undefined): JoinState<T> {
  const outcomes: Record<string, T> = {};
  for (const [name, value] of Object.entries(item ?? {})) {
    if (name.startsWith(PATH_PREFIX)) outcomes[name.slice(PATH_PREFIX.length)] = value as T;
  }
  const stored = item?.[REPORT_ORDER];
  const ordered = Array.isArray(stored)
    ? stored.filter((path): path is string => typeof path === 'string')
    : [];
  const unordered = Object.keys(outcomes)
    .filter((path) => !ordered.includes(path))
    .sort();
  const decision = item?.[DECISION];
  return {
    outcomes,
    order: [...unordered, ...ordered],
    ...(Array.isArray(decision) ? { decision: decision as string[] } : {}),
  };
}
