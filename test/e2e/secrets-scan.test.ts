/**
 * Secrets never reach stored or printed data (issue 14, item 2), end to end through the CLI on the
 * embedded runtime. An http tool sends a secret in its url and a header to a server that reflects it
 * back re-encoded (form-encoded, lower-case hex, JSON-escaped, base64), in a success and in an
 * error; the openai provider's key goes to a model server that echoes the request headers in its
 * successful replies, tool-call arguments included; a CODE node then prints all it can read.
 * Afterwards every DynamoDB item, every S3 object, `inspect --json` and `inspect`, and the CLI's
 * stdout and stderr (where the embedded runtime's logs and CODE output go) are scanned for every
 * encoding of both secrets. The CRM also writes the key back as other languages' encoders do (issue 31
 * item 5: Python's, Go's and PHP's percent escapes of `!*'()~`, hex in mixed case, HTML entities,
 * `\u0026`-style escapes inside text, base64 wrapped over lines), each of which must be redacted too.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, createS3Client, releaseAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { cliProcess, type ProcessResult } from '../support/cli-process.ts';
// For its one setting: the SDK's Node version warning off, here and in the CLI processes.
import './helpers.ts';

/** Spaces, a slash, an equals sign, quotes, a plus, `!*'()~` and `&<>`: each changes under some encoding. */
const TOOL_SECRET = `abc /="SECRET789" x+y!*'()~&<>`;
const MODEL_KEY = 'sk-echo-4f9/Zq+Kv=KEY123';

/** How servers in other languages write a value back (none of them encodeURIComponent's forms). */
function otherEncodings(secret: string): Record<string, string> {
  const bytes = [...Buffer.from(secret, 'utf8')];
  const hex = (byte: number) => byte.toString(16).toUpperCase().padStart(2, '0');
  const percent = (keep: RegExp, plus: boolean) =>
    bytes
      .map((byte) => {
        const ch = String.fromCharCode(byte);
        if (plus && ch === ' ') return '+';
        return keep.test(ch) ? ch : `%${hex(byte)}`;
      })
      .join('');
  const entities: Record<string, string> = {
    '&': '&amp;',
    '<': '&lt;',
    '>': '&gt;',
    '"': '&quot;',
    "'": '&#39;',
  };
  const basic = Buffer.from(`user:${secret}`).toString('base64');
  return {
    python: percent(/[A-Za-z0-9_.~-]/, false),
    go: percent(/[A-Za-z0-9_.~-]/, true),
    php: percent(/[A-Za-z0-9_.-]/, true),
    mixedCase: bytes.map((byte, i) => `%${i % 2 ? hex(byte).toLowerCase() : hex(byte)}`).join(''),
    html: [...secret].map((ch) => entities[ch] ?? ch).join(''),
    htmlNumeric: [...secret]
      .map((ch) => (/[A-Za-z0-9]/.test(ch) ? ch : `&#x${ch.charCodeAt(0).toString(16)};`))
      .join(''),
    unicodeEscapes: [...secret]
      .map((ch) =>
        /[A-Za-z0-9]/.test(ch) ? ch : `\\u${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`,
      )
      .join(''),
    wrappedBase64: basic.replace(/(.{12})/g, '$1\r\n'),
  };
}

/** Every form in which a secret could be written back, as a scanner would look for it. */
function forms(secret: string): Record<string, string> {
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  const lower = (text: string) => text.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase());
  const others = Object.entries(otherEncodings(secret));
  return {
    // Each as written, and as stored inside JSON text.
    ...Object.fromEntries(others),
    ...Object.fromEntries(others.map(([name, text]) => [`${name}InJson`, JSON.stringify(text).slice(1, -1)])),
    raw: secret,
    component: encodeURIComponent(secret),
    componentLower: lower(encodeURIComponent(secret)),
    form,
    formLower: lower(form),
    json: JSON.stringify(secret).slice(1, -1),
    jsonTwice: JSON.stringify(JSON.stringify(secret)).slice(1, -1),
    base64: Buffer.from(secret).toString('base64'),
    base64url: Buffer.from(secret).toString('base64url'),
    // The part of base64 that the secret alone decides, at each offset inside a longer value.
    ...Object.fromEntries(
      [1, 2].map((offset) => {
        const encoded = Buffer.from(`${'.'.repeat(offset)}${secret}`).toString('base64');
        return [`base64at${offset}`, encoded.slice(4, 4 * Math.floor((offset + secret.length) / 3))];
      }),
    ),
  };
}

