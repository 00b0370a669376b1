/**
 * Message logs in S3 as immutable, content-addressed objects (layout and arithmetic: README.md,
 * "Conversations"). A segment holds the messages of one append and names the segment before it; a log
 * is identified by its head segment, so forks and copies share a log by copying a LogPointer and never
 * touch S3.
 *
 *   segments/<sha256 of body>.json = { v: 2, prev, base, cover, messages }
 *   segments/pages/<128-bit sha256 of JSON>.json.gz = gzip({ v: 2, base, group, messages })
 *
 * Every 32nd segment of a chain also writes a page holding the messages of its 32 segments, and every
 * 5th segment within a page a tail page holding the messages of its 5. A segment's `cover` names the
 * pages, tail pages and single segments that hold the log before it (or through it, when it wrote one),
 * padded to a fixed width: a cold read fetches the head segment, then what its cover names, then the
 * pages the named pages list (`group`) — at most ⌈t/32⌉ + 8 objects in 3 rounds at turn t.
 *
 * Appends write one segment whose size depends only on the new messages, and one step in five also a
 * (tail) page of bounded size; retries rewrite the same keys with the same content. Version 1 segments
 * (no cover) are still read, by walking their chain; a log that continues one names it as its `origin`.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type { LogPointer, Message } from '../../engine/conversation/types.ts';
import { type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { canonicalJson, sha256Hex, shortHash } from './canonical-json.ts';

/** The log with no messages; never stored. */
export const EMPTY_LOG_ID = 'empty';
export const EMPTY_LOG: LogPointer = Object.freeze({ id: EMPTY_LOG_ID, length: 0 });

export const SEGMENT_PREFIX = 'segments/';
export const PAGE_PREFIX = `${SEGMENT_PREFIX}pages/`;

/**
 * Where a chain writes pages. Readers need none of it (a cover names what to read); writers of one
 * chain must agree, so only tests choose another.
 */
export interface PageLayout {
  /** Segments per page: a page is written by the segment that fills it. */
  readonly pageSegments: number;
  /** Segments per tail page, counted within the page (tail pages end at 5, 10, …, 30). */
  readonly tailSegments: number;
  /** Pages per group: a page lists the earlier pages of its group, a cover the last page of each group. */
  readonly groupPages: number;
}

export const PAGE_LAYOUT: PageLayout = Object.freeze({ pageSegments: 32, tailSegments: 5, groupPages: 64 });

// Loaded on first use (the module is cached after that), so a Lambda whose node never reads a
// conversation does not load the S3 client at init just because it shares this module.
const s3Commands = once(() => import('@aws-sdk/client-s3'));
const SEGMENT_VERSION = 2;
const PAGE_VERSION = 2;
/** Width of the `base` field, so a segment's size does not depend on where it sits in the log. */
const BASE_WIDTH = 16;

/** Where a segment sits in its chain, and the objects that hold the log before it (README.md). */
export interface Cover {
  /** The segment's number in its chain, from 1 (counted from `origin`, when there is one). */
  readonly n: number;
  /** Log position where the segment's page starts, and where its tail page starts. */
  readonly pageBase: number;
  readonly tailBase: number;
  /** A version 1 log this chain continues: its messages come first, read by the chain walk. */
  readonly origin?: LogPointer;
  /** The last page of each full group, then the latest page when its group is not full. */
  readonly pages: readonly string[];
  /** The tail pages of the current page, oldest first. */
  readonly tail: readonly string[];
  /** The segments since the last (tail) page, oldest first, this one excluded. */
  readonly recent: readonly string[];
}

export interface Segment {
  readonly prev: string | null;
  readonly base: number;
  readonly messages: readonly Message[];
  /** Absent on version 1 segments. */
  readonly cover?: Cover;
}

/** A page or a tail page: consecutive messages of the log, and (pages) the earlier pages of its group. */
export interface Page {
  readonly base: number;
  readonly messages: readonly Message[];
  readonly group: readonly string[];
}

