/**
 * Publishes the replies an LLM node streams on a deployed stack to the stack's AppSync Events API, on
 * the execution's channel (reply-channel.ts), for `stepthread watch` and `dev --target aws`.
 *
 * Batched, so that the cost stays bounded whatever the model's pace: the pieces of a reply are joined
 * and published at most FLUSH_MS after the first one waiting, or as soon as FLUSH_BYTES of text wait,
 * and at the end of the node's request (with an `end` event). A request carries at most 5 events
 * (the HTTP publish API's limit). Each request is SigV4-signed with the Lambda's own credentials.
 *
 * Best effort: what is published is no part of the step (the step record holds the reply). A publish
 * the API refuses is logged, by ids and counts only, and that batch is dropped; the node goes on. One
 * that cannot reach the API (a network error, a timeout) ends publishing for the rest of the Task, so
 * an unreachable endpoint costs one timeout, not one per batch. Nothing here throws into the node.
 */

import type { ReplyTextEntry } from '../handlers/deps.ts';
import type { TaskRunner } from '../handlers/dispatch-table.ts';
import {
  type AwsCredentials,
  type CredentialSource,
  credentialsFrom,
  eventsRegion,
  eventsUrl,
  signedEventHeaders,
} from './appsync-signing.ts';
import {
  EVENTS_HTTP_ENV,
  EVENTS_NAMESPACE_ENV,
  REPLY_NAMESPACE,
  type ReplyEvent,
  type ReplyTextEvent,
  replyChannel,
} from './reply-channel.ts';

export const FLUSH_MS = 100;
export const FLUSH_BYTES = 1024;
/** The most events one HTTP publish request may carry. */
export const MAX_EVENTS_PER_PUBLISH = 5;
/** Text per event: an event may be 240 KB, and escaping can make a character six bytes. */
export const MAX_EVENT_TEXT = 30_000;
/** A publish slower than this is given up (the Lambda is not held for a stream nobody may read). */
export const PUBLISH_TIMEOUT_MS = 3_000;

export type Warn = (message: string, fields: Record<string, unknown>) => void;

export interface ReplyPublisherOptions {
  /** The API's HTTP domain as the stack outputs it, or a base URL (a stand-in on loopback). */
  readonly http: string;
  readonly namespace?: string;
  readonly region?: string;
  readonly credentials: CredentialSource;
  readonly flushMs?: number;
  readonly flushBytes?: number;
  readonly timeoutMs?: number;
  readonly warn?: Warn;
  readonly fetch?: typeof fetch;
}

/** What one Task's node streams: pieces in, batches out; `close` publishes the rest and waits. */
export interface ReplySession {
  add(entry: ReplyTextEntry): void;
  close(): Promise<void>;
}

export interface ReplyPublisher {
  open(): ReplySession;
}

const consoleWarn: Warn = (message, fields) => console.warn(JSON.stringify({ message, ...fields }));

function samePlace(
  a: ReplyEvent,
  b: { executionId: string; threadId: string; nodeId: string; step: number },
) {
  return (
    a.executionId === b.executionId && a.threadId === b.threadId && a.nodeId === b.nodeId && a.step === b.step
  );
}

