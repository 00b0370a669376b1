/**
 * MCP tools through the CLI (bin/stepthread.js in its own process, the embedded runtime): a server's
 * secret header is sent and stored nowhere (data directory, inspect, stdout and stderr); a stdio
 * server runs with `run`; `validate` warns that a stdio server cannot be deployed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, createS3Client, releaseAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { cliProcess, type ProcessResult } from '../support/cli-process.ts';
import { type McpTestServer, startMcpServer } from '../support/mcp-server.ts';
// For its one setting: the SDK's Node version warning off, here and in the CLI processes.
import './helpers.ts';

const TOKEN = 'mcp-tok/="SECRET42" x+y';
const FORMS = [
  TOKEN,
  encodeURIComponent(TOKEN),
  JSON.stringify(TOKEN).slice(1, -1),
  JSON.stringify(JSON.stringify(TOKEN)).slice(1, -1),
  Buffer.from(TOKEN).toString('base64'),
];
const STDIO_SERVER = join(
  import.meta.dirname,
  '..',
  'functions',
  'tools',
  'fixtures',
  'mcp-stdio-server.mjs',
);

let dir: string;
let server: McpTestServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-mcp-cli-'));
  server = await startMcpServer();
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) =>
  cliProcess([...args, '--data-dir', join(dir, 'data')], { cwd: dir, env: { MCP_TOKEN: TOKEN } });

function whoamiWorkflow(id: string, handler: Record<string, unknown>) {
  return {
    id,
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: { agent: [{ toolCalls: [{ name: 'who', arguments: {} }] }, 'Told.'] },
      },
    },
    tools: { who: { handler: { kind: 'mcp', tool: 'whoami', ...handler } } },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'ask', type: 'TOOL', config: { toolName: 'who' } },
      { id: 'agent', type: 'LLM', config: { prompt: 'Who am I?', tools: ['who'] } },
      { id: 'end', type: 'END', config: { output: { ask: '{{nodes.ask}}', agent: '{{nodes.agent}}' } } },
    ],
    edges: [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
  };
}

function leaks(where: string, text: string): string[] {
  return FORMS.filter((form) => text.includes(form)).map((form) => `${where}: ${form}`);
}

/** Every DynamoDB item and S3 object of the data directory, as text. */
async function storedTexts(): Promise<Array<[string, string]>> {
  const services = await openDataDir(join(dir, 'data'), { create: false });
  const texts: Array<[string, string]> = [];
  try {
    const clients = createAwsClients(services.target, services.names);
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await clients.dynamo.send(
        new ScanCommand({ TableName: services.names.tableName, ExclusiveStartKey: startKey }),
      );
      for (const item of page.Items ?? []) texts.push([`item ${item.pk} ${item.sk}`, JSON.stringify(item)]);
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    const lister = createS3Client(services.target);
    let token: string | undefined;
    do {
      const page = await lister.send(
        new ListObjectsV2Command({ Bucket: services.names.bucketName, ContinuationToken: token }),
      );
      for (const { Key } of page.Contents ?? []) {
        const object = await clients.s3.send(
          new GetObjectCommand({ Bucket: services.names.bucketName, Key }),
        );
        texts.push([`object ${Key}`, await object.Body!.transformToString()]);
      }
      token = page.NextContinuationToken;
    } while (token);
    releaseAwsClients(services.target);
  } finally {
    await services.close();
  }
  return texts;
}

