/**
 * An emulator's HTTP request handler, called in this process with an in-memory request and response
 * instead of through a loopback socket: the same method, path, headers and body reach dynalite's or
 * s3rver's own handler, which answers as it would on the wire.
 */
import { EventEmitter } from 'node:events';
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  RequestListener,
  Server,
  ServerResponse,
} from 'node:http';
import { Readable, Writable } from 'node:stream';
import {
  type HttpReply,
  type HttpRequest,
  type InProcessExchange,
  serveInProcess,
  serveOperationsInProcess,
} from '../aws/wire-http.ts';
import { type DynaliteStore, dynaliteOperations } from './dynalite-direct.ts';

/**
 * How a handler is given its request: as `streams`, a Readable request and a Writable response,
 * which a handler that pipes can take (s3rver's Koa app); or as `events`, an emitter and a plain
 * response, for a handler that only reads 'data' and 'end' and answers with `setHeader` and one
 * `end(body)` (dynalite's).
 */
export type HandlerShape = 'streams' | 'events';

/**
 * From now on, this process's wire clients reach `server` (listening at `endpoint`) without a socket.
 * The returned stop ends that and waits for the requests under way: closed under them, dynalite
 * throws an uncaught error for a request it takes after its database has closed.
 */
export function serveServerInProcess(
  endpoint: string,
  server: Server,
  shape: HandlerShape = 'streams',
): () => Promise<void> {
  const host = new URL(endpoint).host;
  const listener = requestListenerOf(server);
  const exchange = shape === 'events' ? eventsExchange(listener, host) : streamsExchange(listener, host);
  const underWay = new UnderWay();
  const stop = serveInProcess(endpoint, (req) => underWay.track(exchange(req)));
  return async () => {
    stop();
    await underWay.settled();
  };
}

/**
 * From now on, this process's wire clients reach the dynalite `server` (listening at `endpoint`,
 * serving `store`) without a socket, and send it DynamoDB operations as objects (dynalite-direct.ts);
 * anything else (a health check, an operation it does not serve) goes to its HTTP handler in process.
 * The returned stop waits for the requests under way, as serveServerInProcess's does.
 */
export function serveDynaliteInProcess(
  endpoint: string,
  server: Server,
  store: DynaliteStore,
): () => Promise<void> {
  const stopHttp = serveServerInProcess(endpoint, server, 'events');
  const operations = dynaliteOperations(store);
  const underWay = new UnderWay();
  const stop = serveOperationsInProcess(endpoint, (operation, input) => {
    const reply = operations(operation, input);
    return reply === undefined ? undefined : underWay.track(reply);
  });
  return async () => {
    stop();
    await Promise.all([underWay.settled(), stopHttp()]);
  };
}

/** Requests under way, for a stop to wait for. */
class UnderWay {
  readonly #replies = new Set<Promise<unknown>>();

  track<T>(reply: Promise<T>): Promise<T> {
    this.#replies.add(reply);
    const settled = () => this.#replies.delete(reply);
    reply.then(settled, settled);
    return reply;
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.#replies]);
  }
}

/** The handler `server` was created with: what it calls for each request. */
export function requestListenerOf(server: Server): RequestListener {
  const [listener] = server.listeners('request');
  if (typeof listener !== 'function') throw new Error('the server has no request listener');
  return listener as RequestListener;
}

/**
 * Requests to a handler that may treat its request and response as streams (s3rver's Koa app reads
 * the body from the request's events and pipes an object into the response): a Readable holding the
 * body and a Writable that keeps the header calls Koa makes and collects what is written. No
 * socket, no HTTP framing, no parsing of a rendered reply.
 */
