/**
 * Message logs in S3 as immutable, content-addressed segments. A segment holds the messages of
 * one append and names the segment before it; a log is identified by its head segment, so forks
 * and copies share a log by copying a LogPointer and never touch S3.
 *
 *   segments/<sha256 of body>.json = { v: 1, prev: <segment id> | null, base: <messages before>, messages }
 *
 * Appends write one object whose size depends only on the new messages (O(T) bytes over T turns);
 * retries rewrite the same key with the same bytes.
 */
import type { LogPointer, Message } from '../../engine/conversation/types.ts';
import { type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';

/** The log with no messages; never stored. */
export const EMPTY_LOG_ID = 'empty';
export const EMPTY_LOG: LogPointer = Object.freeze({ id: EMPTY_LOG_ID, length: 0 });

export const SEGMENT_PREFIX = 'segments/';

// Loaded on first use (the module is cached after that), so a Lambda whose node never reads a
// conversation does not load the S3 client at init just because it shares this module.
const s3Commands = once(() => import('@aws-sdk/client-s3'));
const SEGMENT_VERSION = 1;
/** Width of the `base` field, so a segment's size does not depend on where it sits in the log. */
const BASE_WIDTH = 16;

export interface Segment {
  readonly prev: string | null;
  readonly base: number;
  readonly messages: readonly Message[];
}

export interface ConversationStore {
  /** Writes one segment (none when `messages` is empty) and returns the pointer to the longer log. */
  appendMessages(pointer: LogPointer, messages: readonly Message[]): Promise<LogPointer>;
  /**
   * All `pointer.length` messages, oldest first. Segments come from the in-process cache when
   * present. Messages are frozen: the log is immutable and cached objects are shared. On a cold
   * cache, `segmentHints` names segments the log likely holds (its threads' step records know them):
   * they are fetched in one parallel round, so the chain walk that follows finds them cached.
   */
  readLog(pointer: LogPointer, options?: ReadLogOptions): Promise<Message[]>;
  /** The message at `position` (0-based, in the whole log) of the segment that holds it. */
  readMessage(segmentId: string, position: number): Promise<Message>;
}

export interface ReadLogOptions {
  /** Ids of segments the log probably holds; asked for only when the head segment is not cached. */
  readonly segmentHints?: () => Promise<readonly string[]>;
}

export interface ConversationStoreOptions {
  /** Defaults to one cache shared by every store in the process (segments are immutable). */
  readonly cache?: SegmentCache;
}

export function segmentKey(segmentId: string): string {
  return `${SEGMENT_PREFIX}${segmentId}.json`;
}

/**
 * The log after appending `messages` to the one at `pointer`: what `appendMessages` returns, known
 * before its write (a segment's id is the hash of its bytes), so a step can go on building its
 * commit while the segment is written.
 */
export function appendedPointer(pointer: LogPointer, messages: readonly Message[]): LogPointer {
  return messages.length === 0 ? pointer : appendedSegment(pointer, messages).pointer;
}

/** The segment that appends `messages` to the log at `pointer`: its bytes, and the longer log's pointer. */
function appendedSegment(pointer: LogPointer, messages: readonly Message[]) {
  const segment: Segment = { prev: pointer.length === 0 ? null : pointer.id, base: pointer.length, messages };
  const body = encodeSegment(segment);
  return { segment, body, pointer: { id: sha256Hex(body), length: pointer.length + messages.length } };
}

/** The exact bytes of a segment; its id is their sha256. */
export function encodeSegment(segment: Segment): string {
  const base = String(segment.base).padStart(BASE_WIDTH, ' ');
  const messages = `[${segment.messages.map((message) => canonicalJson(message)).join(',')}]`;
  return `{"v":${SEGMENT_VERSION},"prev":${JSON.stringify(segment.prev)},"base":${base},"messages":${messages}}`;
}

export function createConversationStore(
  { s3, bucketName }: { readonly s3: ObjectClient; readonly bucketName: string },
  options: ConversationStoreOptions = {},
): ConversationStore {
  const cache = options.cache ?? sharedSegmentCache;

  async function loadSegment(segmentId: string): Promise<Segment> {
    const cached = cache.get(segmentId);
    if (cached) return cached;
    const { GetObjectCommand } = await s3Commands();
    let body: string;
    try {
      const response = await s3.send(
        new GetObjectCommand({ Bucket: bucketName, Key: segmentKey(segmentId) }),
      );
      body = (await response.Body?.transformToString('utf-8')) ?? '';
    } catch (error) {
      if (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound')) {
        throw new StepthreadError('SEGMENT_NOT_FOUND', `conversation segment ${segmentId} not found`, {
          cause: error,
        });
      }
      throw error;
    }
    const segment = decodeSegment(segmentId, body);
    cache.set(segmentId, segment, Buffer.byteLength(body, 'utf8'));
    return segment;
  }

  return {
    async appendMessages(pointer, messages) {
      if (messages.length === 0) return pointer;
      const { segment, body, pointer: longer } = appendedSegment(pointer, messages);
      const { id } = longer;
      const { PutObjectCommand } = await s3Commands();
      await s3.send(
        new PutObjectCommand({
          Bucket: bucketName,
          Key: segmentKey(id),
          Body: body,
          ContentType: 'application/json',
        }),
      );
      // The writer is the likeliest next reader (the next node in this Lambda).
      cache.set(
        id,
        deepFreeze(structuredClone({ ...segment, messages: [...messages] })),
        Buffer.byteLength(body),
      );
      return longer;
    },

    async readMessage(segmentId, position) {
      const segment = await loadSegment(segmentId);
      const message = segment.messages[position - segment.base];
      if (message === undefined) throw corrupt(segmentId, `holds no message at position ${position}`);
      return message;
    },

    async readLog(pointer, options = {}) {
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
      const hints = options.segmentHints;
      if (hints !== undefined && cache.get(pointer.id) === undefined) {
        // Cold: the head and the hinted segments in two parallel rounds instead of one GET per link.
        const [, ids] = await Promise.all([loadSegment(pointer.id), hints().catch(() => [])]);
        const missing = [...new Set(ids)].filter((id) => id !== EMPTY_LOG_ID && cache.get(id) === undefined);
        await Promise.all(missing.map((id) => loadSegment(id).catch(() => undefined)));
      }
      const chain: Segment[] = [];
      let segment = await loadSegment(pointer.id);
      const headLength = segment.base + segment.messages.length;
      if (headLength !== pointer.length) throw mismatch(pointer, headLength);
      chain.push(segment);
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
      cache.rememberLog(pointer.id, Object.freeze([...messages]));
      return messages;
    },
  };
}

function decodeSegment(segmentId: string, body: string): Segment {
  if (sha256Hex(body) !== segmentId) throw corrupt(segmentId, 'content does not match its id');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw corrupt(segmentId, 'not JSON');
  }
  const { v, prev, base, messages } = (parsed ?? {}) as Record<string, unknown>;
  const valid =
    v === SEGMENT_VERSION &&
    Number.isSafeInteger(base) &&
    (base as number) >= 0 &&
    Array.isArray(messages) &&
    messages.length > 0 &&
    (prev === null ? base === 0 : typeof prev === 'string' && (base as number) > 0);
  if (!valid) throw corrupt(segmentId, 'unexpected shape');
  return deepFreeze({ prev: prev as string | null, base: base as number, messages: messages as Message[] });
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
 * Least-recently-used segments, bounded by their encoded size; and the last few logs read whole, as
 * arrays of those segments' messages (forgotten when a segment is evicted, so the bound holds).
 */
export class SegmentCache {
  private readonly entries = new Map<string, { segment: Segment; bytes: number }>();
  private readonly logs = new Map<string, readonly Message[]>();
  private totalBytes = 0;

  constructor(readonly maxBytes: number = 64 * 1024 * 1024) {}

  get bytes(): number {
    return this.totalBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get(segmentId: string): Segment | undefined {
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

  set(segmentId: string, segment: Segment, bytes: number): void {
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
