/**
 * The `fetch` an MCP server's Streamable HTTP transport is given: every request goes through the
 * http tools' egress policy (egress.ts: the address connected to is checked, private ranges refused
 * unless `allowPrivateNetwork`), only to the declared origin, and each response body is counted as it
 * streams (decompressed), so a server cannot make the process buffer more than the cap.
 *
 * It never follows a redirect itself: the SDK's transport follows one only within the request's
 * origin (its default `redirectPolicy`), and each hop comes back here, to the origin check.
 */
import type { IncomingMessage } from 'node:http';
import type { EgressPolicy } from './egress.ts';
import { ToolFailure } from './failure.ts';
import { decoded, REDIRECT_STATUSES, sendGuarded } from './http.ts';

export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface GuardedFetchOptions {
  policy: EgressPolicy;
  /** Scheme, host and port the declaration fixes; a request anywhere else is refused. */
  origin: string;
  /** Largest response body, counted as it arrives (decompressed). */
  maxResponseBytes: number;
  /** Told of a coded failure the transport may only see as a broken stream. */
  onFailure: (failure: ToolFailure) => void;
}

function leavesOrigin(location: string | undefined, origin: string): boolean {
  if (location === undefined) return false;
  try {
    return new URL(location, origin).origin !== origin;
  } catch {
    return true;
  }
}

/** Statuses whose responses have no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export function guardedFetch(options: GuardedFetchOptions): FetchLike {
  const { policy, origin } = options;
  return async (input, init = {}) => {
    const url = new URL(input instanceof URL ? input.href : String(input));
    if (url.origin !== origin) {
      // The target is not named: a server could have spelled a secret into its host name.
      const failure = new ToolFailure(
        'TOOL_REDIRECT_REFUSED',
        `tool "${policy.toolName}": the MCP server sent the client to another origin; only ${origin} is called`,
      );
      options.onFailure(failure);
      throw failure;
    }
    try {
      const headers: Record<string, string> = { 'accept-encoding': 'gzip, deflate, br' };
      new Headers(init.headers).forEach((value, name) => {
        headers[name] = value;
      });
      const outgoing = { url, method: init.method ?? 'GET', headers, body: bodyOf(init.body) };
      const response = await sendGuarded(outgoing, policy, init.signal ?? undefined);
      return toResponse(response, options);
    } catch (error) {
      if (error instanceof ToolFailure) options.onFailure(error);
      throw error;
    }
  };
}

/** The transport sends JSON text; anything else is not something it does. */
function bodyOf(body: RequestInit['body']): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  throw new Error('the MCP transport sent a body that is not text');
}

function toResponse(response: IncomingMessage, options: GuardedFetchOptions): Response {
  const status = response.statusCode ?? 0;
  // A redirect that leaves the origin is refused (the transport does not follow it).
  if (REDIRECT_STATUSES.has(status) && leavesOrigin(response.headers.location, options.origin)) {
    // The target is not named: a server could have spelled a secret into its host name.
    options.onFailure(
      new ToolFailure(
        'TOOL_REDIRECT_REFUSED',
        `tool "${options.policy.toolName}": HTTP ${status} from the MCP server redirects to another origin; only redirects within ${options.origin} are followed`,
        { status },
      ),
    );
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    // The body is handed on decompressed, so its encoding and length no longer apply.
    if (value === undefined || name === 'content-encoding' || name === 'content-length') continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const init = { status, statusText: response.statusMessage ?? '', headers };
  if (NULL_BODY.has(status)) {
    response.destroy();
    return new Response(null, init);
  }
  return new Response(cappedBody(response, options), init);
}

/** The body as a web stream that errors with TOOL_RESPONSE_TOO_LARGE once past the cap. */
function cappedBody(response: IncomingMessage, options: GuardedFetchOptions): ReadableStream<Uint8Array> {
  const { maxResponseBytes: maxBytes, policy } = options;
  const declared = Number(response.headers['content-length']);
  const iterator = decoded(response)[Symbol.asyncIterator]();
  let size = 0;
  const tooLarge = (): ToolFailure => {
    response.destroy();
    const failure = new ToolFailure(
      'TOOL_RESPONSE_TOO_LARGE',
      `tool "${policy.toolName}": the MCP server's response is larger than ${maxBytes} bytes`,
    );
    options.onFailure(failure);
    return failure;
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (Number.isFinite(declared) && declared > maxBytes) controller.error(tooLarge());
    },
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done) return controller.close();
        size += next.value.byteLength;
        if (size > maxBytes) return controller.error(tooLarge());
        controller.enqueue(new Uint8Array(next.value));
      } catch (error) {
        controller.error(error);
      }
    },
    cancel() {
      response.destroy();
    },
  });
}
