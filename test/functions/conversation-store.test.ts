import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LogPointer } from '../../engine/conversation/types.ts';
import { type AwsClients, createAwsClients, createS3Client } from '../../functions/aws/clients.ts';
import { type Meter, meterClient } from '../../functions/aws/meter.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import {
  type ConversationStore,
  createConversationStore,
  EMPTY_LOG,
  SegmentCache,
  segmentKey,
} from '../../functions/stores/conversation-store.ts';
import { makeMessages } from './fixtures.ts';

const names = { tableName: 'stepthread-conv', bucketName: 'stepthread-conv-test' };

let services: LocalServices;
let clients: AwsClients;
let meter: Meter;

beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true, names });
  clients = createAwsClients(services.target, names);
  meter = meterClient(clients.s3);
});
afterAll(() => services.close());
beforeEach(() => meter.reset());

/** A store with its own cache, so every test sees its own GET counts. */
function freshStore(maxBytes?: number): ConversationStore {
  return createConversationStore(clients, { cache: new SegmentCache(maxBytes) });
}

async function objectCount(): Promise<number> {
  // Listing is not a store operation: the SDK's client lists (the embedded one sends only what the stores send).
  const { KeyCount } = await createS3Client(services.target).send(
    new ListObjectsV2Command({ Bucket: names.bucketName }),
  );
  return KeyCount ?? 0;
}

async function buildLog(store: ConversationStore, segments: number, perSegment: number): Promise<LogPointer> {
  let pointer = EMPTY_LOG;
  for (let i = 0; i < segments; i += 1) {
    pointer = await store.appendMessages(pointer, makeMessages(perSegment, pointer.length));
  }
  return pointer;
}

