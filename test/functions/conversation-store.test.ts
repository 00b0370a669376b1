import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LogPointer } from '../../engine/conversation/types.ts';
import { type AwsClients, createAwsClients, createS3Client } from '../../functions/aws/clients.ts';
import { aroundCommands, type Meter, meterClient } from '../../functions/aws/meter.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import {
  type ConversationStore,
  createConversationStore,
  EMPTY_LOG,
  encodeSegment,
  linkedKeys,
  PAGE_PREFIX,
  type PageLayout,
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
    // 3 pages (segments 1–96), segments 97–99 and the head: ⌈100/32⌉ + 8 at most.
    expect(meter.requests('GetObjectCommand')).toBe(7);
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
    // Two short messages and the segment's cover (padded to one width: up to 6 tail pages and 3 segments).
    expect(shortBytes).toBeLessThan(800);
  });

  it('serves segments from the cache: a warm reader fetches only new segments', async () => {
    const writer = freshStore();
    const reader = freshStore();
    const first = await buildLog(writer, 4, 4);
    meter.reset();
    await reader.readLog(first);
    expect(meter.requests('GetObjectCommand')).toBe(4);

    const longer = await writer.appendMessages(first, makeMessages(2, 16));
    meter.reset();
    expect(await reader.readLog(longer)).toEqual(makeMessages(18));
    expect(meter.requests('GetObjectCommand')).toBe(1);

    // The writer cached what it wrote: no GET at all.
    meter.reset();
    expect(await writer.readLog(longer)).toHaveLength(18);
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
    // The head, 6 pages, a tail page and 2 segments, all cached by the writer.
    expect(cache.gets).toBe(10);
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

/** GETs in flight and the rounds they came in: a GET that starts while none is in flight begins one. */
const gets = { requests: 0, rounds: 0, inFlight: 0 };
let countingRounds = false;

function countRounds(): void {
  if (countingRounds) return;
  countingRounds = true;
  aroundCommands(clients.s3, async ({ commandName }, next) => {
    if (commandName !== 'GetObjectCommand') return next();
    if (gets.inFlight === 0) gets.rounds += 1;
    gets.inFlight += 1;
    gets.requests += 1;
    try {
      return await next();
    } finally {
      gets.inFlight -= 1;
    }
  });
}

/** Reads `pointer` with an empty cache, as a fresh Lambda would: the messages, GETs and rounds. */
async function coldRead(pointer: LogPointer, layout?: PageLayout) {
  countRounds();
  gets.requests = 0;
  gets.rounds = 0;
  const store = createConversationStore(clients, {
    cache: new SegmentCache(),
    ...(layout ? { layout } : {}),
  });
  const messages = await store.readLog(pointer);
  return { messages, gets: gets.requests, rounds: gets.rounds };
}

/** Appends `count` segments of one message each, returning the pointer after each (index = turn). */
async function turns(store: ConversationStore, count: number, from = EMPTY_LOG): Promise<LogPointer[]> {
  const pointers = [from];
  for (let i = 0; i < count; i += 1) {
    const last = pointers.at(-1)!;
    pointers.push(await store.appendMessages(last, makeMessages(1, last.length)));
  }
  return pointers;
}

describe('conversation pages', () => {
  it('a cold read at every turn up to 200 fetches ≤ ⌈t/32⌉ + 8 objects in ≤ 3 rounds, exactly the log', async () => {
    const pointers = await turns(freshStore(), 200);
    for (let t = 1; t <= 200; t += 1) {
      const read = await coldRead(pointers[t]!);
      expect(read.messages, `turn ${t}`).toEqual(makeMessages(t));
      expect(read.gets, `turn ${t}`).toBeLessThanOrEqual(Math.ceil(t / 32) + 8);
      expect(read.rounds, `turn ${t}`).toBeLessThanOrEqual(3);
    }
    // The worst place in a page (turn 29: 5 tail pages, 3 segments and the head) and a full page.
    expect((await coldRead(pointers[29]!)).gets).toBe(9);
    expect((await coldRead(pointers[160]!)).gets).toBe(6);
    expect((await coldRead(pointers[192]!)).rounds).toBe(3);
  }, 60_000);

  it('writes a tail page every 5th segment and a page every 32nd, once, beside the segment', async () => {
    const store = freshStore();
    let pointer = EMPTY_LOG;
    const puts: number[] = [];
    const bytes: number[] = [];
    for (let i = 0; i < 64; i += 1) {
      meter.reset();
      // Messages of one size, so the segments' sizes show only the layout.
      pointer = await store.appendMessages(pointer, [
        { role: 'user', content: `turn ${String(i).padStart(4, '0')}` },
      ]);
      puts.push(meter.requests('PutObjectCommand'));
      bytes.push(meter.bytes('PutObjectCommand'));
    }
    const filling = new Set([5, 10, 15, 20, 25, 30, 32, 37, 42, 47, 52, 57, 62, 64]);
    expect(puts.flatMap((count, i) => (count === 2 ? [i + 1] : []))).toEqual([...filling]);
    expect(puts.every((count) => count === 1 || count === 2)).toBe(true);
    // Segments alone weigh the same wherever they sit in their page.
    // (The first names no segment before it: `"prev":null`.)
    const plain = bytes.filter((_, i) => i > 0 && !filling.has(i + 1));
    expect(new Set(plain).size).toBe(1);
  });

  it('re-preparing an append that fills a page gives the same keys and content (a retried step)', async () => {
    const store = freshStore();
    // A chain of its own: content-addressed objects of equal logs are one.
    const root = await store.appendMessages(EMPTY_LOG, [{ role: 'system', content: 'retried' }]);
    const pointers = await turns(store, 30, root);
    const before = await objectCount();
    const retried = freshStore();
    const first = await store.prepareAppend(pointers[30]!, makeMessages(1, 31));
    await first.write();
    const again = await retried.prepareAppend(pointers[30]!, makeMessages(1, 31));
    await again.write();
    expect(again.pointer).toEqual(first.pointer);
    // The segment and its page, once each.
    expect(await objectCount()).toBe(before + 2);
    const log = (await coldRead(again.pointer)).messages;
    expect(log).toHaveLength(32);
    expect(log.slice(1)).toEqual(makeMessages(31, 1));
  });

  it('branches that diverge mid-page fill pages of their own; each earlier pointer still reads its prefix', async () => {
    const store = freshStore();
    const shared = await turns(store, 20);
    const left = await turns(store, 30, shared[20]);
    const right = await turns(
      createConversationStore(clients, { cache: new SegmentCache() }),
      30,
      shared[20],
    );
    const leftLog = await coldRead(left[30]!);
    const rightLog = await coldRead(right[30]!);
    expect(leftLog.messages).toEqual(makeMessages(50));
    expect(rightLog.messages).toEqual(makeMessages(50));
    expect(left[30]!.id).toBe(right[30]!.id);
    // Different content after the fork point: different pages.
    const diverged = await turns(
      store,
      30,
      await store.appendMessages(shared[20]!, [{ role: 'user', content: 'x' }]),
    );
    const log = (await coldRead(diverged[30]!)).messages;
    expect(log).toHaveLength(51);
    expect(log[20]).toEqual({ role: 'user', content: 'x' });
    expect(log.slice(0, 20)).toEqual(makeMessages(20));
    // A copy made at any earlier step holds that step's pointer, and reads exactly that prefix.
    for (const t of [1, 5, 19, 20]) expect((await coldRead(shared[t]!)).messages).toEqual(makeMessages(t));
    for (const t of [11, 12, 30]) expect((await coldRead(left[t]!)).messages).toEqual(makeMessages(20 + t));
  });

  it('groups of pages keep a cold read at 3 rounds (small layout: 4-segment pages, 3-page groups)', async () => {
    const layout: PageLayout = { pageSegments: 4, tailSegments: 2, groupPages: 3 };
    const store = createConversationStore(clients, { cache: new SegmentCache(), layout });
    const pointers = await turns(store, 150);
    for (const t of [1, 2, 3, 4, 12, 13, 36, 37, 38, 39, 40, 99, 149, 150]) {
      const read = await coldRead(pointers[t]!, layout);
      expect(read.messages, `turn ${t}`).toEqual(makeMessages(t));
      expect(read.gets, `turn ${t}`).toBeLessThanOrEqual(Math.ceil(t / 4) + 1);
      expect(read.rounds, `turn ${t}`).toBeLessThanOrEqual(3);
    }
  }, 60_000);

  it('continues a version 1 log: its segments come first, its pages start after them', async () => {
    let pointer = EMPTY_LOG;
    for (let i = 0; i < 3; i += 1) {
      const body = encodeSegment({
        prev: pointer.length === 0 ? null : pointer.id,
        base: pointer.length,
        messages: makeMessages(2, pointer.length + 1000),
      });
      const id = createHash('sha256').update(body).digest('hex');
      await clients.s3.send(
        new PutObjectCommand({ Bucket: names.bucketName, Key: segmentKey(id), Body: body }),
      );
      pointer = { id, length: pointer.length + 2 };
    }
    const pointers = await turns(freshStore(), 40, pointer);
    expect((await coldRead(pointer)).messages).toEqual(makeMessages(6, 1000));
    for (const t of [1, 5, 32, 33, 40]) {
      const { messages } = await coldRead(pointers[t]!);
      expect(messages.slice(0, 6), `turn ${t}`).toEqual(makeMessages(6, 1000));
      expect(messages.slice(6), `turn ${t}`).toEqual(makeMessages(t, 6));
    }
  });

  it('a missing or altered page is a coded error', async () => {
    const store = freshStore();
    const pointers = await turns(
      store,
      36,
      await store.appendMessages(EMPTY_LOG, [{ role: 'system', content: 'altered' }]),
    );
    const { linked } = await pagesOf(pointers[36]!);
    expect(linked).toHaveLength(2);
    await clients.s3.send(
      new PutObjectCommand({ Bucket: names.bucketName, Key: linked[0]!, Body: gzipSync('{}') }),
    );
    await expect(coldRead(pointers[36]!)).rejects.toMatchObject({ code: 'SEGMENT_CORRUPT' });
    await clients.s3.send(new DeleteObjectCommand({ Bucket: names.bucketName, Key: linked[0]! }));
    await expect(coldRead(pointers[36]!)).rejects.toMatchObject({ code: 'SEGMENT_NOT_FOUND' });
  });
});

/** The page keys a head segment's cover names. */
async function pagesOf(pointer: LogPointer): Promise<{ linked: string[] }> {
  const response = await clients.s3.send(
    new GetObjectCommand({ Bucket: names.bucketName, Key: segmentKey(pointer.id) }),
  );
  const linked = linkedKeys(segmentKey(pointer.id), await response.Body!.transformToByteArray());
  return { linked: linked.filter((key) => key.startsWith(PAGE_PREFIX)) };
}