const SCANNED = [...Object.entries(forms(TOOL_SECRET)), ...Object.entries(forms(MODEL_KEY))];

function leaks(where: string, text: string): string[] {
  return SCANNED.filter(([, form]) => text.includes(form)).map(([name]) => `${where}: ${name}`);
}

function reflect(secret: string): Record<string, string> {
  const form = new URLSearchParams({ key: secret }).toString();
  return {
    raw: secret,
    form,
    lower: form.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()),
    base64: Buffer.from(`user:${secret}`).toString('base64'),
    // Inside text, as a page or a log line would carry it.
    ...Object.fromEntries(
      Object.entries(otherEncodings(secret)).map(([name, text]) => [name, `key=${text}; more`]),
    ),
  };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function bodyOf(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on('end', () => resolve(text));
  });
}

/** The CRM: reflects the key from the query and the header, re-encoded; /fail does it in a 500. */
const crm = createServer(async (request, response) => {
  await bodyOf(request);
  const url = new URL(request.url ?? '/', 'http://x');
  const key = url.searchParams.get('key') ?? '';
  const reflected = {
    query: reflect(key),
    header: reflect(String(request.headers['x-api-key'] ?? '')),
    url: request.url,
  };
  if (url.pathname === '/fail') {
    response.writeHead(500, { 'content-type': 'application/json' });
    return void response.end(JSON.stringify({ error: 'denied', ...reflected }));
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ order: 'A-17', ...reflected }));
});

/** A chat-completions server that echoes the request headers in every (successful) reply. */
let modelCalls = 0;
const model = createServer(async (request, response) => {
  await bodyOf(request);
  const auth = String(request.headers.authorization ?? '');
  const echo = `headers ${JSON.stringify(request.headers)}; basic ${Buffer.from(`u:${auth}`).toString('base64')}; url ${encodeURIComponent(auth)}`;
  const first = modelCalls++ % 2 === 0;
  const message = first
    ? {
        role: 'assistant',
        content: echo,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'lookup', arguments: JSON.stringify({ note: auth }) },
          },
          { id: 'c2', type: 'function', function: { name: 'broken', arguments: '{}' } },
        ],
      }
    : { role: 'assistant', content: `done; ${echo}` };
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      id: 'chatcmpl-echo',
      object: 'chat.completion',
      created: 1,
      model: 'echo',
      choices: [{ index: 0, message, finish_reason: first ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }),
  );
});

let dir: string;
let crmUrl: string;
let modelUrl: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-secrets-'));
  [crmUrl, modelUrl] = await Promise.all([listen(crm), listen(model)]);
});
afterAll(async () => {
  for (const server of [crm, model]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await rm(dir, { recursive: true, force: true });
});

function workflow(id: string, toolName: 'lookup' | 'broken') {
  const http = (path: string) => ({
    kind: 'http',
    url: `${crmUrl}${path}?key={{secrets.CRM_KEY}}`,
    method: 'GET',
    headers: { 'X-Api-Key': '{{secrets.CRM_KEY}}' },
    // The CRM stand-in listens on loopback.
    allowPrivateNetwork: true,
  });
  return {
    id,
    version: 1,
    variables: [{ name: 'reply', type: 'string' }],
    profiles: {
      default: { provider: 'openai', model: 'echo', baseUrl: `${modelUrl}/v1`, apiKeyEnv: 'MODEL_KEY' },
    },
    tools: {
      lookup: { description: 'Looks an order up', parameters: { type: 'object' }, handler: http('/lookup') },
      broken: { description: 'Always fails', parameters: { type: 'object' }, handler: http('/fail') },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'agent',
        type: 'LLM',
        config: { prompt: 'Order {{input.order}}?', tools: ['lookup', 'broken'], outputVariable: 'reply' },
      },
      { id: 'fetch', type: 'TOOL', config: { toolName, arguments: { order: '{{input.order}}' } } },
      // Prints all it can read (the reply and the tool's result among it): its console output is
      // stored and printed too, so the scan covers it.
      {
        id: 'echo',
        type: 'CODE',
        config: { code: 'console.log(JSON.stringify(input)); return 1', inputs: { fetched: 'nodes.fetch' } },
      },
      { id: 'end', type: 'END', config: { output: { reply: '{{reply}}', fetched: '{{nodes.fetch}}' } } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'fetch' },
      { from: 'fetch', to: 'echo' },
      { from: 'echo', to: 'end' },
    ],
  };
}