/** An append whose objects are built but not written: its pointer is known before its PUTs. */
export interface PreparedAppend {
  /** The longer log. */
  readonly pointer: LogPointer;
  /** PUTs the segment (and the page or tail page it fills), in parallel; the same keys on a retry. */
  write(): Promise<void>;
}

export interface ConversationStore {
  /** Writes one segment (none when `messages` is empty) and returns the pointer to the longer log. */
  appendMessages(pointer: LogPointer, messages: readonly Message[]): Promise<LogPointer>;
  /**
   * `appendMessages` in two halves: the pointer first (a step builds its commit with it), then the
   * writes. Reads the log's head segment when not cached (and, to fill a page, the log and the
   * group's latest page).
   */
  prepareAppend(pointer: LogPointer, messages: readonly Message[]): Promise<PreparedAppend>;
  /**
   * All `pointer.length` messages, oldest first. Objects come from the in-process cache when
   * present. Messages are frozen: the log is immutable and cached objects are shared. A cold read
   * fetches the head segment, then its cover in one parallel round, then the pages those pages list.
   */
  readLog(pointer: LogPointer, options?: ReadLogOptions): Promise<Message[]>;
  /** The message at `position` (0-based, in the whole log) of the segment that holds it. */
  readMessage(segmentId: string, position: number): Promise<Message>;
}

export interface ReadLogOptions {
  /**
   * Ids of segments a version 1 log probably holds (its threads' step records know them): asked for
   * only when a cold read meets a version 1 segment, whose chain has no cover to follow.
   */
  readonly segmentHints?: () => Promise<readonly string[]>;
}

export interface ConversationStoreOptions {
  /** Defaults to one cache shared by every store in the process (objects are immutable). */
  readonly cache?: SegmentCache;
  /** Tests only: a smaller layout, to reach groups of pages in a few hundred appends. */
  readonly layout?: PageLayout;
}

export function segmentKey(segmentId: string): string {
  return `${SEGMENT_PREFIX}${segmentId}.json`;
}

export function pageKey(pageId: string): string {
  return `${PAGE_PREFIX}${pageId}.json.gz`;
}

/** What segment `n` writes beside itself: a page, a tail page, or nothing. */
function fills(layout: PageLayout, n: number): 'page' | 'tail' | undefined {
  const position = ((n - 1) % layout.pageSegments) + 1;
  if (position === layout.pageSegments) return 'page';
  return position % layout.tailSegments === 0 ? 'tail' : undefined;
}

/**
 * The cover of the segment after `prev` (which `prevId` names), before it writes anything: the
 * objects that hold the log up to where it starts.
 */
function nextCover(
  layout: PageLayout,
  prevId: string | null,
  prev: Segment | undefined,
  length: number,
): Cover {
  if (prevId === null) return { n: 1, pageBase: 0, tailBase: 0, pages: [], tail: [], recent: [] };
  const before = prev?.cover;
  if (before === undefined) {
    // A version 1 log: this chain continues it and starts counting pages where it ends.
    return {
      n: 1,
      pageBase: length,
      tailBase: length,
      origin: { id: prevId, length },
      pages: [],
      tail: [],
      recent: [],
    };
  }
  const common = {
    n: before.n + 1,
    ...(before.origin ? { origin: before.origin } : {}),
    pages: before.pages,
  };
  const filled = fills(layout, before.n);
  if (filled === 'page') return { ...common, pageBase: length, tailBase: length, tail: [], recent: [] };
  if (filled === 'tail')
    return { ...common, pageBase: before.pageBase, tailBase: length, tail: before.tail, recent: [] };
  return {
    ...common,
    pageBase: before.pageBase,
    tailBase: before.tailBase,
    tail: before.tail,
    recent: [...before.recent, prevId],
  };
}

/**
 * The longest cover a segment of `layout` can have besides its origin and group ends: every segment's
 * cover is padded to it, so a segment's size does not depend on where it sits in its log.
 */
