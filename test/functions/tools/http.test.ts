import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpToolHandler, ToolDefinition } from '../../../engine/model/schema.ts';
import { createToolExecutor, envSecrets, type ToolResult } from '../../../functions/tools/index.ts';

const SECRET = 's3cr3t-token-value/+=';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      if (path === '/slow') return void setTimeout(() => response.end('late'), 2000).unref();
      if (path === '/text') return void response.end('plain text');
      if (path === '/huge') return void response.end('x'.repeat(5000));
      if (path === '/empty') return void response.writeHead(204).end();
      if (path.startsWith('/reflect')) {
        // Reflects the key it got in the query, re-encoded the ways servers do.
        const key = new URL(request.url ?? '/', 'http://x').searchParams.get('key') ?? '';
        const form = new URLSearchParams({ key }).toString();
        const reflected = {
          form,
          lower: form.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()),
          base64: Buffer.from(`u:${key}`).toString('base64'),
        };
        if (path === '/reflect-error') {
          // The key straddles the 500th character, where the error message is cut.
          response.writeHead(500, { 'content-type': 'text/plain' });
          return void response.end(`${'.'.repeat(490)}${form}`);
        }
        response.writeHead(200, { 'content-type': 'application/json' });
        return void response.end(JSON.stringify(reflected));
      }
      if (path === '/missing') {
        response.writeHead(404, { 'content-type': 'application/json' });
        return void response.end(
          JSON.stringify({ error: 'no such customer', auth: request.headers.authorization }),
        );
      }
      // Echoes the request back, Authorization header included, as a careless server might.
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      response.end(
        JSON.stringify({
          method: request.method,
          url: request.url,
          auth: request.headers.authorization ?? null,
          body,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The local test server is on loopback, which a tool may call only when it allows the private network. */
function tool(handler: Omit<HttpToolHandler, 'kind'>): ToolDefinition {
  return { description: 'http', handler: { kind: 'http', allowPrivateNetwork: true, ...handler } };
}

function run(
  definition: ToolDefinition,
  args: unknown,
  options: { signal?: AbortSignal; env?: object } = {},
) {
  const executor = createToolExecutor({
    tools: { t: definition },
    env: { target: 'local', maxOutputBytes: 1000, ...options.env },
    secrets: envSecrets({ CRM_TOKEN: SECRET }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return executor.execute('t', args);
}

function lastSeen(): Seen {
  const last = seen.at(-1);
  if (!last) throw new Error('the server saw no request');
  return last;
}

function failure(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.error;
}

describe('http tools', () => {
  it('POSTs the arguments as JSON by default and returns the JSON response', async () => {
    const result = await run(tool({ url: `${base}/customers` }), { name: 'Ada', tags: ['x'] });
    expect(lastSeen().headers['content-type']).toBe('application/json');
    expect(lastSeen().headers.accept).toBe('application/json');
    expect(result).toEqual({
      ok: true,
      output: { method: 'POST', url: '/customers', auth: null, body: '{"name":"Ada","tags":["x"]}' },
      content: JSON.stringify({
        method: 'POST',
        url: '/customers',
        auth: null,
        body: '{"name":"Ada","tags":["x"]}',
      }),
    });
  });

  it('sends GET arguments as the query string and encodes arguments placed in the url', async () => {
    const definition = tool({ url: `${base}/customers/{{args.id}}?v=1`, method: 'GET' });
    const result = await run(definition, { id: '../admin?x=1', tags: ['a', 'b'], n: 3, skip: null });
    expect(lastSeen().method).toBe('GET');
    expect(lastSeen().body).toBe('');
    expect(lastSeen().url).toBe('/customers/..%2Fadmin%3Fx%3D1?v=1&id=..%2Fadmin%3Fx%3D1&tags=a&tags=b&n=3');
    expect(result.ok).toBe(true);
  });

  it('sends a templated header with the secret to the server but never returns the secret', async () => {
    const definition = tool({
      url: `${base}/echo`,
      method: 'PUT',
      headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}', 'X-Customer': '{{args.id}}' },
    });
    const result = await run(definition, { id: 'c-7' });
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(lastSeen().headers['x-customer']).toBe('c-7');
    expect(result.ok && result.output).toMatchObject({ auth: 'Bearer [REDACTED]', method: 'PUT' });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('keeps the secret out of an HTTP error message too', async () => {
    const definition = tool({
      url: `${base}/missing`,
      headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}' },
    });
    const error = failure(await run(definition, {}));
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(error.code).toBe('TOOL_HTTP_ERROR');
    expect(error.status).toBe(404);
    expect(error.message).toContain(
      'HTTP 404 Not Found: {"error":"no such customer","auth":"Bearer [REDACTED]"}',
    );
    expect(JSON.stringify(error)).not.toContain(SECRET);
  });

  it('keeps a secret used in the url out of a network error message, encoded or not', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const definition = tool({ url: `http://127.0.0.1:${port}/x?key={{secrets.CRM_TOKEN}}` });
    const error = failure(await run(definition, {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toMatch(/the request failed: .*ECONNREFUSED/);
    expect(JSON.stringify(error)).not.toContain(SECRET);
    expect(JSON.stringify(error)).not.toContain(encodeURIComponent(SECRET));
  });

  it('refuses a url whose host is not literal, without quoting a secret', async () => {
    const error = failure(await run(tool({ url: 'http://bad host/{{secrets.CRM_TOKEN}}' }), {}));
    expect(error.code).toBe('INVALID_TOOL_DEFINITION');
    expect(JSON.stringify(error)).not.toContain(SECRET);
  });

  it('redacts a secret the server reflects re-encoded (form, lower-case hex, base64), also where an error is cut', async () => {
    const ok = await run(tool({ url: `${base}/reflect?key={{secrets.CRM_TOKEN}}`, method: 'GET' }), {});
    expect(ok.ok && ok.output).toEqual({
      form: 'key=[REDACTED]',
      lower: 'key=[REDACTED]',
      base64: expect.any(String),
    });
    const error = failure(
      await run(tool({ url: `${base}/reflect-error?key={{secrets.CRM_TOKEN}}`, method: 'GET' }), {}),
    );
    expect(error.code).toBe('TOOL_HTTP_ERROR');
    expect(error.message).toMatch(/key=\[REDAC$/);
    const text = JSON.stringify([ok, error]);
    expect(text).not.toContain('s3cr3t');
    const base64 = ok.ok ? (ok.output as { base64: string }).base64 : '';
    expect(Buffer.from(base64, 'base64').toString('latin1')).not.toContain('token-value');
  });

  it('fails with TOOL_FAILED when a named secret is not set, naming it', async () => {
    const definition = tool({ url: `${base}/echo`, headers: { 'X-Key': '{{secrets.NOPE}}' } });
    const before = seen.length;
    const error = failure(await run(definition, {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain('secret "NOPE" is not set');
    expect(seen.length).toBe(before);
  });

  it('refuses a secret chosen by the arguments', async () => {
    const definition = tool({ url: `${base}/echo`, headers: { 'X-Key': '{{secrets[args.which]}}' } });
    const error = failure(await run(definition, { which: 'CRM_TOKEN' }));
    expect(error.code).toBe('INVALID_TOOL_DEFINITION');
    expect(JSON.stringify(error)).not.toContain(SECRET);
  });

  it('returns a non-JSON response as text and an empty one as null', async () => {
    expect(await run(tool({ url: `${base}/text`, method: 'GET' }), {})).toEqual({
      ok: true,
      output: 'plain text',
      content: 'plain text',
    });
    expect(await run(tool({ url: `${base}/empty`, method: 'DELETE' }), {})).toEqual({
      ok: true,
      output: null,
      content: 'null',
    });
  });

  it('times out with TOOL_TIMEOUT', async () => {
    // /slow answers after 2 s: the coded timeout (not 'late') shows the 100 ms limit ended the call.
    const error = failure(await run(tool({ url: `${base}/slow`, timeoutMs: 100 }), {}));
    expect(error).toEqual({
      code: 'TOOL_TIMEOUT',
      message: 'tool "t" got no complete response within 100 ms',
    });
  });

  it('ends with TOOL_FAILED when the run cancels the call', async () => {
    const controller = new AbortController();
    const pending = run(tool({ url: `${base}/slow` }), {}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect(failure(await pending)).toEqual({
      code: 'TOOL_FAILED',
      message: 'tool "t": the call was cancelled',
    });
  });

  it('refuses a response larger than the output limit', async () => {
    const error = failure(await run(tool({ url: `${base}/huge`, method: 'GET' }), {}));
    expect(error.code).toBe('TOOL_RESPONSE_TOO_LARGE');
    expect(error.message).toContain('larger than 1000 bytes');
  });

  it('refuses a url whose scheme and host come from the arguments', async () => {
    const before = seen.length;
    const error = failure(await run(tool({ url: '{{args.u}}' }), { u: 'file:///etc/passwd' }));
    expect(error.code).toBe('INVALID_TOOL_DEFINITION');
    const steered = failure(await run(tool({ url: 'http://{{args.host}}/x' }), { host: base.slice(7) }));
    expect(steered.code).toBe('INVALID_TOOL_DEFINITION');
    expect(seen.length).toBe(before);
  });

  it('resolves host names with the injected resolver and connects to the address it gave', async () => {
    const port = new URL(base).port;
    const asked: string[] = [];
    const resolveAll = async (hostname: string) => {
      asked.push(hostname);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const result = await run(
      tool({ url: `http://api.example.test:${port}/v1` }),
      {},
      { env: { resolveAll } },
    );
    expect(asked).toEqual(['api.example.test']);
    expect(lastSeen().headers.host).toBe(`api.example.test:${port}`);
    expect(result.ok && result.output).toMatchObject({ url: '/v1' });
  });
});