/** The real CLI in a child process (async: the servers answer from this process). */
const cli = (...args: string[]) =>
  cliProcess([...args, '--data-dir', join(dir, 'data')], {
    cwd: dir,
    env: { CRM_KEY: TOOL_SECRET, MODEL_KEY },
  });

describe('secrets in stored and printed data', () => {
  it('appear in no DynamoDB item, S3 object, inspect report, stdout or stderr, in any encoding', async () => {
    const found: string[] = [];
    const printed: ProcessResult[] = [];
    const threads: string[] = [];
    for (const [id, toolName] of [
      ['secrets-ok', 'lookup'],
      ['secrets-fail', 'broken'],
    ] as const) {
      const file = join(dir, `${id}.json`);
      await writeFile(file, JSON.stringify(workflow(id, toolName)));
      const run = await cli('run', file, '--input', '{"order": "A-17"}', '--json');
      printed.push(run);
      const { threadId, status } = JSON.parse(run.stdout) as { threadId: string; status: string };
      expect(status, run.stderr).toBe(toolName === 'lookup' ? 'COMPLETED' : 'FAILED');
      threads.push(threadId);
      printed.push(await cli('run', file, '--input', '{"order": "A-17"}'));
    }
    // The CODE node ran and printed what it read (where the tool succeeded), on stderr and in inspect.
    expect(printed.some((run) => run.stderr.includes('    echo │ {'))).toBe(true);
    for (const threadId of threads) {
      const report = await cli('inspect', threadId, '--json');
      expect(report.code).toBe(0);
      printed.push(report, await cli('inspect', threadId));
    }

    // The secrets did go out, and came back in every form the test scans for.
    expect(modelCalls).toBeGreaterThanOrEqual(4);
    const [okRun, , failRun] = printed;
    expect(okRun?.stdout).toContain('[REDACTED]');
    expect(failRun?.stdout).toContain('TOOL_HTTP_ERROR');

    for (const [n, { stdout, stderr }] of printed.entries()) {
      found.push(...leaks(`cli ${n} stdout`, stdout), ...leaks(`cli ${n} stderr`, stderr));
    }

    // A client of the directory's store server, as every command is (functions/local/data-dir-server.ts).
    const services = await openDataDir(join(dir, 'data'), { create: false });
    try {
      const clients = createAwsClients(services.target, services.names);
      let items = 0;
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await clients.dynamo.send(
          new ScanCommand({ TableName: services.names.tableName, ExclusiveStartKey: startKey }),
        );
        for (const item of page.Items ?? []) {
          items++;
          found.push(...leaks(`item ${JSON.stringify([item.pk, item.sk])}`, JSON.stringify(item)));
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      let objects = 0;
      let token: string | undefined;
      // The stores never list objects, so their (wire) client does not either: the SDK's lists.
      const lister = createS3Client(services.target);
      do {
        const page = await lister.send(
          new ListObjectsV2Command({ Bucket: services.names.bucketName, ContinuationToken: token }),
        );
        for (const { Key } of page.Contents ?? []) {
          const object = await clients.s3.send(
            new GetObjectCommand({ Bucket: services.names.bucketName, Key }),
          );
          objects++;
          found.push(...leaks(`object ${Key}`, await object.Body!.transformToString()));
        }
        token = page.NextContinuationToken;
      } while (token);
      expect(items).toBeGreaterThan(10);
      expect(objects).toBeGreaterThan(2);
      releaseAwsClients(services.target);
    } finally {
      await services.close();
    }
    expect(found).toEqual([]);
  }, 120_000);
});
