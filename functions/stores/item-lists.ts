/**
 * A distributed FORK over a list: the item list a Distributed Map's ItemReader reads (a JSON array of
 * the item indices, one object per fork instance) and the prefix its ResultWriter writes under. Both
 * live under `map/` in the stepthread bucket; the state machine's role may read and write only there.
 */
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';

/** Loaded on first use, so a handler that never fans out does not load the S3 client. */
const s3Commands = once(() => import('@aws-sdk/client-s3'));

/** Everything distributed FORKs keep in the bucket (per run: expired with `retentionDays`). */
export const MAP_PREFIX = 'map/';
export const ITEM_LIST_PREFIX = 'map/items/';
export const MAP_RESULTS_PREFIX = 'map/results/';

export interface ItemListLocation {
  readonly bucket: string;
  readonly key: string;
  /** Where the Map's ResultWriter writes (a prefix). */
  readonly results: string;
}

export interface ItemListStore {
  /** Writes the indices 0..count-1 under a key derived from `id` (idempotent: same id, same body). */
  putItemList(id: string, count: number): Promise<ItemListLocation>;
  /** Reads an item list back (the local runner's ItemReader). */
  readItemList(bucket: string, key: string): Promise<unknown[]>;
}

export function createItemListStore({
  s3,
  bucketName,
}: {
  readonly s3: ObjectClient;
  readonly bucketName: string;
}): ItemListStore {
  return {
    async putItemList(id, count) {
      const key = `${ITEM_LIST_PREFIX}${id}.json`;
      const { PutObjectCommand } = await s3Commands();
      const body = JSON.stringify(Array.from({ length: count }, (_, index) => index));
      await s3.send(
        new PutObjectCommand({ Bucket: bucketName, Key: key, Body: body, ContentType: 'application/json' }),
      );
      return { bucket: bucketName, key, results: `${MAP_RESULTS_PREFIX}${id}` };
    },
    async readItemList(bucket, key) {
      const { GetObjectCommand } = await s3Commands();
      const response = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const parsed: unknown = JSON.parse((await response.Body?.transformToString('utf-8')) ?? '[]');
      return Array.isArray(parsed) ? parsed : [];
    },
  };
}