describe('conversation store', () => {
  it('round-trips appends with one PutObject each, none for an empty append', async () => {
    const store = freshStore();
    const one = await store.appendMessages(EMPTY_LOG, makeMessages(3));
    const two = await store.appendMessages(one, makeMessages(2, 3));
    expect(await store.appendMessages(two, [])).toBe(two);
    expect(meter.requests('PutObjectCommand')).toBe(2);
    expect(two.length).toBe(5);
    expect(await freshStore().readLog(two)).toEqual(makeMessages(5));
    // The earlier pointer still names the shorter log: the log is immutable.
    expect(await freshStore().readLog(one)).toEqual(makeMessages(3));
    expect(await store.readLog(EMPTY_LOG)).toEqual([]);
  });

  it('re-appending the same messages writes the same key (idempotent retry)', async () => {
    const store = freshStore();
    const base = await store.appendMessages(EMPTY_LOG, makeMessages(2, 100));
    const before = await objectCount();
    const first = await store.appendMessages(base, makeMessages(1, 102));
    // Same content with keys in another order, as a message rebuilt on a retry might have.
    const reordered = makeMessages(1, 102).map((m) => ({ content: m.content, role: m.role }));
    const again = await store.appendMessages(base, reordered);
    expect(again).toEqual(first);
    expect(await objectCount()).toBe(before + 1);
  });

  it('reads back a 10,000-message log appended in 100 segments, exactly', async () => {
    const pointer = await buildLog(freshStore(), 100, 100);
    expect(pointer.length).toBe(10_000);
    const reader = freshStore();
    meter.reset();
    const messages = await reader.readLog(pointer);
    expect(messages).toEqual(makeMessages(10_000));
    expect(meter.requests('GetObjectCommand')).toBe(100);
  });

  it('writes the same bytes to append 2 messages to a 10- or a 10,000-message log', async () => {
    const store = freshStore();
    const short = await store.appendMessages(EMPTY_LOG, makeMessages(10));
    const long = await buildLog(store, 10, 1000);
    const appended = makeMessages(2, 50_000);

    meter.reset();
    await store.appendMessages(short, appended);
    const shortBytes = meter.bytes('PutObjectCommand');
    meter.reset();
    await store.appendMessages(long, appended);
    expect(meter.bytes('PutObjectCommand')).toBe(shortBytes);
    expect(shortBytes).toBeLessThan(400);
  });

  it('serves segments from the cache: a warm reader fetches only new segments', async () => {
    const writer = freshStore();
    const reader = freshStore();
    const first = await buildLog(writer, 5, 4);
    meter.reset();
    await reader.readLog(first);
    expect(meter.requests('GetObjectCommand')).toBe(5);

    const longer = await writer.appendMessages(first, makeMessages(2, 20));
    meter.reset();
    expect(await reader.readLog(longer)).toEqual(makeMessages(22));
    expect(meter.requests('GetObjectCommand')).toBe(1);

    // The writer cached what it wrote: no GET at all.
    meter.reset();
    expect(await writer.readLog(longer)).toHaveLength(22);
    expect(meter.requests('GetObjectCommand')).toBe(0);
  });

  it('reads a log grown since its last whole read by walking only the new segments', async () => {
    class CountingCache extends SegmentCache {
      gets = 0;
      override get(segmentId: string) {
        this.gets += 1;
        return super.get(segmentId);
      }
    }
    const cache = new CountingCache();
    const store = createConversationStore(clients, { cache });
    let pointer = await buildLog(store, 200, 2);
    cache.gets = 0;
    expect(await store.readLog(pointer)).toEqual(makeMessages(400));
    expect(cache.gets).toBe(200);
    for (let step = 0; step < 3; step += 1) {
      pointer = await store.appendMessages(pointer, makeMessages(2, pointer.length));
      cache.gets = 0;
      expect(await store.readLog(pointer)).toEqual(makeMessages(pointer.length));
      // The new head segment; the rest is the log as the previous read left it.
      expect(cache.gets).toBe(1);
    }
    const read = await store.readLog(pointer);
    read.push(...makeMessages(1));
    expect(await store.readLog(pointer)).toHaveLength(406);
  });

  it('forgets the logs it read whole once it evicts a segment, and still reads them right', async () => {
    const cache = new SegmentCache(2000);
    const store = createConversationStore(clients, { cache });
    const first = await buildLog(store, 5, 2);
    expect(await store.readLog(first)).toEqual(makeMessages(10));
    await buildLog(createConversationStore(clients, { cache }), 30, 2);
    meter.reset();
    expect(await store.readLog(first)).toEqual(makeMessages(10));
    expect(meter.requests('GetObjectCommand')).toBeGreaterThan(0);
  });

  it('bounds the cache by bytes, evicting the least recently used segments', async () => {
    const cache = new SegmentCache(1000);
    const store = createConversationStore(clients, { cache });
    await buildLog(store, 20, 2);
    expect(cache.bytes).toBeLessThanOrEqual(1000);
    expect(cache.size).toBeGreaterThan(0);
    expect(cache.size).toBeLessThan(20);
  });

  it('fails with coded errors on a missing segment, a corrupt one, or a length mismatch', async () => {
    const store = freshStore();
    await expect(store.readLog({ id: 'f'.repeat(64), length: 3 })).rejects.toMatchObject({
      code: 'SEGMENT_NOT_FOUND',
    });

    const pointer = await freshStore().appendMessages(EMPTY_LOG, makeMessages(3, 200));
    await expect(freshStore().readLog({ id: pointer.id, length: 4 })).rejects.toMatchObject({
      code: 'LOG_LENGTH_MISMATCH',
    });
    await expect(freshStore().readLog({ id: 'empty', length: 2 })).rejects.toMatchObject({
      code: 'LOG_LENGTH_MISMATCH',
    });

    await clients.s3.send(
      new PutObjectCommand({
        Bucket: names.bucketName,
        Key: segmentKey(pointer.id),
        Body: '{"tampered":true}',
      }),
    );
    await expect(freshStore().readLog(pointer)).rejects.toMatchObject({ code: 'SEGMENT_CORRUPT' });
  });

  it('fork, copy and join-restore share the log by pointer: no S3 traffic, whatever its length', async () => {
    const store = freshStore();
    const short = await store.appendMessages(EMPTY_LOG, makeMessages(10));
    const long = await buildLog(store, 10, 1000);
    for (const parent of [short, long]) {
      meter.reset();
      // A fork into 4 paths: each child conversation starts with a copy of the parent's pointer.
      const children = ['a', 'b', 'c', 'd'].map(() => ({ ...parent }));
      // Join-restore: the parent takes the main path's pointer back.
      const restored = { ...children[1]! };
      expect(restored).toEqual(parent);
      expect(meter.requests()).toBe(0);
      expect(meter.bytes()).toBe(0);
    }
    // Children then diverge independently; the shared prefix is never rewritten.
    const [a, b] = await Promise.all([
      store.appendMessages(short, makeMessages(1, 500)),
      store.appendMessages(short, makeMessages(1, 600)),
    ]);
    expect((await freshStore().readLog(a)).at(-1)?.content).toBe('message 500');
    expect((await freshStore().readLog(b)).at(-1)?.content).toBe('message 600');
    expect(await freshStore().readLog(short)).toEqual(makeMessages(10));
  });

  it('returns frozen messages, since cached segments are shared', async () => {
    const store = freshStore();
    const pointer = await store.appendMessages(EMPTY_LOG, makeMessages(1));
    const [message] = await store.readLog(pointer);
    expect(Object.isFrozen(message)).toBe(true);
  });
});