function coverWidth(layout: PageLayout): number {
  return canonicalJson({
    n: Number.MAX_SAFE_INTEGER,
    pageBase: Number.MAX_SAFE_INTEGER,
    tailBase: Number.MAX_SAFE_INTEGER,
    pages: [HASH_32],
    tail: Array.from({ length: Math.floor((layout.pageSegments - 1) / layout.tailSegments) }, () => HASH_32),
    recent: Array.from({ length: Math.max(0, layout.tailSegments - 2) }, () => HASH_64),
  } satisfies Cover).length;
}

const HASH_32 = 'f'.repeat(32);
const HASH_64 = 'f'.repeat(64);

/** A cover padded with spaces to `width` plus what its origin and group ends (pages past one) take. */
function paddedCover(cover: Cover, width: number): string {
  const bare = { n: 0, pageBase: 0, tailBase: 0, pages: [HASH_32], tail: [], recent: [] };
  const pages = cover.pages.length > 0 ? cover.pages : bare.pages;
  const extra =
    canonicalJson({ ...bare, pages, ...(cover.origin ? { origin: cover.origin } : {}) }).length -
    canonicalJson(bare).length;
  return canonicalJson(cover).padEnd(width + extra, ' ');
}

/**
 * The exact bytes of a segment; its id is their sha256. A segment without a cover is version 1 (no
 * longer written; tests make them to read old logs).
 */
export function encodeSegment(segment: Segment, layout: PageLayout = PAGE_LAYOUT): string {
  const base = String(segment.base).padStart(BASE_WIDTH, ' ');
  const messages = `[${segment.messages.map((message) => canonicalJson(message)).join(',')}]`;
  const prev = JSON.stringify(segment.prev);
  if (segment.cover === undefined) return `{"v":1,"prev":${prev},"base":${base},"messages":${messages}}`;
  const cover = paddedCover(segment.cover, coverWidth(layout));
  return `{"v":${SEGMENT_VERSION},"prev":${prev},"base":${base},"cover":${cover},"messages":${messages}}`;
}

/** A page's JSON (its id is the first 128 bits of its sha256); stored gzipped. */
function encodePage(page: Page): string {
  const messages = `[${page.messages.map((message) => canonicalJson(message)).join(',')}]`;
  return `{"v":${PAGE_VERSION},"base":${page.base},"group":${JSON.stringify(page.group)},"messages":${messages}}`;
}

interface BuiltObject {
  readonly key: string;
  readonly body: string | Uint8Array;
  readonly contentType: string;
  /** What the cache keeps once it is written: the writer is the likeliest next reader. */
  readonly cached: { readonly id: string; readonly object: Segment | Page; readonly bytes: number };
}

