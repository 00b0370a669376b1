/**
 * A loopback HTTP server that answers from a queue of scripted replies and records every request
 * it receives, so tests can assert both what a client got and what it sent. HTTP/1.1 by default;
 * `{ http2: true }` speaks cleartext HTTP/2, which the Bedrock runtime client uses.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
} from 'node:http2';
import type { AddressInfo } from 'node:net';

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
}

export interface ScriptedServer {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Queues replies, answered in order; an empty queue answers 599. */
  reply(...replies: ScriptedReply[]): void;
  close(): Promise<void>;
}

export async function startScriptedServer(options: { http2?: boolean } = {}): Promise<ScriptedServer> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const handle = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
      });
      const next = queue.shift() ?? { status: 599, body: { message: 'no scripted reply left' } };
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
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}
