/**
 * `http` tools: one JSON request. The url's scheme, host and port are the declaration's literal
 * text; each `{{ }}` in its path or query is URL-encoded as one component (`/`, `?`, `#`, `..`,
 * object keys and all), so neither a model's arguments nor a secret can steer the request to
 * another host or path. GET and DELETE send the arguments as the query string, the others as a JSON
 * body. The address connected to passes the egress policy (egress.ts); redirects are followed only
 * within the declared origin, and the response body is capped.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { StepthreadError } from '../../engine/errors.ts';
import { renderString } from '../../engine/expression/index.ts';
import { hasTemplate, splitTemplate } from '../../engine/expression/template-syntax.ts';
import { inexactNumberIn } from '../../engine/model/json-values.ts';
import type { HttpMethod, HttpToolHandler } from '../../engine/model/schema.ts';
import { httpUrlOrigin, templateReferences } from '../../engine/validation/tool-rules.ts';
import type { Redactor } from '../redaction/redactor.ts';
import { checkLiteralHost, type EgressPolicy, guardedLookup, type ResolveAll } from './egress.ts';
import { describe, ToolFailure } from './failure.ts';
import type { SecretResolver } from './types.ts';

export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
const DEFAULT_METHOD: HttpMethod = 'POST';
const QUERY_METHODS: ReadonlySet<HttpMethod> = new Set(['GET', 'DELETE']);
const ERROR_BODY_CHARS = 500;
export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
export const MAX_REDIRECTS = 5;

export interface HttpCall {
  toolName: string;
  handler: HttpToolHandler;
  args: unknown;
  secrets: SecretResolver | undefined;
  signal: AbortSignal | undefined;
  /** Resolves host names (all addresses); the egress policy checks what it returns. */
  resolveAll: ResolveAll;
  maxResponseBytes: number;
  /** Gets every secret as soon as it is resolved, and redacts error text before it is cut short. */
  redactor: Redactor;
}

interface Outgoing extends GuardedRequest {
  method: HttpMethod;
  headers: Record<string, string>;
}

export async function callHttpTool(call: HttpCall): Promise<unknown> {
  const { toolName, handler, args } = call;
  const secrets = await resolveSecrets(call);
  const { url, origin } = renderUrl(toolName, handler.url, args, secrets);
  const method = handler.method ?? DEFAULT_METHOD;
  const headers: Record<string, string> = {
    accept: 'application/json',
    'accept-encoding': 'gzip, deflate, br',
  };
  for (const [name, template] of Object.entries(handler.headers ?? {})) {
    if (name.toLowerCase() === 'host' && hasTemplate(template))
      throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${toolName}": the Host header must be literal`);
    headers[name.toLowerCase()] = render(toolName, template, { args, secrets });
  }

  let body: string | undefined;
  if (QUERY_METHODS.has(method)) appendQuery(url, args);
  else if (args !== undefined) {
    body = JSON.stringify(args);
    headers['content-type'] ??= 'application/json';
  }

  const policy: EgressPolicy = {
    toolName,
    allowPrivateNetwork: handler.allowPrivateNetwork === true,
    resolveAll: call.resolveAll,
  };
  const timeoutMs = handler.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = call.signal ? AbortSignal.any([timeout, call.signal]) : timeout;
  try {
    const response = await follow(toolName, origin, { url, method, headers, body }, policy, signal);
    const text = await readBody(toolName, response, call.maxResponseBytes);
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const safe = call.redactor.text(text).trim();
      const detail = safe === '' ? '' : `: ${safe.slice(0, ERROR_BODY_CHARS)}`;
      throw new ToolFailure(
        'TOOL_HTTP_ERROR',
        `tool "${toolName}": HTTP ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}${detail}`,
        { status },
      );
    }
    return parseBody(toolName, response.headers, text);
  } catch (error) {
    if (error instanceof StepthreadError) throw error;
    if (timeout.aborted) {
      throw new ToolFailure(
        'TOOL_TIMEOUT',
        `tool "${toolName}" got no complete response within ${timeoutMs} ms`,
      );
    }
    if (call.signal?.aborted)
      throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": the call was cancelled`);
    throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": the request failed: ${describe(error)}`, {
      cause: error,
    });
  }
}

