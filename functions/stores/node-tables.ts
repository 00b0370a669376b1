/**
 * Node tables in the stepthread bucket (engine/asl/node-table.ts): the deploy stores each workflow's
 * table under `node-tables/<ref>.json` and never removes one, so a run pinned to an older definition
 * still finds the table its Tasks name; a function reads each table once per container. The functions'
 * roles may only read under this prefix.
 */
import type { NodeTable } from '../../engine/asl/node-table.ts';
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { type NodeTableSource, notFound, parseNodeTable } from '../handlers/node-tables.ts';

const s3Commands = once(() => import('@aws-sdk/client-s3'));

export const NODE_TABLE_PREFIX = 'node-tables/';

export function nodeTableKey(ref: string): string {
  return `${NODE_TABLE_PREFIX}${ref}.json`;
}

/** Reads tables from the bucket, each once: a table never changes under its ref. */
export function createS3NodeTables({
  s3,
  bucketName,
}: {
  readonly s3: () => Promise<ObjectClient>;
  readonly bucketName: string;
}): NodeTableSource {
  const tables = new Map<string, Promise<NodeTable>>();
  const read = async (ref: string): Promise<NodeTable> => {
    const [client, { GetObjectCommand }] = await Promise.all([s3(), s3Commands()]);
    let json: string;
    try {
      const response = await client.send(
        new GetObjectCommand({ Bucket: bucketName, Key: nodeTableKey(ref) }),
      );
      json = (await response.Body?.transformToString('utf-8')) ?? '';
    } catch (error) {
      if ((error as { name?: unknown }).name === 'NoSuchKey') {
        throw notFound(ref, `s3://${bucketName}/${nodeTableKey(ref)} does not exist`);
      }
      throw error;
    }
    return parseNodeTable(ref, json);
  };
  return {
    table(ref) {
      let table = tables.get(ref);
      if (table === undefined) {
        table = read(ref);
        tables.set(ref, table);
        // A failed read (throttled, not yet stored) is tried again by the next Task.
        table.catch(() => tables.delete(ref));
      }
      return table;
    },
  };
}

/** Stores a compiled table (what the deploy does; idempotent: the same ref has the same body). */
export async function putNodeTable(
  s3: ObjectClient,
  bucketName: string,
  table: { readonly ref: string; readonly json: string },
): Promise<void> {
  const { PutObjectCommand } = await s3Commands();
  await s3.send(
    new PutObjectCommand({
      Bucket: bucketName,
      Key: nodeTableKey(table.ref),
      Body: table.json,
      ContentType: 'application/json',
    }),
  );
}
