/**
 * Large values in S3 (see value-refs.ts): `values/<first 128 bits of the body's sha256>.json` holds the values one step
 * wrote, keyed by their hashes. Objects are immutable, so they are cached in process by id.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { once } from '../aws/once.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { canonicalJson, sha256Hex, shortHash } from './canonical-json.ts';
import type { ConversationStore } from './conversation-store.ts';
import { isValueRef, mapSlots, parseRef, refsIn, type Slotted, type ValueRef } from './value-refs.ts';

export const VALUES_PREFIX = 'values/';

const s3Commands = once(() => import('@aws-sdk/client-s3'));

export interface ValueStore {
  /** Writes one object holding `values` (hash → value) and returns its id. */
  putValues(values: ReadonlyMap<string, unknown>): Promise<string>;
  /** The values the references name, by reference string (objects read once each, in parallel). */
  read(refs: readonly ValueRef[]): Promise<Map<string, unknown>>;
}

export function valuesKey(objectId: string): string {
  return `${VALUES_PREFIX}${objectId}.json`;
}

/** Bounded by entries; values objects are small in number per run. */
const CACHE_ENTRIES = 256;
const sharedCache = new Map<string, Record<string, unknown>>();

export function createValueStore(
  { s3, bucketName }: { readonly s3: ObjectClient; readonly bucketName: string },
  conversations: Pick<ConversationStore, 'readMessage'>,
): ValueStore {
  const cache = sharedCache;
  const remember = (id: string, values: Record<string, unknown>) => {
    cache.set(id, values);
    if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  };

  async function loadObject(objectId: string): Promise<Record<string, unknown>> {
    const cached = cache.get(objectId);
    if (cached) return cached;
    const { GetObjectCommand } = await s3Commands();
    let body: string;
    try {
      const response = await s3.send(new GetObjectCommand({ Bucket: bucketName, Key: valuesKey(objectId) }));
      body = (await response.Body?.transformToString('utf-8')) ?? '';
    } catch (error) {
      if (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound')) {
        throw new StepthreadError('VALUE_NOT_FOUND', `stored value object ${objectId} not found`, {
          cause: error,
        });
      }
      throw error;
    }
    if (!sha256Hex(body).startsWith(objectId)) {
      throw new StepthreadError('VALUE_NOT_FOUND', `stored value object ${objectId} does not match its id`);
    }
    const values = JSON.parse(body) as Record<string, unknown>;
    remember(objectId, values);
    return values;
  }

  return {
    async putValues(values) {
      const record: Record<string, unknown> = {};
      for (const [hash, value] of values) record[hash] = value;
      const body = canonicalJson(record);
      const id = shortHash(body);
      const { PutObjectCommand } = await s3Commands();
      await s3.send(
        new PutObjectCommand({
          Bucket: bucketName,
          Key: valuesKey(id),
          Body: body,
          ContentType: 'application/json',
        }),
      );
      remember(id, record);
      return id;
    },

    async read(refs) {
      const found = new Map<string, unknown>();
      await Promise.all(
        [...new Map(refs.map((ref) => [ref['$stepthread:ref'], ref])).values()].map(async (ref) => {
          const { kind, object, key } = parseRef(ref);
          if (kind === 'm') {
            const message = await conversations.readMessage(object, Number(key));
            found.set(ref['$stepthread:ref'], message.content);
            return;
          }
          const values = await loadObject(object);
          if (!Object.hasOwn(values, key)) {
            throw new StepthreadError('VALUE_NOT_FOUND', `stored value object ${object} has no value ${key}`);
          }
          found.set(ref['$stepthread:ref'], values[key]);
        }),
      );
      return found;
    },
  };
}

/** What hydration gives: the data with values in place, and the references it resolved (by hash). */
export interface Hydrated<T> {
  readonly data: T;
  /** Hash of each resolved value's canonical JSON → its reference, so unchanged values keep them. */
  readonly known: Map<string, ValueRef>;
}

/**
 * Replaces the references in the slots of each item with their values (one parallel read); a value
 * over `maxBytes`, when given, is not read and stays its reference.
 */
export async function hydrateAll<T extends Slotted>(
  store: ValueStore | undefined,
  items: readonly T[],
  { maxBytes = Number.POSITIVE_INFINITY }: { readonly maxBytes?: number } = {},
): Promise<Hydrated<T[]>> {
  const readable = (value: unknown): value is ValueRef => isValueRef(value) && value.bytes <= maxBytes;
  const refs = items.flatMap((item) => refsIn(item)).filter(readable);
  const known = new Map<string, ValueRef>();
  if (refs.length === 0 || store === undefined) return { data: [...items], known };
  const values = await store.read(refs);
  for (const ref of refs) {
    const { kind, key } = parseRef(ref);
    const hash = kind === 'v' ? key : shortHash(canonicalJson(values.get(ref['$stepthread:ref'])));
    known.set(hash, ref);
  }
  const data = items.map((item) =>
    mapSlots(item, (value) => (readable(value) ? values.get(value['$stepthread:ref']) : value)),
  );
  return { data, known };
}

/** Execution inputs over this many bytes of JSON start by reference (StartExecution allows 256 KiB). */
export const INPUT_INLINE_BYTES = 8 * 1024;

/**
 * The claim check for an execution input: the input itself when small, else a reference to it after
 * one PUT, which START resolves. Keeps large inputs out of state payloads and execution history.
 */
export async function claimCheck(store: ValueStore | undefined, value: unknown): Promise<unknown> {
  const json = canonicalJson(value ?? {});
  if (store === undefined || json.length <= INPUT_INLINE_BYTES) return value;
  const hash = shortHash(json);
  const objectId = await store.putValues(new Map([[hash, value]]));
  return { '$stepthread:ref': `v:${objectId}/${hash}`, bytes: Buffer.byteLength(json) } satisfies ValueRef;
}