/**
 * Sends the request, following redirects that stay within the declared origin (each hop under the
 * same egress policy). A redirect elsewhere is refused: the declared headers may carry secrets, and
 * the target was chosen by the server, not by the declaration.
 */
async function follow(
  toolName: string,
  origin: string,
  first: Outgoing,
  policy: EgressPolicy,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  let outgoing = first;
  for (let hop = 0; ; hop++) {
    const response = await sendGuarded(outgoing, policy, signal);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (!REDIRECT_STATUSES.has(status) || location === undefined) return response;
    response.destroy();
    if (hop === MAX_REDIRECTS)
      throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": more than ${MAX_REDIRECTS} redirects`);
    let next: URL;
    try {
      next = new URL(location, outgoing.url);
    } catch {
      throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": HTTP ${status} with an invalid Location`);
    }
    if (next.origin !== origin) {
      throw new ToolFailure(
        'TOOL_REDIRECT_REFUSED',
        // The target is not named: a server could have spelled a secret into its host name.
        `tool "${toolName}": HTTP ${status} redirects to another origin; only redirects within ${origin} are followed`,
        { status },
      );
    }
    // As browsers do: 303, and 301/302 after a POST, continue as a GET without the body.
    const toGet = status === 303 || ((status === 301 || status === 302) && outgoing.method === 'POST');
    if (toGet) {
      const { 'content-type': _dropped, ...headers } = outgoing.headers;
      outgoing = { url: next, method: 'GET', headers, body: undefined };
    } else outgoing = { ...outgoing, url: next };
  }
}

/** One request as the egress policy allows it (an http tool's, an MCP server's): no redirect followed. */
export interface GuardedRequest {
  url: URL;
  method: string;
  headers: Readonly<Record<string, string>>;
  body: string | undefined;
}

/** Sends `outgoing` through the egress policy: its literal host and every address it resolves to are checked. */
export function sendGuarded(
  outgoing: GuardedRequest,
  policy: EgressPolicy,
  signal: AbortSignal | undefined,
): Promise<IncomingMessage> {
  const { url, method, body } = outgoing;
  checkLiteralHost(policy, url.hostname);
  const headers: OutgoingHttpHeaders = { ...outgoing.headers };
  if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // No shared agent: a pooled socket would skip the lookup, and with it the egress check.
    const outgoingRequest = request(
      url,
      { method, headers, agent: false, lookup: guardedLookup(policy), ...(signal ? { signal } : {}) },
      resolve,
    );
    outgoingRequest.on('error', reject);
    outgoingRequest.end(body);
  });
}

async function resolveSecrets(call: HttpCall): Promise<Record<string, string>> {
  const { handler } = call;
  return resolveTemplateSecrets(call, [handler.url, ...Object.values(handler.headers ?? {})]);
}

/** Only the secrets the templates name are fetched; see templateReferences. */
export async function resolveTemplateSecrets(
  call: Pick<HttpCall, 'toolName' | 'secrets' | 'signal' | 'redactor'>,
  templates: readonly string[],
): Promise<Record<string, string>> {
  const { toolName } = call;
  const names = new Set<string>();
  for (const template of templates) {
    const references = templateReferences(template);
    const [problem] = references.problems;
    if (problem !== undefined)
      throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${toolName}": ${problem}`);
    for (const name of references.secrets) names.add(name);
  }
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = call.secrets ? await call.secrets.resolve(name, call.signal) : undefined;
    if (value === undefined) {
      throw new ToolFailure(
        'TOOL_FAILED',
        `tool "${toolName}": secret "${name}" is not set (an environment variable locally, a Secrets Manager secret on AWS)`,
      );
    }
    call.redactor.add(value);
    Object.defineProperty(values, name, { value, enumerable: true });
  }
  return values;
}