describe('MCP tools through the CLI', () => {
  it('sends a server’s secret header and stores or prints it nowhere', async () => {
    const file = join(dir, 'mcp-secret.json');
    const handler = {
      url: server.url,
      headers: { Authorization: 'Bearer {{secrets.MCP_TOKEN}}' },
      allowPrivateNetwork: true,
    };
    await writeFile(file, JSON.stringify(whoamiWorkflow('mcp-secret', handler)));
    const printed: ProcessResult[] = [];
    const run = await cli('run', file, '--json');
    printed.push(run);
    const { threadId, status, output } = JSON.parse(run.stdout) as {
      threadId: string;
      status: string;
      output: unknown;
    };
    expect(status, run.stderr).toBe('COMPLETED');
    // The server saw the token, and echoed it back: the output holds it redacted.
    expect(server.requests.length).toBeGreaterThan(0);
    expect(server.requests.every((r) => r.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(output).toEqual({ ask: 'you are Bearer [REDACTED]', agent: 'Told.' });
    printed.push(
      await cli('run', file),
      await cli('inspect', threadId, '--json'),
      await cli('inspect', threadId),
    );
    const found: string[] = [];
    for (const [n, { stdout, stderr }] of printed.entries())
      found.push(...leaks(`cli ${n} stdout`, stdout), ...leaks(`cli ${n} stderr`, stderr));
    const stored = await storedTexts();
    for (const [where, text] of stored) found.push(...leaks(where, text));
    // The scan saw what the run stored: the tool's output and the recorded definitions among it.
    expect(stored.some(([, text]) => text.includes('Tells who is calling'))).toBe(true);
    expect(found).toEqual([]);
  }, 120_000);

  it('lists a server once for a run: the run resumed after a question uses the recorded definitions', async () => {
    const file = join(dir, 'mcp-resume.json');
    const shop = { kind: 'mcp', url: server.url, tools: ['greet', 'refund'], allowPrivateNetwork: true };
    await writeFile(
      file,
      JSON.stringify({
        id: 'mcp-resume',
        version: 1,
        profiles: {
          default: {
            provider: 'scripted',
            byNode: {
              first: [{ toolCalls: [{ name: 'shop_greet', arguments: { name: 'Ada' } }] }, 'Greeted.'],
              second: [
                { toolCalls: [{ name: 'shop_refund', arguments: { order: 'A-1' } }] },
                'Could not refund.',
              ],
            },
          },
        },
        tools: { shop: { handler: shop } },
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'first', type: 'LLM', config: { prompt: 'Greet Ada', tools: ['shop'] } },
          {
            id: 'ask',
            type: 'USER_INTERACTION',
            config: { userInteractionType: 'ask_for_approval', showMessage: 'Refund?' },
          },
          { id: 'second', type: 'LLM', config: { prompt: 'Refund A-1', tools: ['shop'] } },
          { id: 'end', type: 'END', config: { output: '{{nodes.second}}' } },
        ],
        edges: [
          { from: 'start', to: 'first' },
          { from: 'first', to: 'ask' },
          { from: 'ask', to: 'second' },
          { from: 'second', to: 'end' },
        ],
      }),
    );
    server.requests.length = 0;
    server.calls.length = 0;
    const run = await cli('run', file, '--json');
    const { executionId } = JSON.parse(run.stdout) as { executionId: string };
    expect(server.calls.map((c) => c.tool)).toEqual(['greet']);
    const listings = () => server.methods().filter((m) => m === 'tools/list').length;
    expect(listings()).toBe(1);
    const resumed = await cli('resume', executionId, '--answers', '{"ask": true}', '--json');
    expect(JSON.parse(resumed.stdout), resumed.stderr).toMatchObject({
      status: 'COMPLETED',
      output: 'Could not refund.',
    });
    expect(server.calls.map((c) => c.tool)).toEqual(['greet', 'refund']);
    expect(listings()).toBe(1);
  }, 120_000);

  it('runs a stdio server from the workflow’s folder, and validate warns it cannot be deployed', async () => {
    // A server script beside the workflow, as a user would have it.
    await writeFile(join(dir, 'server.mjs'), `import ${JSON.stringify(pathToFileURL(STDIO_SERVER).href)};\n`);
    const file = join(dir, 'mcp-stdio.json');
    await writeFile(
      file,
      JSON.stringify(
        whoamiWorkflow('mcp-stdio', {
          command: ['node', 'server.mjs'],
          env: { TEST_TOKEN: '{{secrets.MCP_TOKEN}}' },
        }),
      ),
    );
    const run = await cli('run', file, '--json');
    expect(JSON.parse(run.stdout), run.stderr).toMatchObject({
      status: 'COMPLETED',
      output: { ask: 'you are [REDACTED]', agent: 'Told.' },
    });

    const validate = await cliProcess(['validate', '--json', file], { cwd: dir });
    expect(validate.code).toBe(0);
    expect(JSON.parse(validate.stdout)).toEqual({
      valid: true,
      errors: [],
      warnings: [
        {
          code: 'MCP_STDIO_NOT_DEPLOYABLE',
          message: expect.stringContaining('cannot be deployed'),
          path: 'tools.who.handler.command',
        },
      ],
    });
    const text = await cliProcess(['validate', file], { cwd: dir });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('valid locally (it cannot be deployed as it is)');
    expect(text.stdout).toContain('warning: MCP_STDIO_NOT_DEPLOYABLE (tools.who.handler.command)');
  }, 120_000);
});
