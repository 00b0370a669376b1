/**
 * An emulator's HTTP request handler, called in this process with an in-memory request and response
 * (light-my-request) instead of through a loopback socket: the same method, path, headers and body
 * reach dynalite's or s3rver's own handler, which answers as it would on the wire.
 */
import type { IncomingHttpHeaders, RequestListener, Server } from 'node:http';
import inject from 'light-my-request';
import { type HttpRequest, type InProcessExchange, serveInProcess } from '../aws/wire-http.ts';

/**
 * From now on, this process's wire clients reach `server` (listening at `endpoint`) without a socket.
 * The returned stop ends that and waits for the requests under way: closed under them, dynalite
 * throws an uncaught error for a request it takes after its database has closed.
 */
export function serveServerInProcess(endpoint: string, server: Server): () => Promise<void> {
  const exchange = inProcessExchange(requestListenerOf(server), new URL(endpoint).host);
  const underWay = new Set<Promise<unknown>>();
  const stop = serveInProcess(endpoint, (req) => {
    const reply = exchange(req);
    underWay.add(reply);
    const settled = () => underWay.delete(reply);
    reply.then(settled, settled);
    return reply;
  });
  return async () => {
    stop();
    await Promise.allSettled([...underWay]);
  };
}

/** The handler `server` was created with: what it calls for each request. */
export function requestListenerOf(server: Server): RequestListener {
  const [listener] = server.listeners('request');
  if (typeof listener !== 'function') throw new Error('the server has no request listener');
  return listener as RequestListener;
}

/** Requests to `listener` as if sent to `host` (`127.0.0.1:<port>`), without a socket. */
export function inProcessExchange(listener: RequestListener, host: string): InProcessExchange {
  return (req: HttpRequest) =>
    new Promise((resolve, reject) => {
      // The callback form: the promise form adds a deferred start and a copy of the options.
      inject(
        listener,
        {
          method: req.method,
          url: req.path,
          headers: { ...req.headers, host },
          // A Uint8Array that is not a Buffer would be sent as JSON.
          payload:
            req.body === undefined || typeof req.body === 'string'
              ? req.body
              : Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength),
          validate: false,
        },
        (error, reply) => {
          if (error || !reply) reject(error ?? new Error('no reply'));
          else
            resolve({
              status: reply.statusCode,
              headers: reply.headers as IncomingHttpHeaders,
              body: reply.rawPayload,
            });
        },
      );
    });
}