export function createConversationStore(
  { s3, bucketName }: { readonly s3: ObjectClient; readonly bucketName: string },
  options: ConversationStoreOptions = {},
): ConversationStore {
  const cache = options.cache ?? sharedSegmentCache;
  const layout = options.layout ?? PAGE_LAYOUT;

  async function getObject(key: string, notFound: string): Promise<Uint8Array> {
    const { GetObjectCommand } = await s3Commands();
    try {
      const response = await s3.send(new GetObjectCommand({ Bucket: bucketName, Key: key }));
      return (await response.Body?.transformToByteArray()) ?? new Uint8Array();
    } catch (error) {
      if (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound')) {
        throw new StepthreadError('SEGMENT_NOT_FOUND', notFound, { cause: error });
      }
      throw error;
    }
  }

  async function loadSegment(segmentId: string): Promise<Segment> {
    const cached = cache.get(segmentId);
    if (cached) return cached as Segment;
    const bytes = await getObject(segmentKey(segmentId), `conversation segment ${segmentId} not found`);
    const body = Buffer.from(bytes).toString('utf8');
    const segment = decodeSegment(segmentId, body);
    cache.set(segmentId, segment, bytes.byteLength);
    return segment;
  }

  async function loadPage(pageId: string): Promise<Page> {
    const cached = cache.get(pageId);
    if (cached) return cached as Page;
    const bytes = await getObject(pageKey(pageId), `conversation page ${pageId} not found`);
    let body: string;
    try {
      body = gunzipSync(bytes).toString('utf8');
    } catch {
      throw corrupt(pageId, 'not gzip');
    }
    const page = decodePage(pageId, body);
    cache.set(pageId, page, body.length);
    return page;
  }

  /** The whole log at `pointer`, from the cache or S3 (what filling a page needs of it). */
  async function logAt(pointer: LogPointer): Promise<readonly Message[]> {
    return cache.log(pointer.id) ?? (await readLog(pointer));
  }

  async function prepareAppend(pointer: LogPointer, messages: readonly Message[]): Promise<PreparedAppend> {
    if (messages.length === 0) return { pointer, write: async () => {} };
    const prevId = pointer.length === 0 ? null : pointer.id;
    const prev = prevId === null ? undefined : await loadSegment(prevId);
    if (prev !== undefined && prev.base + prev.messages.length !== pointer.length) {
      throw mismatch(pointer, prev.base + prev.messages.length);
    }
    let cover = nextCover(layout, prevId, prev, pointer.length);
    const objects: BuiltObject[] = [];
    const filled = fills(layout, cover.n);
    if (filled !== undefined) {
      const from = filled === 'page' ? cover.pageBase : cover.tailBase;
      const before = from === pointer.length ? [] : (await logAt(pointer)).slice(from);
      const group = filled === 'page' ? await groupOf(cover) : [];
      const page: Page = { base: from, messages: [...before, ...messages], group };
      const json = encodePage(page);
      const pageId = shortHash(json);
      objects.push({
        key: pageKey(pageId),
        body: gzipSync(json),
        contentType: 'application/gzip',
        cached: { id: pageId, object: page, bytes: json.length },
      });
      cover =
        filled === 'page'
          ? { ...cover, pages: pagesWith(layout, cover, pageId), tail: [], recent: [] }
          : { ...cover, tail: [...cover.tail, pageId], recent: [] };
    }
    const segment: Segment = { prev: prevId, base: pointer.length, messages, cover };
    const body = encodeSegment(segment, layout);
    const id = sha256Hex(body);
    objects.push({
      key: segmentKey(id),
      body,
      contentType: 'application/json',
      cached: { id, object: { ...segment, messages: [...messages] }, bytes: Buffer.byteLength(body) },
    });
    return {
      pointer: { id, length: pointer.length + messages.length },
      async write() {
        const { PutObjectCommand } = await s3Commands();
        await Promise.all(
          objects.map(({ key, body: objectBody, contentType }) =>
            s3.send(
              new PutObjectCommand({
                Bucket: bucketName,
                Key: key,
                Body: objectBody,
                ContentType: contentType,
              }),
            ),
          ),
        );
        // The writer is the likeliest next reader (the next node in this Lambda).
        for (const { cached } of objects) {
          cache.set(cached.id, deepFreeze(structuredClone(cached.object)), cached.bytes);
        }
      },
    };
  }

  /** The earlier pages of the group of the page segment `cover.n` fills. */
  async function groupOf(cover: Cover): Promise<string[]> {
    const page = cover.n / layout.pageSegments;
    if ((page - 1) % layout.groupPages === 0) return [];
    const latest = cover.pages.at(-1)!;
    return [...(await loadPage(latest)).group, latest];
  }

  /** Reads a version 1 log: its chain, segment by segment (hinted segments first, in one round). */
  async function readChain(head: Segment, options: ReadLogOptions): Promise<Message[]> {
    const hints = options.segmentHints;
    if (hints !== undefined && head.prev !== null && cache.log(head.prev) === undefined) {
      const ids = await hints().catch(() => []);
      const missing = [...new Set(ids)].filter((id) => id !== EMPTY_LOG_ID && cache.get(id) === undefined);
      await Promise.all(missing.map((id) => loadSegment(id).catch(() => undefined)));
    }
    const chain: Segment[] = [head];
    let segment = head;
    // A log read whole before ends the walk: a step reads its thread's log as the step before it
    // left it, plus that step's segment, so the walk does not grow with the conversation.
    let known: readonly Message[] = [];
    while (segment.prev !== null) {
      const earlier = cache.log(segment.prev);
      if (earlier !== undefined) {
        if (earlier.length !== segment.base) {
          throw corrupt(segment.prev, `holds ${earlier.length} messages, next starts at ${segment.base}`);
        }
        known = earlier;
        break;
      }
      const previous = await loadSegment(segment.prev);
      // Bases strictly decrease along the chain, so this walk always ends.
      if (previous.base + previous.messages.length !== segment.base) {
        throw corrupt(
          segment.prev,
          `ends at ${previous.base + previous.messages.length}, next starts at ${segment.base}`,
        );
      }
      chain.push(previous);
      segment = previous;
    }
    const messages: Message[] = [...known];
    for (let i = chain.length - 1; i >= 0; i -= 1) messages.push(...chain[i]!.messages);
    return messages;
  }

  /** Reads a log through its head segment's cover: one round for the cover, one for the groups. */
  async function readCovered(headId: string, head: Segment, cover: Cover, options: ReadLogOptions) {
    const [origin, named, tail, recent] = await Promise.all([
      cover.origin ? readLog(cover.origin, options) : Promise.resolve([] as readonly Message[]),
      Promise.all(cover.pages.map(loadPage)),
      Promise.all(cover.tail.map(loadPage)),
      Promise.all(cover.recent.map(loadSegment)),
    ]);
    const seen = new Set(cover.pages);
    const grouped = [...new Set(named.flatMap((page) => page.group))].filter((id) => !seen.has(id));
    const groupPages = await Promise.all(grouped.map(loadPage));
    const pages = [
      ...named.map((piece, i) => ({ id: cover.pages[i]!, piece })),
      ...groupPages.map((piece, i) => ({ id: grouped[i]!, piece })),
    ].sort((a, b) => a.piece.base - b.piece.base);
    const messages: Message[] = [...origin];
    const pieces: { id: string; piece: { base: number; messages: readonly Message[] } }[] = [
      ...pages,
      ...tail.map((piece, i) => ({ id: cover.tail[i]!, piece })),
      ...recent.map((piece, i) => ({ id: cover.recent[i]!, piece })),
    ];
    for (const { id, piece } of pieces) {
      if (piece.base !== messages.length) {
        throw corrupt(headId, `its cover has ${id} at ${piece.base} where ${messages.length} was expected`);
      }
      messages.push(...piece.messages);
    }
    // The segment's own messages, unless the page or tail page it filled holds them.
    if (messages.length === head.base) messages.push(...head.messages);
    else if (messages.length !== head.base + head.messages.length) {
      throw corrupt(headId, `its cover ends at ${messages.length}, the segment at ${head.base}`);
    }
    return messages;
  }

  async function readLog(pointer: LogPointer, options: ReadLogOptions = {}): Promise<Message[]> {
    if (pointer.length === 0) {
      if (pointer.id !== EMPTY_LOG_ID) throw mismatch(pointer, 0);
      return [];
    }
    if (pointer.id === EMPTY_LOG_ID) throw mismatch(pointer, 0);
    const whole = cache.log(pointer.id);
    if (whole !== undefined) {
      if (whole.length !== pointer.length) throw mismatch(pointer, whole.length);
      return [...whole];
    }
    const head = await loadSegment(pointer.id);
    const headLength = head.base + head.messages.length;
    if (headLength !== pointer.length) throw mismatch(pointer, headLength);
    const earlier = head.prev === null ? [] : cache.log(head.prev);
    let messages: Message[];
    if (earlier !== undefined) {
      // Warm: the log as the step before left it, plus its segment.
      if (earlier.length !== head.base) {
        throw corrupt(head.prev!, `holds ${earlier.length} messages, next starts at ${head.base}`);
      }
      messages = [...earlier, ...head.messages];
    } else if (head.cover !== undefined) {
      messages = await readCovered(pointer.id, head, head.cover, options);
    } else {
      messages = await readChain(head, options);
    }
    cache.rememberLog(pointer.id, Object.freeze([...messages]));
    return messages;
  }

  return {
    prepareAppend,
    async appendMessages(pointer, messages) {
      const prepared = await prepareAppend(pointer, messages);
      await prepared.write();
      return prepared.pointer;
    },

    async readMessage(segmentId, position) {
      const segment = await loadSegment(segmentId);
      const message = segment.messages[position - segment.base];
      if (message === undefined) throw corrupt(segmentId, `holds no message at position ${position}`);
      return message;
    },

    readLog,
  };
}

