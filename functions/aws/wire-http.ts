/**
 * Requests to the embedded emulators, over the wire protocols AWS defines: DynamoDB's JSON 1.0
 * protocol (dynalite) and S3's REST API (s3rver). No SDK: the store server uses these to create its
 * table and bucket without loading one, and the embedded clients (wire-clients.ts) send every store
 * request through them. An emulator in another process is reached on loopback; one serving in this
 * process takes the same HTTP request without a socket (`serveInProcess`).
 */
import { Agent, type IncomingHttpHeaders, request } from 'node:http';

/** A service's refusal, shaped as the SDK's exceptions are where stepthread reads them. */
export class ServiceError extends Error {
  readonly $metadata: { readonly httpStatusCode: number };
  readonly $fault: 'client' | 'server';

  constructor(name: string, message: string, httpStatusCode: number, fields: Record<string, unknown> = {}) {
    super(message);
    this.name = name;
    this.$metadata = { httpStatusCode };
    this.$fault = httpStatusCode >= 500 ? 'server' : 'client';
    Object.assign(this, fields);
  }
}

export interface HttpReply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface HttpRequest {
  readonly method: string;
  /** Path and query, already encoded. */
  readonly path: string;
  readonly headers: Record<string, string | number>;
  readonly body?: string | Uint8Array;
}

/** One keep-alive connection pool per client: loopback connections are cheap, handshakes are not free. */
export function loopbackAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 64 });
}

/** Hands one request to an emulator's HTTP request handler in this process and gives its reply. */
export type InProcessExchange = (req: HttpRequest) => Promise<HttpReply>;

/** Emulators serving in this process, by origin (`http://127.0.0.1:<port>`). */
const inProcess = new Map<string, InProcessExchange>();

/**
 * Sends requests for `origin` to `serve` from now on instead of its socket, until the returned
 * function is called. Through a loopback socket, Node's HTTP client and server (framing, parsing,
 * stream plumbing on both ends) were about a third of a store request's cost in one process.
 */
export function serveInProcess(origin: string, serve: InProcessExchange): () => void {
  const key = new URL(origin).origin;
  inProcess.set(key, serve);
  return () => {
    if (inProcess.get(key) === serve) inProcess.delete(key);
  };
}

/**
 * One HTTP exchange. A request that met a reset on a kept-alive socket is sent once more on a new
 * one: the server had closed that socket while idle, so the request never reached it (Node's advice
 * for keep-alive clients).
 */
export function exchange(endpoint: URL, agent: Agent | false, req: HttpRequest): Promise<HttpReply> {
  const serve = inProcess.get(endpoint.origin);
  if (serve) return serve(req);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: endpoint.hostname,
        port: endpoint.port,
        method: req.method,
        path: req.path,
        agent,
        headers: req.headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (outgoing.reusedSocket && error.code === 'ECONNRESET') {
        exchange(endpoint, agent, req).then(resolve, reject);
      } else {
        reject(error);
      }
    });
    outgoing.end(req.body);
  });
}

// dynalite checks that a request is signed in the right form, not the signature's value.
const DYNAMO_HEADERS = {
  'Content-Type': 'application/x-amz-json-1.0',
  'X-Amz-Date': '20000101T000000Z',
  Authorization:
    'AWS4-HMAC-SHA256 Credential=local/20000101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0',
};

/**
 * A DynamoDB emulator in this process taking an operation's input as the client marshalled it (byte
 * arrays as Uint8Array, members maybe undefined: it reads it as its JSON body would parse, wireForm,
 * and leaves it as it is), and answering with the object its JSON reply would parse to; an error with
 * the reply's status and parsed body. `undefined`: an operation it does not take this way (sent as HTTP).
 */
export type InProcessOperations = (
  operation: string,
  input: Record<string, unknown>,
) => Promise<Record<string, unknown>> | undefined;

/** A refusal from an in-process emulator: what its HTTP reply's status and JSON body would be. */
export class InProcessRefusal extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message ?? body.Message ?? body.__type));
  }
}

/** DynamoDB emulators taking operations as objects in this process, by origin. */
const inProcessOperations = new Map<string, InProcessOperations>();

/**
 * Hands DynamoDB operations for `origin` to `serve` as objects from now on, until the returned
 * function is called: no JSON text, no HTTP request or reply between the client and the emulator.
 */
export function serveOperationsInProcess(origin: string, serve: InProcessOperations): () => void {
  const key = new URL(origin).origin;
  inProcessOperations.set(key, serve);
  return () => {
    if (inProcessOperations.get(key) === serve) inProcessOperations.delete(key);
  };
}

