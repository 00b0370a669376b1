/**
 * A FORK over a list keeps its items in the bucket, not on item threads: the FORK writes one item
 * source (`map/sources/<base>.json`: the item threads' shared part, then each item's JSON, one a line)
 * and, when distributed, the item list a Distributed Map's ItemReader reads (`map/items/<base>.json`,
 * each item's byte range in the source). Each item creates its own thread on its first step from two
 * range reads of the source (functions/nodes/map-items.ts), so the FORK's writes do not grow with the
 * list. Everything lives under `map/`, expired with the stack's `retentionDays`.
 */
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';

/** Loaded on first use, so a handler that never fans out does not load the S3 client. */
const s3Commands = once(() => import('@aws-sdk/client-s3'));

/** Everything FORKs over a list keep in the bucket (per run: expired with `retentionDays`). */
export const MAP_PREFIX = 'map/';
export const ITEM_LIST_PREFIX = 'map/items/';
export const ITEM_SOURCE_PREFIX = 'map/sources/';
export const MAP_RESULTS_PREFIX = 'map/results/';

/** Bytes `[start, end)` of one part of an item source. */
export type ByteRange = readonly [number, number];

export interface ItemListLocation {
  readonly bucket: string;
  readonly key: string;
  /** Where the Map's ResultWriter writes (a prefix). */
  readonly results: string;
}

/** Where a FORK's item source is: its key and the range of the shared part. */
export interface ItemSourceLocation {
  readonly key: string;
  readonly template: ByteRange;
}

export interface WrittenItemSource {
  readonly source: ItemSourceLocation;
  /** Each item's range, in item order: what the Map iterates. */
  readonly items: ByteRange[];
}

export interface ItemListStore {
  /**
   * Writes the item source of the FORK whose item threads are `<id>-<index>`: `template` (the part
   * every item thread shares) and each item (idempotent: same id, same body).
   */
  putItemSource(id: string, template: unknown, items: readonly unknown[]): Promise<WrittenItemSource>;
  /** One PutObject: the Distributed Map's item list (each item's range) under a key derived from `id`. */
  putItemList(id: string, items: readonly ByteRange[]): Promise<ItemListLocation>;
  /** Reads an item list back (the local runner's ItemReader). */
  readItemList(bucket: string, key: string): Promise<unknown[]>;
  /** Reads one range of an item source and parses it. */
  readItemSource(key: string, range: ByteRange): Promise<unknown>;
}

/** The item source's body: `template` then each item, one JSON text a line, and where each is. */
export function itemSourceBody(
  template: unknown,
  items: readonly unknown[],
): { body: Buffer; template: ByteRange; items: ByteRange[] } {
  const parts = [template, ...items].map((part) => Buffer.from(`${JSON.stringify(part ?? null)}\n`, 'utf8'));
  const ranges: ByteRange[] = [];
  let offset = 0;
  for (const part of parts) {
    // The newline stays out of the range.
    ranges.push([offset, offset + part.length - 1]);
    offset += part.length;
  }
  const [first, ...rest] = ranges;
  return { body: Buffer.concat(parts), template: first!, items: rest };
}

export function createItemListStore({
  s3,
  bucketName,
}: {
  readonly s3: ObjectClient;
  readonly bucketName: string;
}): ItemListStore {
  const put = async (key: string, body: string | Buffer, contentType: string) => {
    const { PutObjectCommand } = await s3Commands();
    await s3.send(
      new PutObjectCommand({ Bucket: bucketName, Key: key, Body: body, ContentType: contentType }),
    );
  };
  return {
    async putItemSource(id, template, items) {
      const key = `${ITEM_SOURCE_PREFIX}${id}.json`;
      const written = itemSourceBody(template, items);
      await put(key, written.body, 'application/x-ndjson');
      return { source: { key, template: written.template }, items: written.items };
    },
    async putItemList(id, items) {
      const key = `${ITEM_LIST_PREFIX}${id}.json`;
      await put(key, JSON.stringify(items), 'application/json');
      return { bucket: bucketName, key, results: `${MAP_RESULTS_PREFIX}${id}` };
    },
    async readItemList(bucket, key) {
      const { GetObjectCommand } = await s3Commands();
      const response = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const parsed: unknown = JSON.parse((await response.Body?.transformToString('utf-8')) ?? '[]');
      return Array.isArray(parsed) ? parsed : [];
    },
    async readItemSource(key, [start, end]) {
      const { GetObjectCommand } = await s3Commands();
      const response = await s3.send(
        new GetObjectCommand({ Bucket: bucketName, Key: key, Range: `bytes=${start}-${end - 1}` }),
      );
      return JSON.parse((await response.Body?.transformToString('utf-8')) ?? 'null') as unknown;
    },
  };
}
