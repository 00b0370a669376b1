/**
 * The console refuses to start a run whose LLM nodes read their API key from an environment variable
 * that is not set (400 LLM_MISSING_API_KEY naming the variable and the node), as `run` does, so no run
 * is left failed at its first model call. Over `stepthread dev` on real dynalite + s3rver.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const VARIABLE = 'STEPTHREAD_TEST_UNSET_KEY';

const HOSTED = {
  id: 'hosted-reply',
  version: 1,
  profiles: { default: { provider: 'openai', model: 'gpt-4o-mini', apiKeyEnv: VARIABLE } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'reply', type: 'LLM', config: { prompt: 'Hello' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'reply' },
    { from: 'reply', to: 'end' },
  ],
};

let services: LocalServices;
let server: DevServer;
let folder: string;

beforeAll(async () => {
  delete process.env[VARIABLE];
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-api-keys-'));
  writeFileSync(join(folder, 'hosted-reply.json'), JSON.stringify(HOSTED));
  services = await startLocalServices({ ephemeral: true });
  server = await startDevServer({
    clients: createAwsClients(services.target, services.names),
    workflowsDir: folder,
  });
});

afterAll(async () => {
  await server?.close();
  await services?.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('POST /api/workflows/:id/runs of a workflow whose key is not set', () => {
  it('is 400 LLM_MISSING_API_KEY naming the variable and the node, and starts no run', async () => {
    const response = await fetch(`${server.url}/api/workflows/hosted-reply/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: {} }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: {
        code: 'LLM_MISSING_API_KEY',
        message: `the environment variable ${VARIABLE} is not set, and node reply (profile default, openai) reads its API key from it: set it (export ${VARIABLE}=…), or name another variable with the profile's apiKeyEnv`,
      },
    });
    const runs = (await (await fetch(`${server.url}/api/executions`)).json()) as unknown;
    expect(runs).toEqual([]);
  });
});