/**
 * `value` as JSON.parse(JSON.stringify(value)) gives it — a fresh copy, undefined members dropped,
 * non-finite numbers null, toJSON honoured — except that byte arrays are base64 strings, as the
 * DynamoDB JSON protocol sends a Blob. What a request's body parses to on the other end.
 */
export function wireForm(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // JSON has no -0.
      return Number.isFinite(value) ? value + 0 : null;
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        const copy = new Array(value.length);
        for (let i = 0; i < value.length; i += 1) copy[i] = wireForm(value[i]) ?? null;
        return copy;
      }
      if (value instanceof Uint8Array)
        return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
      const prototype = Object.getPrototypeOf(value);
      if ((prototype === Object.prototype || prototype === null) && !('toJSON' in value)) {
        const copy: Record<string, unknown> = {};
        for (const key in value) {
          const member = wireForm((value as Record<string, unknown>)[key]);
          if (member !== undefined) copy[key] = member;
        }
        return copy;
      }
      // Anything else (a Date, a Set, a class instance) as JSON renders it.
      const text = JSON.stringify(value);
      return text === undefined ? undefined : JSON.parse(text);
    }
    case 'bigint':
      // JSON refuses one; so does this.
      return JSON.stringify(value);
    default:
      return undefined;
  }
}

/** `value` as a request body's JSON text: JSON.stringify's, byte arrays as base64 (as wireForm gives them). */
export function wireJson(value: unknown): string {
  return JSON.stringify(value, function binaryAsBase64(this: Record<string, unknown>, key, member) {
    // The holder's own member: a Buffer's toJSON has already replaced it in `member`.
    const original = this[key];
    return original instanceof Uint8Array
      ? Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64')
      : member;
  });
}

/** A DynamoDB error reply (its status and parsed body) as the SDK's exception. */
function dynamoError(status: number, parsed: Record<string, unknown>): ServiceError {
  const type = String(parsed.__type ?? `HTTP${status}`);
  const { __type, message, Message, ...fields } = parsed;
  return new ServiceError(
    type.slice(type.lastIndexOf('#') + 1),
    String(message ?? Message ?? type),
    status,
    fields,
  );
}

/**
 * One DynamoDB operation: `input` is its input with attribute values marshalled; an emulator in this
 * process takes it as it is, a socket its wireJson;
 * the answer is the parsed output, or a ServiceError named as the exception DynamoDB names (`__type`).
 */
export async function dynamoOperation(
  endpoint: URL,
  agent: Agent | false,
  operation: string,
  input: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const direct = inProcessOperations.get(endpoint.origin)?.(operation, input);
  if (direct !== undefined) {
    return direct.catch((error: unknown) =>
      Promise.reject(error instanceof InProcessRefusal ? dynamoError(error.status, error.body) : error),
    );
  }
  const body = wireJson(input);
  const reply = await exchange(endpoint, agent, {
    method: 'POST',
    path: '/',
    headers: {
      ...DYNAMO_HEADERS,
      'X-Amz-Target': `DynamoDB_20120810.${operation}`,
      'Content-Length': Buffer.byteLength(body),
    },
    body,
  });
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(reply.body.toString('utf8') || '{}') as Record<string, unknown>;
  } catch {
    parsed = { message: reply.body.toString('utf8') };
  }
  if (reply.status === 200) return parsed;
  return Promise.reject(dynamoError(reply.status, parsed));
}

/** An S3 object or bucket path, path-style: each key segment percent-encoded, its slashes kept. */
export function s3Path(bucket: string, key?: string): string {
  const encodedKey = key === undefined ? '' : `/${key.split('/').map(encodeURIComponent).join('/')}`;
  return `/${encodeURIComponent(bucket)}${encodedKey}`;
}

/**
 * One S3 request; a status of 300 or more is a ServiceError named by the XML error's `Code` (for
 * a HEAD, which has no body, `NotFound` or the status, as the SDK names them).
 */
export async function s3Request(endpoint: URL, agent: Agent | false, req: HttpRequest): Promise<HttpReply> {
  const reply = await exchange(endpoint, agent, req);
  if (reply.status < 300) return reply;
  const text = reply.body.toString('utf8');
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
  const name = code ?? (reply.status === 404 ? 'NotFound' : `HTTP${reply.status}`);
  return Promise.reject(new ServiceError(name, message ?? name, reply.status));
}
