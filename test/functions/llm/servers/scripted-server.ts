/**
 * A loopback HTTP server that answers from a queue of scripted replies and records every request
 * it receives, so tests can assert both what a client got and what it sent. HTTP/1.1 by default;
 * `{ http2: true }` speaks cleartext HTTP/2, which the Bedrock runtime client uses.
 *
 * A request that asks for a streamed reply (a chat-completions body with `"stream": true`) gets its
 * reply as Server-Sent Events: the reply's own `stream` chunks, else its completion cut into
 * chunks (completionChunks). A Bedrock ConverseStream request (`/converse-stream`) gets its reply
 * as AWS event-stream messages, encoded by the SDK's own codec: the reply's `stream` events
 * (`{"contentBlockDelta": {...}}`, an exception as `{"throttlingException": {...}}`), else its
 * Converse body cut into events (converseEvents). A reply's `beforeChunk` holds each chunk back until
 * it resolves, so a test can pause the server between chunks.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { converseEvents } from './converse-replies.ts';
import { completionChunks } from './openai-replies.ts';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body (undefined when empty). */
  readonly body: unknown;
}

export interface ScriptedReply {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /** Holds the reply back (timeouts). */
  readonly delayMs?: number;
  /** The chunks of a streamed reply (sent as `data:` events, then `data: [DONE]`). */
  readonly stream?: readonly unknown[];
  /** Awaited before chunk `index` of a streamed reply is sent (`index` = the chunk count: before its end). */
  readonly beforeChunk?: (index: number) => Promise<void>;
  /** A streamed reply sends its chunks, then closes the connection without `[DONE]` (a cut stream). */
  readonly cutAfterChunks?: boolean;
  /** Answered as JSON even to a request that asks for a stream (a server that does not stream). */
  readonly ignoresStream?: boolean;
}

export interface ScriptedServer {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Requests whose connection the client closed before their reply was complete (a call aborted). */
  readonly abandoned: RecordedRequest[];
  /** Queues replies, answered in order; an empty queue answers 599. */
  reply(...replies: ScriptedReply[]): void;
  close(): Promise<void>;
}

/** A streamed reply: each chunk as an SSE `data:` event once `beforeChunk` lets it go, then `[DONE]`. */
async function sendEvents(
  res: ServerResponse | Http2ServerResponse,
  chunks: readonly unknown[],
  reply: ScriptedReply,
): Promise<void> {
  (res as ServerResponse).writeHead(200, { 'content-type': 'text/event-stream', ...reply.headers });
  for (const [index, chunk] of chunks.entries()) {
    await reply.beforeChunk?.(index);
    if (res.destroyed) return;
    // Each chunk leaves before the next is held back (or the connection cut).
    await new Promise<void>((resolve) =>
      (res as ServerResponse).write(`data: ${JSON.stringify(chunk)}\n\n`, () => resolve()),
    );
  }
  await reply.beforeChunk?.(chunks.length);
  if (res.destroyed) return;
  if (reply.cutAfterChunks) {
    (res as ServerResponse).socket?.destroy();
    return;
  }
  res.end('data: [DONE]\n\n');
}

const codec = new EventStreamCodec(
  (bytes) => new TextDecoder().decode(bytes),
  (text) => new TextEncoder().encode(text),
);
const EXCEPTION_EVENTS = new Set([
  'internalServerException',
  'modelStreamErrorException',
  'serviceUnavailableException',
  'throttlingException',
  'validationException',
]);

/** A ConverseStream reply: each `{eventType: body}` as an event-stream message once `beforeChunk` lets it go. */
async function sendConverseEvents(
  res: ServerResponse | Http2ServerResponse,
  events: readonly unknown[],
  reply: ScriptedReply,
): Promise<void> {
  (res as ServerResponse).writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
  for (const [index, event] of events.entries()) {
    await reply.beforeChunk?.(index);
    if (res.destroyed) return;
    const [type, body] = Object.entries(event as Record<string, unknown>)[0]!;
    const exception = EXCEPTION_EVENTS.has(type);
    const message = codec.encode({
      headers: {
        ':message-type': { type: 'string', value: exception ? 'exception' : 'event' },
        [exception ? ':exception-type' : ':event-type']: { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: new TextEncoder().encode(JSON.stringify(body)),
    });
    await new Promise<void>((resolve) => (res as ServerResponse).write(message, () => resolve()));
  }
  res.end();
}

export async function startScriptedServer(options: { http2?: boolean } = {}): Promise<ScriptedServer> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const abandoned: RecordedRequest[] = [];
  const handle = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
      };
      requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished) abandoned.push(recorded);
      });
      const next = queue.shift() ?? { status: 599, body: { message: 'no scripted reply left' } };
      const path = req.url ?? '';
      if (path.endsWith('/converse-stream') && (next.status ?? 200) === 200) {
        void sendConverseEvents(res, next.stream ?? converseEvents(next.body), next);
        return;
      }
      const streamed = (requests.at(-1)?.body as { stream?: unknown } | undefined)?.stream === true;
      if (streamed && (next.status ?? 200) === 200 && !next.ignoresStream) {
        void sendEvents(res, next.stream ?? completionChunks(next.body), next);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        // Node 22's types give HTTP/1 and HTTP/2 writeHead overloads no common signature; this call fits both.
        (res as ServerResponse).writeHead(next.status ?? 200, {
          'content-type': 'application/json',
          ...next.headers,
        });
        res.end(next.body === undefined ? '' : JSON.stringify(next.body));
      };
      if (next.delayMs) setTimeout(send, next.delayMs).unref();
      else send();
    });
  };
  const sessions = new Set<Http2Session>();
  const server = options.http2 ? createHttp2Server(handle) : createServer(handle);
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    abandoned,
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}
