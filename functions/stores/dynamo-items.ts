/** Small helpers shared by the DynamoDB stores. */
import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DocumentClient } from '../aws/dynamo-client.ts';
import { GSI1_NAME, GSI1_PARTITION_KEY, RESERVED_ATTRIBUTES } from './table.ts';

export interface TableRef {
  readonly dynamo: DocumentClient;
  readonly tableName: string;
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

const reserved = new Set<string>(RESERVED_ATTRIBUTES);

/** The entity's own fields: the item minus keys and store bookkeeping. */
export function entityOf<T>(item: Record<string, unknown>): T {
  const entity: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) if (!reserved.has(name)) entity[name] = value;
  return entity as T;
}

/** Builds ExpressionAttributeNames/Values with short generated placeholders. */
export class ExpressionBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly nameOf = new Map<string, string>();
  private valueCount = 0;

  name(attribute: string): string {
    let placeholder = this.nameOf.get(attribute);
    if (!placeholder) {
      placeholder = `#n${this.nameOf.size}`;
      this.nameOf.set(attribute, placeholder);
      this.names[placeholder] = attribute;
    }
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    return placeholder;
  }
}

/**
 * Every item of one GSI1 partition, following pagination, up to `limit` items when given; in sort-key
 * order, or the reverse with `newestFirst` (sort keys that start with a time).
 */
export async function queryGsi1Partition(
  { dynamo, tableName }: TableRef,
  partition: string,
  limit?: number,
  { newestFirst = false }: { newestFirst?: boolean } = {},
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: GSI1_NAME,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': GSI1_PARTITION_KEY },
        ExpressionAttributeValues: { ':pk': partition },
        ExclusiveStartKey: startKey,
        ...(newestFirst ? { ScanIndexForward: false } : {}),
        ...(limit !== undefined ? { Limit: limit - items.length } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && (limit === undefined || items.length < limit));
  return items;
}

/** BatchGetItem's own limit of keys per request. */
const BATCH_GET_LIMIT = 100;
/** Rounds of retrying unprocessed keys (throttling) before giving up. */
const MAX_UNPROCESSED_ROUNDS = 8;

/**
 * The items of `keys` that exist (consistent reads), in no particular order: 100 keys per
 * BatchGetItem, retrying the keys DynamoDB leaves unprocessed with a growing pause.
 */
export async function batchGetItems(
  { dynamo, tableName }: TableRef,
  keys: readonly Record<string, unknown>[],
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending = keys.slice(start, start + BATCH_GET_LIMIT);
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === MAX_UNPROCESSED_ROUNDS) throw new Error('BatchGetItem kept returning unprocessed keys');
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, 2 ** round * 10));
      const response = await dynamo.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }),
      );
      found.push(...(response.Responses?.[tableName] ?? []));
      pending = response.UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return found;
}