const HEX_64 = /^[0-9a-f]{64}$/;
const HEX_32 = /^[0-9a-f]{32}$/;

function isIdList(value: unknown, pattern: RegExp): value is string[] {
  return Array.isArray(value) && value.every((id) => typeof id === 'string' && pattern.test(id));
}

function isCover(value: unknown, base: number): value is Cover {
  if (value === null || typeof value !== 'object') return false;
  const { n, pageBase, tailBase, origin, pages, tail, recent } = value as Record<string, unknown>;
  const origins =
    origin === undefined ||
    (origin !== null &&
      typeof origin === 'object' &&
      typeof (origin as LogPointer).id === 'string' &&
      Number.isSafeInteger((origin as LogPointer).length));
  return (
    Number.isSafeInteger(n) &&
    (n as number) >= 1 &&
    Number.isSafeInteger(pageBase) &&
    Number.isSafeInteger(tailBase) &&
    (pageBase as number) <= (tailBase as number) &&
    (tailBase as number) <= base &&
    origins &&
    isIdList(pages, HEX_32) &&
    isIdList(tail, HEX_32) &&
    isIdList(recent, HEX_64)
  );
}

function decodeSegment(segmentId: string, body: string): Segment {
  if (sha256Hex(body) !== segmentId) throw corrupt(segmentId, 'content does not match its id');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw corrupt(segmentId, 'not JSON');
  }
  const { v, prev, base, messages, cover } = (parsed ?? {}) as Record<string, unknown>;
  const valid =
    (v === 1 || (v === SEGMENT_VERSION && isCover(cover, base as number))) &&
    Number.isSafeInteger(base) &&
    (base as number) >= 0 &&
    Array.isArray(messages) &&
    messages.length > 0 &&
    (prev === null ? base === 0 : typeof prev === 'string' && (base as number) > 0);
  if (!valid) throw corrupt(segmentId, 'unexpected shape');
  return deepFreeze({
    prev: prev as string | null,
    base: base as number,
    messages: messages as Message[],
    ...(v === SEGMENT_VERSION ? { cover: cover as Cover } : {}),
  });
}

