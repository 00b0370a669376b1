/**
 * `http` tools: one JSON request. The url and headers are templates over `args` and `secrets`;
 * values from `args` are URL-encoded in the url, so a model cannot steer the request to another path
 * or host. GET and DELETE send the arguments as the query string, the other methods as a JSON body.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { renderString } from '../../engine/expression/index.ts';
import type { HttpMethod, HttpToolHandler } from '../../engine/model/schema.ts';
import { templateReferences } from '../../engine/validation/tool-rules.ts';
import { describe, ToolFailure } from './failure.ts';
import type { SecretResolver } from './types.ts';

export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
const DEFAULT_METHOD: HttpMethod = 'POST';
const QUERY_METHODS: ReadonlySet<HttpMethod> = new Set(['GET', 'DELETE']);
const ERROR_BODY_CHARS = 500;

export interface HttpCall {
  toolName: string;
  handler: HttpToolHandler;
  args: unknown;
  secrets: SecretResolver | undefined;
  signal: AbortSignal | undefined;
  fetch: typeof globalThis.fetch;
  maxResponseBytes: number;
  /** Receives every secret value as soon as it is resolved, so the caller can redact it from anything. */
  onSecret: (value: string) => void;
}

export async function callHttpTool(call: HttpCall): Promise<unknown> {
  const { toolName, handler, args } = call;
  const secrets = await resolveSecrets(call);
  const url = renderUrl(toolName, handler.url, args, secrets);
  const method = handler.method ?? DEFAULT_METHOD;
  const headers = new Headers({ accept: 'application/json' });
  for (const [name, template] of Object.entries(handler.headers ?? {}))
    headers.set(name, render(toolName, template, { args, secrets }));

  let body: string | undefined;
  if (QUERY_METHODS.has(method)) appendQuery(url, args);
  else if (args !== undefined) {
    body = JSON.stringify(args);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  }

  const timeoutMs = handler.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = call.signal ? AbortSignal.any([timeout, call.signal]) : timeout;
  try {
    const response = await call.fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal,
    });
    const text = await readBody(toolName, response, call.maxResponseBytes);
    if (!response.ok) {
      const detail = text.trim() === '' ? '' : `: ${text.slice(0, ERROR_BODY_CHARS)}`;
      throw new ToolFailure(
        'TOOL_HTTP_ERROR',
        `tool "${toolName}": HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${detail}`,
        { status: response.status },
      );
    }
    return parseBody(response, text);
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

/** Only the secrets the templates name are fetched; see templateReferences. */
async function resolveSecrets(call: HttpCall): Promise<Record<string, string>> {
  const { toolName, handler } = call;
  const names = new Set<string>();
  for (const template of [handler.url, ...Object.values(handler.headers ?? {})]) {
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
    call.onSecret(value);
    Object.defineProperty(values, name, { value, enumerable: true });
  }
  return values;
}

function render(toolName: string, template: string, scope: Record<string, unknown>): string {
  try {
    return renderString(template, scope);
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    throw new ToolFailure('INVALID_TOOL_DEFINITION', `tool "${toolName}": ${error.message}`, {
      cause: error,
    });
  }
}

function renderUrl(toolName: string, template: string, args: unknown, secrets: Record<string, string>): URL {
  const text = render(toolName, template, { args: encodeStrings(args), secrets });
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": "${text}" is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": only http and https URLs can be called`);
  return url;
}

function encodeStrings(value: unknown): unknown {
  if (typeof value === 'string') return encodeURIComponent(value);
  if (Array.isArray(value)) return value.map(encodeStrings);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, encodeStrings(item)]));
  }
  return value;
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

/** The body as text, refusing to buffer more than `maxBytes`. */
async function readBody(toolName: string, response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ToolFailure(
        'TOOL_FAILED',
        `tool "${toolName}": the response is larger than ${maxBytes} bytes`,
      );
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

/** JSON when the server says so and it parses, else the text; an empty body is null. */
function parseBody(response: Response, text: string): unknown {
  if (text === '') return null;
  if (!/\bjson\b/i.test(response.headers.get('content-type') ?? '')) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