export function streamsExchange(listener: RequestListener, host: string): InProcessExchange {
  return (req: HttpRequest) =>
    new Promise((resolve, reject) => {
      const headers: IncomingHttpHeaders = { host };
      for (const [name, value] of Object.entries(req.headers)) headers[name.toLowerCase()] = String(value);
      const body = req.body === undefined ? undefined : Buffer.from(req.body);
      const request = Object.assign(
        new Readable({
          read() {
            if (body !== undefined && body.length > 0) this.push(body);
            this.push(null);
          },
        }),
        {
          method: req.method,
          url: req.path,
          headers,
          httpVersion: '1.1',
          httpVersionMajor: 1,
          httpVersionMinor: 1,
          socket: LOOPBACK_SOCKET,
        },
      );
      request.on('error', reject);
      // A reply to HEAD has no body on the wire, whatever the handler wrote (s3rver writes its error).
      const response = new InMemoryResponse((reply) =>
        resolve(req.method === 'HEAD' ? { ...reply, body: Buffer.alloc(0) } : reply),
      );
      listener(request as unknown as IncomingMessage, response as unknown as ServerResponse);
    });
}

/** What Koa reads of a request's socket (`ctx.ip`, `ctx.protocol`). */
const LOOPBACK_SOCKET = Object.freeze({ encrypted: false, remoteAddress: '127.0.0.1', writable: true });

/** A response Koa can set headers on, end, or pipe a stream into; it hands the reply over once finished. */
class InMemoryResponse extends Writable {
  statusCode = 200;
  statusMessage = '';
  headersSent = false;
  readonly socket = null;
  private readonly headerMap: IncomingHttpHeaders = {};
  private readonly chunks: Buffer[] = [];

  constructor(deliver: (reply: HttpReply) => void) {
    super();
    this.once('finish', () => {
      deliver({ status: this.statusCode, headers: this.headerMap, body: Buffer.concat(this.chunks) });
    });
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: () => void): void {
    this.headersSent = true;
    this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
    callback();
  }

  override end(...args: unknown[]): this {
    this.headersSent = true;
    return super.end(...(args as []));
  }

  setHeader(name: string, value: number | string | readonly string[]): this {
    this.headerMap[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    return this;
  }

  getHeader(name: string): string | string[] | undefined {
    return this.headerMap[name.toLowerCase()];
  }

  getHeaders(): IncomingHttpHeaders {
    return { ...this.headerMap };
  }

  getHeaderNames(): string[] {
    return Object.keys(this.headerMap);
  }

  hasHeader(name: string): boolean {
    return name.toLowerCase() in this.headerMap;
  }

  removeHeader(name: string): void {
    delete this.headerMap[name.toLowerCase()];
  }

  writeHead(statusCode: number, headers?: Record<string, number | string>): this {
    this.statusCode = statusCode;
    for (const [name, value] of Object.entries(headers ?? {})) this.setHeader(name, value);
    return this;
  }
}

/**
 * Requests to a handler that reads the request's `method`, `url`, `headers` and its 'data' and 'end'
 * events, and answers with `statusCode`, `setHeader` and one `end(body)`: dynalite's, which touches
 * nothing else of either. Built from an emitter and a plain object, the pair costs a fraction of
 * light-my-request's (a real ServerResponse on a fake socket), which this module used before: with
 * it, the 200-node chain's median step took 16 % less (the two alternating in one process).
 */
export function eventsExchange(listener: RequestListener, host: string): InProcessExchange {
  return (req: HttpRequest) =>
    new Promise((resolve) => {
      const headers: IncomingHttpHeaders = { host };
      for (const [name, value] of Object.entries(req.headers)) headers[name.toLowerCase()] = String(value);
      const request = Object.assign(new EventEmitter(), { method: req.method, url: req.path, headers });
      const replyHeaders: IncomingHttpHeaders = {};
      const response = {
        statusCode: 200,
        setHeader(name: string, value: number | string): unknown {
          replyHeaders[name.toLowerCase()] = String(value);
          return response;
        },
        end(body?: string | Uint8Array): unknown {
          resolve({
            status: response.statusCode,
            headers: replyHeaders,
            body: body === undefined ? Buffer.alloc(0) : Buffer.from(body),
          });
          return response;
        },
      };
      listener(request as unknown as IncomingMessage, response as unknown as ServerResponse);
      // The handler subscribes as it is called; the body comes on a later tick, as from a socket.
      process.nextTick(() => {
        if (req.body !== undefined && req.body.length > 0) request.emit('data', Buffer.from(req.body));
        request.emit('end');
      });
    });
}