function decodePage(pageId: string, body: string): Page {
  if (shortHash(body) !== pageId) throw corrupt(pageId, 'content does not match its id');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw corrupt(pageId, 'not JSON');
  }
  const { v, base, group, messages } = (parsed ?? {}) as Record<string, unknown>;
  const valid =
    v === PAGE_VERSION &&
    Number.isSafeInteger(base) &&
    (base as number) >= 0 &&
    isIdList(group, HEX_32) &&
    Array.isArray(messages) &&
    messages.length > 0;
  if (!valid) throw corrupt(pageId, 'unexpected shape');
  return deepFreeze({ base: base as number, group: group as string[], messages: messages as Message[] });
}

/**
 * The keys of the objects a conversation object names (`key` is a segment's or a page's, `bytes` its
 * stored body): what `stepthread prune` follows to find every object a kept log still needs.
 */
export function linkedKeys(key: string, bytes: Uint8Array): string[] {
  try {
    if (key.startsWith(PAGE_PREFIX)) {
      const { group } = JSON.parse(gunzipSync(bytes).toString('utf8')) as { group?: unknown };
      return isIdList(group, HEX_32) ? group.map(pageKey) : [];
    }
    const { prev, cover } = JSON.parse(Buffer.from(bytes).toString('utf8')) as {
      prev?: unknown;
      cover?: Cover;
    };
    const keys = typeof prev === 'string' ? [segmentKey(prev)] : [];
    if (cover !== undefined && cover !== null && typeof cover === 'object') {
      if (typeof cover.origin?.id === 'string') keys.push(segmentKey(cover.origin.id));
      for (const list of [cover.pages, cover.tail])
        if (isIdList(list, HEX_32)) keys.push(...list.map(pageKey));
      if (isIdList(cover.recent, HEX_64)) keys.push(...cover.recent.map(segmentKey));
    }
    return keys;
  } catch {
    return [];
  }
}

