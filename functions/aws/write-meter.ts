/**
 * What DynamoDB bills writes by: the size of each item written (for an UpdateItem, the item as it
 * is after the write). The request meter (meter.ts) counts request bytes, which for an UpdateItem
 * say nothing about the item; this one records the keys each write touches and, when asked, reads
 * those items back through a separate client (so the reads are not metered) and sizes them.
 *
 * Item size follows DynamoDB's rules closely enough for cost figures: attribute names and string
 * values in UTF-8 bytes, numbers by their digits, 1 byte for booleans and nulls, 3 bytes plus
 * contents for maps and lists.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { TableRef } from '../stores/dynamo-items.ts';
import { aroundCommands } from './meter.ts';

export interface ItemWrite {
  readonly command: 'PutItemCommand' | 'UpdateItemCommand';
  readonly pk: string;
  readonly sk: string;
}

export interface WriteMeter {
  /** Writes recorded since the last `take`, oldest first; clears them. */
  take(): ItemWrite[];
  /** The current size of each written item (read back now), in the order given. */
  sizes(writes: readonly ItemWrite[]): Promise<number[]>;
}

/** Records every PutItem / UpdateItem `client` sends; `reader` reads the items back unmetered. */
export function meterItemWrites(client: object, reader: TableRef): WriteMeter {
  let writes: ItemWrite[] = [];
  const record = (command: string, input: unknown) => {
    if (command !== 'PutItemCommand' && command !== 'UpdateItemCommand') return;
    const { Item, Key } = input as { Item?: Record<string, unknown>; Key?: Record<string, unknown> };
    const key = Item ?? Key ?? {};
    writes.push({ command, pk: stringOf(key.pk), sk: stringOf(key.sk) });
  };
  // After the call, so only writes that landed are sized.
  aroundCommands(client, async (call, next) => {
    const result = await next();
    record(call.commandName, call.input);
    return result;
  });
  return {
    take() {
      const taken = writes;
      writes = [];
      return taken;
    },
    async sizes(list) {
      return Promise.all(
        list.map(async ({ pk, sk }) => {
          const { Item } = await reader.dynamo.send(
            new GetCommand({ TableName: reader.tableName, Key: { pk, sk }, ConsistentRead: true }),
          );
          return Item ? itemBytes(Item) : 0;
        }),
      );
    },
  };
}

/** A key attribute, plain (document client) or marshalled (`{S: "..."}`). */
function stringOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && typeof (value as { S?: unknown }).S === 'string') {
    return (value as { S: string }).S;
  }
  return String(value);
}

/** An item's size in bytes by DynamoDB's sizing rules (plain, unmarshalled values). */
export function itemBytes(item: Record<string, unknown>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueBytes(value);
  return bytes;
}

function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number')
    return Math.ceil(String(Math.abs(value)).replace(/[.e+-]/g, '').length / 2) + 1;
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (Array.isArray(value))
    return 3 + value.reduce((sum: number, element) => sum + 1 + valueBytes(element), 0);
  if (typeof value === 'object') {
    return (
      3 +
      Object.entries(value).reduce(
        (sum, [name, member]) => sum + 1 + Buffer.byteLength(name) + valueBytes(member),
        0,
      )
    );
  }
  return 0;
}
