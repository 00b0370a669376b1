/**
 * http tools under hostile arguments and servers (issue 14, egress): where a request may go, how
 * templated url parts are encoded, redirects, and the address policy checked on the resolved address.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HttpToolHandler, ToolDefinition } from '../../../engine/model/schema.ts';
import type { ResolveAll } from '../../../functions/tools/egress.ts';
import { guardedLookup, isPublicAddress } from '../../../functions/tools/egress.ts';
import { createToolExecutor, envSecrets, type ToolResult } from '../../../functions/tools/index.ts';

const SECRET = 'k3y-9a8b7c';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

interface Local {
  server: Server;
  base: string;
  port: string;
  seen: Seen[];
}

async function startServer(route: (request: IncomingMessage) => Reply): Promise<Local> {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers });
      if (request.url === '/stall') {
        // Headers and the start of a body, then nothing.
        response.writeHead(200, { 'content-type': 'application/json' });
        return void response.write('{"partial":');
      }
      const { status, headers = {}, body = '' } = route(request);
      response.writeHead(status, headers).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String((server.address() as AddressInfo).port);
  return { server, base: `http://127.0.0.1:${port}`, port, seen };
}

let home: Local;
let elsewhere: Local;
beforeAll(async () => {
  elsewhere = await startServer(() => ({ status: 200, body: 'captured' }));
  home = await startServer((request): Reply => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    if (path === '/away') return { status: 302, headers: { location: `${elsewhere.base}/capture` } };
    if (path === '/home') return { status: 302, headers: { location: '/echo?hop=1' } };
    if (path === '/loop') return { status: 307, headers: { location: '/loop' } };
    if (path === '/gzip')
      return {
        status: 200,
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: gzipSync('{"zipped":true}'),
      };
    // 1 MB of zeros in about 1 KB: only the decompressed size counts.
    if (path === '/bomb')
      return {
        status: 200,
        headers: { 'content-encoding': 'gzip' },
        body: gzipSync(Buffer.alloc(1_000_000)),
      };
    if (path === '/bigint')
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: '{"id":12345678901234567891,"safe":9007199254740991,"text":"12345678901234567891"}',
      };
    if (path === '/big')
      return { status: 200, headers: { 'content-length': '100000' }, body: 'x'.repeat(100_000) };
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        method: request.method,
        url: request.url,
        key: request.headers['x-api-key'] ?? null,
      }),
    };
  });
});
afterAll(async () => {
  for (const local of [home, elsewhere]) {
    local.server.closeAllConnections();
    await new Promise((resolve) => local.server.close(resolve));
  }
});
beforeEach(() => {
  home.seen.length = 0;
  elsewhere.seen.length = 0;
});

function tool(handler: Omit<HttpToolHandler, 'kind'>): ToolDefinition {
  return { description: 'http', handler: { kind: 'http', ...handler } };
}

function run(definition: ToolDefinition, args: unknown, resolveAll?: ResolveAll): Promise<ToolResult> {
  return createToolExecutor({
    tools: { t: definition },
    env: { target: 'local', maxOutputBytes: 10_000, ...(resolveAll ? { resolveAll } : {}) },
    secrets: envSecrets({ API_KEY: SECRET }),
  }).execute('t', args);
}

function failure(result: ToolResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.error;
}

describe('the address policy', () => {
  it('classifies loopback, link-local, private, mapped and special ranges as not public', () => {
    for (const address of [
      '127.0.0.1',
      '169.254.169.254',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '2002:7f00:1::1',
      '224.0.0.1',
    ])
      expect(isPublicAddress(address), address).toBe(false);
    for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111'])
      expect(isPublicAddress(address), address).toBe(true);
  });

  it('answers the socket lookup in both of its shapes, with the family asked for', async () => {
    const resolveAll: ResolveAll = async () => [
      { address: '2606:4700:4700::1111', family: 6 },
      { address: '93.184.216.34', family: 4 },
    ];
    const lookup = guardedLookup({ toolName: 't', allowPrivateNetwork: false, resolveAll });
    const one = await new Promise((resolve, reject) =>
      lookup('x.example', { family: 4 }, (error, address, family) =>
        error ? reject(error) : resolve([address, family]),
      ),
    );
    expect(one).toEqual(['93.184.216.34', 4]);
    const all = await new Promise((resolve, reject) =>
      lookup('x.example', { all: true } as never, (error, addresses) =>
        error ? reject(error) : resolve(addresses),
      ),
    );
    expect(all).toEqual(await resolveAll('x.example'));
  });

  it('refuses loopback, metadata, private and IPv4-mapped hosts with TOOL_EGRESS_DENIED, before connecting', async () => {
    for (const url of [
      `${home.base}/echo`,
      `http://localhost:${home.port}/echo`,
      `http://[::1]:${home.port}/echo`,
      `http://[::ffff:127.0.0.1]:${home.port}/echo`,
      `http://0x7f.1:${home.port}/echo`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://[fd00::1]/',
    ]) {
      const error = failure(await run(tool({ url, method: 'GET', timeoutMs: 2000 }), {}));
      expect(error.code, url).toBe('TOOL_EGRESS_DENIED');
      expect(error.message, url).toContain('allowPrivateNetwork');
    }
    expect(home.seen).toEqual([]);
  });

  it('calls a private address when the tool allows the private network', async () => {
    const result = await run(
      tool({ url: `http://localhost:${home.port}/echo`, method: 'GET', allowPrivateNetwork: true }),
      {},
    );
    expect(result.ok).toBe(true);
    expect(home.seen).toHaveLength(1);
  });

  it('checks the resolved address and connects to the address it checked (DNS rebinding)', async () => {
    const url = `http://rebind.example:${home.port}/echo`;
    // A name that resolves to loopback, or to a public and a loopback address, is refused whole.
    for (const answer of [['127.0.0.1'], ['93.184.216.34', '127.0.0.1'], ['::ffff:7f00:1']]) {
      const asked: string[] = [];
      const resolveAll: ResolveAll = async (hostname) => {
        asked.push(hostname);
        return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
      };
      const error = failure(await run(tool({ url, method: 'GET' }), {}, resolveAll));
      expect(error.code, answer.join()).toBe('TOOL_EGRESS_DENIED');
      expect(asked).toEqual(['rebind.example']);
    }
    // A rebinding name: public when first asked, loopback afterwards. It is asked once, and the
    // connection goes to the public address that passed, never to the loopback server.
    const answers = ['93.184.216.34', '127.0.0.1'];
    let calls = 0;
    const rebinding: ResolveAll = async () => [{ address: answers[Math.min(calls++, 1)]!, family: 4 }];
    const result = await run(tool({ url, method: 'GET', timeoutMs: 500 }), {}, rebinding);
    expect(result.ok).toBe(false);
    expect(calls).toBe(1);
    expect(home.seen).toEqual([]);
  });
});

describe('templated url parts', () => {
  it('encodes each one as one component: slashes, ?, #, & and object keys stay inside it', async () => {
    const definition = tool({
      url: `${home.base}/files/{{args.name}}?q={{args.q}}&o={{args.o}}`,
      allowPrivateNetwork: true,
    });
    const args = { name: 'a/b?c#d', q: 'x&y=z#w', o: { '../capture?stolen=': 'v' } };
    const result = await run(definition, args);
    expect(result.ok).toBe(true);
    expect(home.seen.map((s) => s.url)).toEqual([
      '/files/a%2Fb%3Fc%23d?q=x%26y%3Dz%23w&o=%7B%22..%2Fcapture%3Fstolen%3D%22%3A%22v%22%7D',
    ]);
  });

  it('refuses "." and ".." as a path segment instead of letting them climb', async () => {
    const definition = tool({ url: `${home.base}/tool/echo/{{args.id}}`, allowPrivateNetwork: true });
    // A backslash is a separator to some servers: `..\\..` climbs there (issue 31 item 7).
    for (const id of ['..', '.', '..\\..', 'a\\..', '..\\', '.\\x']) {
      const error = failure(await run(definition, { id }));
      expect(error.code, id).toBe('TOOL_ARGUMENTS_INVALID');
    }
    // Encoded dots are sent as literal text, one segment.
    expect((await run(definition, { id: '%2e%2e' })).ok).toBe(true);
    expect(home.seen.map((s) => s.url)).toEqual(['/tool/echo/%252e%252e']);
  });

  it('encodes a secret placed in the url too', async () => {
    const definition = tool({
      url: `${home.base}/echo?key={{secrets.API_KEY}}&x=1`,
      method: 'GET',
      allowPrivateNetwork: true,
    });
    expect((await run(definition, {})).ok).toBe(true);
    expect(home.seen[0]?.url).toBe(`/echo?key=${SECRET}&x=1`);
  });
});

describe('redirects', () => {
  const headers = { 'X-Api-Key': '{{secrets.API_KEY}}' };

  it('never follows a redirect to another origin, so a secret header stays home', async () => {
    const error = failure(
      await run(tool({ url: `${home.base}/away`, headers, allowPrivateNetwork: true }), {}),
    );
    expect(error.code).toBe('TOOL_REDIRECT_REFUSED');
    expect(error.status).toBe(302);
    expect(error.message).toBe(
      `tool "t": HTTP 302 redirects to another origin; only redirects within ${home.base} are followed`,
    );
    expect(elsewhere.seen).toEqual([]);
  });

  it('follows a redirect within the declared origin (a POST continues as a GET)', async () => {
    const result = await run(tool({ url: `${home.base}/home`, headers, allowPrivateNetwork: true }), {
      a: 1,
    });
    expect(result.ok && result.output).toEqual({ method: 'GET', url: '/echo?hop=1', key: '[REDACTED]' });
    expect(home.seen.map((s) => [s.method, s.url, s.headers['x-api-key']])).toEqual([
      ['POST', '/home', SECRET],
      ['GET', '/echo?hop=1', SECRET],
    ]);
  });

  it('stops after 5 redirects', async () => {
    const error = failure(await run(tool({ url: `${home.base}/loop`, allowPrivateNetwork: true }), {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain('more than 5 redirects');
    expect(home.seen).toHaveLength(6);
  });
});

describe('response size', () => {
  it('refuses a body over the cap with TOOL_RESPONSE_TOO_LARGE', async () => {
    const error = failure(
      await run(tool({ url: `${home.base}/big`, method: 'GET', allowPrivateNetwork: true }), {}),
    );
    expect(error).toEqual({
      code: 'TOOL_RESPONSE_TOO_LARGE',
      message: 'tool "t": the response is larger than 10000 bytes',
    });
  });
});

describe('response bodies', () => {
  it('decompresses a gzip body, and caps a compressed body by its decompressed size', async () => {
    const local = (path: string) =>
      tool({ url: `${home.base}${path}`, method: 'GET', allowPrivateNetwork: true });
    expect(await run(local('/gzip'), {})).toEqual({
      ok: true,
      output: { zipped: true },
      content: '{"zipped":true}',
    });
    expect(failure(await run(local('/bomb'), {})).code).toBe('TOOL_RESPONSE_TOO_LARGE');
  });

  it('refuses a JSON integer a number cannot hold exactly instead of rounding it', async () => {
    const error = failure(
      await run(tool({ url: `${home.base}/bigint`, method: 'GET', allowPrivateNetwork: true }), {}),
    );
    expect(error.code).toBe('TOOL_RESPONSE_NUMBER_INEXACT');
    expect(error.message).toContain('12345678901234567891');
  });

  it('times out a body that stops halfway', async () => {
    const definition = tool({
      url: `${home.base}/stall`,
      method: 'GET',
      timeoutMs: 200,
      allowPrivateNetwork: true,
    });
    expect(failure(await run(definition, {}))).toEqual({
      code: 'TOOL_TIMEOUT',
      message: 'tool "t" got no complete response within 200 ms',
    });
  });
});

describe('the Host header', () => {
  it('may not be templated: it would pick another site at the same address', async () => {
    const definition = tool({
      url: `${home.base}/echo`,
      headers: { Host: '{{args.site}}' },
      allowPrivateNetwork: true,
    });
    expect(failure(await run(definition, { site: 'internal.admin' })).code).toBe('INVALID_TOOL_DEFINITION');
    expect(home.seen).toEqual([]);
  });
});