/** The pages a cover names once segment `cover.n` has filled a page with id `pageId`. */
function pagesWith(layout: PageLayout, cover: Cover, pageId: string): string[] {
  const page = cover.n / layout.pageSegments;
  // The first page of a group follows the last page of the one before, which stays named.
  return (page - 1) % layout.groupPages === 0
    ? [...cover.pages, pageId]
    : [...cover.pages.slice(0, -1), pageId];
}

function corrupt(segmentId: string, detail: string): StepthreadError {
  return coded('SEGMENT_CORRUPT', `conversation segment ${segmentId} is corrupt: ${detail}`);
}

function mismatch(pointer: LogPointer, actual: number): StepthreadError {
  return coded(
    'LOG_LENGTH_MISMATCH',
    `log ${pointer.id} has ${actual} messages, pointer says ${pointer.length}`,
  );
}

function coded(code: ErrorCode, message: string): StepthreadError {
  return new StepthreadError(code, message);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/** Logs a cache remembers whole; the least recently read goes first. */
const REMEMBERED_LOGS = 8;

/**
 * Least-recently-used segments and pages, bounded by their encoded size; and the last few logs read
 * whole, as arrays of those objects' messages (forgotten when one is evicted, so the bound holds).
 */
export class SegmentCache {
  private readonly entries = new Map<string, { segment: Segment | Page; bytes: number }>();
  private readonly logs = new Map<string, readonly Message[]>();
  private totalBytes = 0;

  constructor(readonly maxBytes: number = 64 * 1024 * 1024) {}

  get bytes(): number {
    return this.totalBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get(segmentId: string): Segment | Page | undefined {
    return touched(this.entries, segmentId)?.segment;
  }

  /** The whole log whose head segment is `segmentId`, when read whole lately. */
  log(segmentId: string): readonly Message[] | undefined {
    return touched(this.logs, segmentId);
  }

  rememberLog(segmentId: string, messages: readonly Message[]): void {
    this.logs.delete(segmentId);
    this.logs.set(segmentId, messages);
    for (const id of this.logs.keys()) {
      if (this.logs.size <= REMEMBERED_LOGS) break;
      this.logs.delete(id);
    }
  }

  set(segmentId: string, segment: Segment | Page, bytes: number): void {
    if (bytes > this.maxBytes) return;
    const existing = this.entries.get(segmentId);
    if (existing) {
      this.entries.delete(segmentId);
      this.totalBytes -= existing.bytes;
    }
    this.entries.set(segmentId, { segment, bytes });
    this.totalBytes += bytes;
    for (const [id, entry] of this.entries) {
      if (this.totalBytes <= this.maxBytes) break;
      this.entries.delete(id);
      this.totalBytes -= entry.bytes;
      // A remembered log would keep the evicted segment's messages alive.
      this.logs.clear();
    }
  }

  clear(): void {
    this.entries.clear();
    this.logs.clear();
    this.totalBytes = 0;
  }
}

/** `map`'s entry for `key`, moved to the newest end (a Map iterates in insertion order, oldest first). */
function touched<V>(map: Map<string, V>, key: string): V | undefined {
  const value = map.get(key);
  if (value === undefined) return undefined;
  map.delete(key);
  map.set(key, value);
  return value;
}

const sharedSegmentCache = new SegmentCache();
