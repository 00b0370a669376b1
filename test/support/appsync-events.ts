/**
 * A stand-in for an AppSync Events API on 127.0.0.1, speaking both of its protocols:
 * - HTTP publish: `POST /event` with `{"channel": "/ns/seg", "events": ["<json>", …]}` (at most 5),
 *   SigV4-signed for service `appsync`. The signature is checked against the test credentials (the
 *   body and signed headers as received), every request recorded; `failPublishes(n)` answers the next
 *   n with a 500.
 * - Realtime: a WebSocket at `/event/realtime` with the subprotocols `aws-appsync-event-ws` and
 *   `header-<base64url of the signed headers of {}>`; `connection_init` → `connection_ack` (and a
 *   `ka`), `subscribe` (signed over `{"channel": …}`) → `subscribe_success` or `subscribe_error`,
 *   `unsubscribe` → `unsubscribe_success`; each event published on a subscribed channel reaches the
 *   subscription as `{"type": "data", "id", "event": "<json>"}`.
 * The WebSocket server is written here (RFC 6455, text frames only), as no WebSocket server package is
 * in the tree.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '../../functions/events/appsync-signing.ts';

export const TEST_CREDENTIALS = { accessKeyId: 'AKIDSTREAMTEST', secretAccessKey: 'stream-test-secret' };
export const TEST_REGION = 'us-east-1';

export interface PublishRequest {
  path: string;
  headers: IncomingHttpHeaders;
  channel: string;
  /** The events, parsed. */
  events: unknown[];
  /** Whether the SigV4 signature matched the body and headers received. */
  signatureValid: boolean;
}

export interface EventsStandIn {
  /** Base URL (http://127.0.0.1:port), what the publisher and the subscriber are given. */
  url: string;
  publishes: PublishRequest[];
  /** Subscriptions as made: channel and whether their authorization checked out. */
  subscriptions: Array<{ channel: string; authorized: boolean }>;
  /** Connections opened, with whether their `header-` authorization checked out. */
  connections: Array<{ authorized: boolean }>;
  /** Answers the next `count` publishes with a 500. */
  failPublishes(count: number): void;
  /** Sends `data` for `event` to every subscription of `channel`, as a publish would. */
  deliver(channel: string, event: unknown): void;
  /** Resolves once `count` subscriptions were made. */
  subscribed(count?: number): Promise<void>;
  close(): Promise<void>;
}

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Whether `headers` carry a valid SigV4 signature of a POST of `body` to /event on `host`. */
async function signatureMatches(headers: Record<string, string | undefined>, body: string): Promise<boolean> {
  const authorization = headers.authorization ?? headers.Authorization;
  const date = headers['x-amz-date'] ?? headers['X-Amz-Date'];
  if (!authorization?.startsWith('AWS4-HMAC-SHA256 ') || !date) return false;
  if (!authorization.includes(`/${TEST_REGION}/appsync/aws4_request`)) return false;
  const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const signed: Record<string, string> = {};
  for (const name of signedNames) {
    if (name === 'x-amz-date' || name === 'authorization') continue;
    const value = lower[name];
    if (value === undefined) return false;
    signed[name] = value;
  }
  const signer = new SignatureV4({
    service: 'appsync',
    region: TEST_REGION,
    credentials: TEST_CREDENTIALS,
    sha256: Sha256,
  });
  const [, y, mo, d, h, mi, s] = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date) ?? [];
  if (!y) return false;
  const again = await signer.sign(
    {
      method: 'POST',
      protocol: 'http:',
      hostname: String(signed.host ?? '').split(':')[0]!,
      path: '/event',
      query: {},
      headers: signed,
      body,
    },
    { signingDate: new Date(Date.UTC(+y, +mo! - 1, +d!, +h!, +mi!, +s!)) },
  );
  return (again.headers as Record<string, string>).authorization === authorization;
}

/** One text frame, unmasked (server to client). */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([0x81, length])
      : length < 65536
        ? Buffer.from([0x81, 126, length >> 8, length & 0xff])
        : Buffer.concat([
            Buffer.from([0x81, 127]),
            (() => {
              const b = Buffer.alloc(8);
              b.writeBigUInt64BE(BigInt(length));
              return b;
            })(),
          ]);
  return Buffer.concat([header, payload]);
}

/** Client frames from `buffer`: each complete one (opcode, unmasked payload) and what is left. */
function readFrames(buffer: Buffer): { frames: Array<{ opcode: number; payload: Buffer }>; rest: Buffer } {
  const frames: Array<{ opcode: number; payload: Buffer }> = [];
  let at = 0;
  while (buffer.length - at >= 2) {
    const opcode = buffer[at]! & 0x0f;
    const masked = (buffer[at + 1]! & 0x80) !== 0;
    let length = buffer[at + 1]! & 0x7f;
    let offset = at + 2;
    if (length === 126) {
      if (buffer.length < offset + 2) break;
      length = buffer.readUInt16BE(offset);
      offset += 2;
    } else if (length === 127) {
      if (buffer.length < offset + 8) break;
      length = Number(buffer.readBigUInt64BE(offset));
      offset += 8;
    }
    const maskBytes = masked ? 4 : 0;
    if (buffer.length < offset + maskBytes + length) break;
    const mask = masked ? buffer.subarray(offset, offset + 4) : undefined;
    const payload = Buffer.from(buffer.subarray(offset + maskBytes, offset + maskBytes + length));
    if (mask) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
    frames.push({ opcode, payload });
    at = offset + maskBytes + length;
  }
  return { frames, rest: buffer.subarray(at) };
}