export function render(toolName: string, template: string, scope: Record<string, unknown>): string {
  try {
    return renderString(template, scope);
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${toolName}": ${error.message}`, {
      cause: error,
    });
  }
}

/**
 * The url: the declared origin, then the path and query with each template's value encoded as one
 * URL component. A path segment that is only dots would climb (`..`) or vanish (`.`) however it is
 * encoded (URL parsers and servers decode `%2E`), so such a value is refused; a backslash counts as a
 * separator, as some servers read it.
 */
export function renderUrl(
  toolName: string,
  template: string,
  args: unknown,
  secrets: Record<string, string>,
): { url: URL; origin: string } {
  const parts = httpUrlOrigin(template);
  let origin: string;
  try {
    if (!parts.ok) throw new Error(parts.message);
    origin = new URL(parts.origin).origin;
  } catch (error) {
    throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${toolName}": ${describe(error)}`);
  }
  let rest = '';
  for (const segment of splitTemplate(parts.rest)) {
    rest +=
      segment.kind === 'text'
        ? segment.text
        : encodeURIComponent(render(toolName, `{{${segment.source}}}`, { args, secrets }));
  }
  const path = rest.split(/[?#]/, 1)[0] ?? '';
  // Some servers (IIS, and frameworks normalising Windows paths) take `\` as `/`, so a backslash,
  // literal or encoded, also ends a segment here.
  if (path.split(/\/|\\|%5c/i).some((part) => /^(?:\.|%2e){1,2}$/i.test(part))) {
    throw new ToolFailure(
      'TOOL_ARGUMENTS_INVALID',
      `tool "${toolName}": a url path segment may not be "." or ".." (it would leave its place in the path; "\\" counts as "/")`,
    );
  }
  const url = new URL(`${origin}${rest}`);
  if (url.origin !== origin) throw new Error(`the url of tool "${toolName}" left its origin`);
  return { url, origin };
}

/** Top-level arguments as query parameters: arrays repeat the key, objects are sent as JSON. */
function appendQuery(url: URL, args: unknown): void {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return;
  for (const [key, value] of Object.entries(args)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === undefined || item === null) continue;
      url.searchParams.append(key, typeof item === 'object' ? JSON.stringify(item) : String(item));
    }
  }
}

/**
 * The body as text, refusing to buffer more than `maxBytes` (TOOL_RESPONSE_TOO_LARGE). A compressed
 * body is counted as it decompresses, so a small gzip bomb is stopped at the cap too.
 */
async function readBody(toolName: string, response: IncomingMessage, maxBytes: number): Promise<string> {
  const tooLarge = () => {
    response.destroy();
    return new ToolFailure(
      'TOOL_RESPONSE_TOO_LARGE',
      `tool "${toolName}": the response is larger than ${maxBytes} bytes`,
    );
  };
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of decoded(response)) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

export function decoded(response: IncomingMessage): AsyncIterable<Buffer> {
  const encoding = String(response.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) return response;
  response.on('error', (error) => decoder.destroy(error));
  return response.pipe(decoder);
}

/**
 * JSON when the server says so and it parses, else the text; an empty body is null. An integer JSON
 * cannot hold exactly (a 64-bit id) is refused rather than silently rounded into the run's data.
 */
function parseBody(toolName: string, headers: IncomingHttpHeaders, text: string): unknown {
  if (text === '') return null;
  if (!/\bjson\b/i.test(headers['content-type'] ?? '')) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  const inexact = inexactNumberIn(text);
  if (inexact !== undefined) {
    throw new ToolFailure(
      'TOOL_RESPONSE_NUMBER_INEXACT',
      `tool "${toolName}": the response holds the number ${inexact.slice(0, 40)}, which a JSON number cannot hold exactly; have the server send it as a string`,
    );
  }
  return parsed;
}