/** A text event cut into events of at most MAX_EVENT_TEXT characters (a surrogate pair stays whole). */
function cut(event: ReplyEvent): ReplyEvent[] {
  if (event.kind !== 'text' || event.text.length <= MAX_EVENT_TEXT) return [event];
  const pieces: ReplyEvent[] = [];
  let at = 0;
  while (at < event.text.length) {
    let end = Math.min(at + MAX_EVENT_TEXT, event.text.length);
    const last = event.text.charCodeAt(end - 1);
    if (end < event.text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    pieces.push({ ...event, restart: event.restart && at === 0, text: event.text.slice(at, end) });
    at = end;
  }
  return pieces;
}

export function createReplyPublisher(options: ReplyPublisherOptions): ReplyPublisher {
  const namespace = options.namespace ?? REPLY_NAMESPACE;
  const httpUrl = eventsUrl(options.http, 'https', '/event');
  const region = options.region ?? eventsRegion(httpUrl.hostname, process.env);
  const flushMs = options.flushMs ?? FLUSH_MS;
  const flushBytes = options.flushBytes ?? FLUSH_BYTES;
  const timeoutMs = options.timeoutMs ?? PUBLISH_TIMEOUT_MS;
  const warn = options.warn ?? consoleWarn;
  const send = options.fetch ?? fetch;

  /** One publish request; never throws. False when the API could not be reached. */
  const publish = async (channel: string, events: readonly ReplyEvent[]): Promise<boolean> => {
    const ids = { channel, count: events.length };
    try {
      const body = JSON.stringify({ channel, events: events.map((event) => JSON.stringify(event)) });
      const credentials: AwsCredentials = await options.credentials();
      const headers = await signedEventHeaders({ httpUrl, body, region, credentials });
      const response = await send(httpUrl, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      // The body says which events failed (`failed`), if any; read it so the connection is freed.
      const answer = (await response.json().catch(() => undefined)) as { failed?: unknown[] } | undefined;
      if (!response.ok) warn('streamed reply not published', { ...ids, status: response.status });
      else if (Array.isArray(answer?.failed) && answer.failed.length > 0)
        warn('streamed reply partly published', { ...ids, failed: answer.failed.length });
      return true;
    } catch (error) {
      warn('streamed reply not published', {
        ...ids,
        errorName: error instanceof Error ? error.name : 'unknown',
      });
      return false;
    }
  };

  return {
    open() {
      let pending: ReplyEvent[] = [];
      let pendingBytes = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      /** Requests go out one after the other, in order: a subscriber sees the text as it was written. */
      let sent: Promise<void> = Promise.resolve();
      const streamed: ReplyEvent[] = [];
      /** The API could not be reached: the rest is dropped, and counted. */
      let unreachable = false;
      let dropped = 0;
      const send = async (channel: string, events: ReplyEvent[]) => {
        if (unreachable) dropped += events.length;
        else if (!(await publish(channel, events))) unreachable = true;
      };

      const flush = () => {
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        const events = pending.flatMap(cut);
        pending = [];
        pendingBytes = 0;
        let batch: ReplyEvent[] = [];
        let channel: string | undefined;
        const batches: { channel: string; events: ReplyEvent[] }[] = [];
        for (const event of events) {
          const eventChannel = replyChannel(namespace, event.executionId);
          if (channel !== eventChannel || batch.length === MAX_EVENTS_PER_PUBLISH) {
            batch = [];
            channel = eventChannel;
            batches.push({ channel, events: batch });
          }
          batch.push(event);
        }
        for (const { channel: to, events: chunk } of batches) sent = sent.then(() => send(to, chunk));
      };

      return {
        add(entry) {
          try {
            const last = pending.at(-1);
            if (
              last?.kind === 'text' &&
              samePlace(last, entry) &&
              last.reply === entry.reply &&
              !entry.restart
            ) {
              pending[pending.length - 1] = { ...last, text: last.text + entry.text };
            } else {
              const event: ReplyTextEvent = {
                kind: 'text',
                executionId: entry.executionId,
                threadId: entry.threadId,
                nodeId: entry.nodeId,
                step: entry.step,
                reply: entry.reply,
                restart: entry.restart,
                text: entry.text,
              };
              pending.push(event);
            }
            if (!streamed.some((place) => samePlace(place, entry))) {
              const { executionId, threadId, nodeId, step } = entry;
              streamed.push({ kind: 'end', executionId, threadId, nodeId, step });
            }
            pendingBytes += Buffer.byteLength(entry.text);
            if (pendingBytes >= flushBytes) flush();
            else timer ??= setTimeout(flush, flushMs);
          } catch {
            // What is shown of a reply is no part of it.
          }
        },
        async close() {
          pending.push(...streamed.splice(0));
          flush();
          await sent;
          if (dropped > 0)
            warn('streamed reply not published', { reason: 'unreachable', droppedEvents: dropped });
        },
      };
    },
  };
}

/** The publisher when the environment names an Events API (a deployed LLM function); else none. */
export function replyPublisherFromEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  warn?: Warn,
): ReplyPublisher | undefined {
  const http = env[EVENTS_HTTP_ENV]?.trim();
  if (!http) return undefined;
  const namespace = env[EVENTS_NAMESPACE_ENV]?.trim() || REPLY_NAMESPACE;
  return createReplyPublisher({
    http,
    namespace,
    region: eventsRegion(eventsUrl(http, 'https', '/event').hostname, env),
    credentials: credentialsFrom(env),
    ...(warn ? { warn } : {}),
  });
}

/**
 * A Task runner whose node's streamed replies are published: the runner sees an `onReplyText` (so the
 * providers ask for streamed replies), and the Task returns once what streamed is published (or given
 * up). Without a publisher the runner is returned as it is: replies are asked for whole.
 */
export function publishingReplies(runner: TaskRunner, publisher: ReplyPublisher | undefined): TaskRunner {
  if (publisher === undefined) return runner;
  return async (event, deps) => {
    const session = publisher.open();
    const watch = deps.onReplyText;
    try {
      return await runner(event, {
        ...deps,
        onReplyText: (entry) => {
          session.add(entry);
          watch?.(entry);
        },
      });
    } finally {
      await session.close();
    }
  };
}