export async function startEventsStandIn(): Promise<EventsStandIn> {
  const publishes: PublishRequest[] = [];
  const subscriptions: EventsStandIn['subscriptions'] = [];
  const connections: EventsStandIn['connections'] = [];
  const live: Array<{ id: string; channel: string; send: (message: unknown) => void }> = [];
  const sockets = new Set<Socket>();
  const waiting: Array<{ count: number; resolve: () => void }> = [];
  let failing = 0;

  const deliver = (channel: string, event: unknown) => {
    const text = typeof event === 'string' ? event : JSON.stringify(event);
    for (const sub of live) if (sub.channel === channel) sub.send({ type: 'data', id: sub.id, event: text });
  };

  const http: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (request.method !== 'POST' || request.url !== '/event') {
      response.writeHead(404).end();
      return;
    }
    let parsed: { channel?: unknown; events?: unknown };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      response.writeHead(400, { 'content-type': 'application/json' }).end('{"errors":["body is not JSON"]}');
      return;
    }
    const signatureValid = await signatureMatches(request.headers as Record<string, string>, body);
    const events = Array.isArray(parsed.events) ? parsed.events : [];
    const valid =
      typeof parsed.channel === 'string' &&
      events.length >= 1 &&
      events.length <= 5 &&
      events.every((event) => typeof event === 'string');
    publishes.push({
      path: request.url,
      headers: request.headers,
      channel: String(parsed.channel),
      events: valid ? events.map((event) => JSON.parse(event as string) as unknown) : events,
      signatureValid,
    });
    if (failing > 0) {
      failing -= 1;
      response.writeHead(500, { 'content-type': 'application/json' }).end('{"errors":["stand-in fault"]}');
      return;
    }
    if (!signatureValid) {
      response
        .writeHead(401, { 'content-type': 'application/json' })
        .end('{"errors":["UnauthorizedException"]}');
      return;
    }
    if (!valid) {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"errors":["BadRequestException"]}');
      return;
    }
    for (const event of events) deliver(parsed.channel as string, event);
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        successful: events.map((_event, index) => ({ identifier: `e${publishes.length}-${index}`, index })),
        failed: [],
      }),
    );
  });

  http.on('upgrade', (request, socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const protocols = String(request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim());
    const key = request.headers['sec-websocket-key'];
    if (request.url !== '/event/realtime' || !protocols.includes('aws-appsync-event-ws') || !key) {
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const accept = createHash('sha1').update(`${key}${WS_GUID}`).digest('base64');
    socket.write(
      [
        'HTTP/1.1 101 Switching Protocols',
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Accept: ${accept}`,
        'Sec-WebSocket-Protocol: aws-appsync-event-ws',
        '',
        '',
      ].join('\r\n'),
    );
    const send = (message: unknown) => {
      if (!socket.destroyed) socket.write(textFrame(JSON.stringify(message)));
    };
    const header = protocols.find((p) => p.startsWith('header-'));
    const connection = { authorized: false };
    connections.push(connection);
    const checked = (async () => {
      if (!header) return false;
      const signed = JSON.parse(Buffer.from(header.slice('header-'.length), 'base64url').toString('utf8'));
      return signatureMatches(signed as Record<string, string>, '{}');
    })().catch(() => false);
    const mine: typeof live = [];
    socket.on('close', () => {
      for (const sub of mine) live.splice(live.indexOf(sub), 1);
    });
    let buffer: Buffer = Buffer.alloc(0);
    let queue = Promise.resolve();
    socket.on('data', (data: Buffer) => {
      const { frames, rest } = readFrames(Buffer.concat([buffer, data]));
      buffer = rest;
      for (const frame of frames) {
        queue = queue.then(async () => {
          if (frame.opcode === 0x8) {
            socket.end(Buffer.from([0x88, 0]));
            return;
          }
          if (frame.opcode !== 0x1) return;
          const message = JSON.parse(frame.payload.toString('utf8')) as Record<string, unknown>;
          connection.authorized = await checked;
          if (message.type === 'connection_init') {
            if (!connection.authorized) {
              send({ type: 'connection_error', errors: [{ errorType: 'UnauthorizedException' }] });
              return;
            }
            send({ type: 'connection_ack', connectionTimeoutMs: 300_000 });
            send({ type: 'ka' });
          } else if (message.type === 'subscribe') {
            const channel = String(message.channel);
            const authorized = await signatureMatches(
              (message.authorization ?? {}) as Record<string, string>,
              JSON.stringify({ channel }),
            );
            subscriptions.push({ channel, authorized });
            if (!authorized) {
              send({
                type: 'subscribe_error',
                id: message.id,
                errors: [{ errorType: 'UnauthorizedException' }],
              });
              return;
            }
            const sub = { id: String(message.id), channel, send };
            live.push(sub);
            mine.push(sub);
            send({ type: 'subscribe_success', id: message.id });
            for (const wait of waiting.splice(0)) {
              if (subscriptions.filter((s) => s.authorized).length >= wait.count) wait.resolve();
              else waiting.push(wait);
            }
          } else if (message.type === 'unsubscribe') {
            const index = live.findIndex((sub) => sub.id === message.id);
            if (index >= 0) live.splice(index, 1);
            send({ type: 'unsubscribe_success', id: message.id });
          }
        });
      }
    });
  });

  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    publishes,
    subscriptions,
    connections,
    failPublishes(count) {
      failing = count;
    },
    deliver,
    subscribed(count = 1) {
      if (subscriptions.filter((s) => s.authorized).length >= count) return Promise.resolve();
      return new Promise((resolve) => waiting.push({ count, resolve }));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
