/**
 * The console's answer endpoint refuses a selection answered with an option in another case or with
 * a close typo (400 INVALID_INTERACTION_ANSWER) saying which option it likely meant, as respond and
 * --answers do; the run goes on waiting, and the option itself completes it. Over `stepthread dev`
 * on real dynalite + s3rver.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']);

/** START → `pick` (ask_for_selection: red, green, blue) → END with the option chosen. */
const PICK = {
  id: 'pick-colour',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'pick',
      type: 'USER_INTERACTION',
      config: {
        userInteractionType: 'ask_for_selection',
        showMessage: 'Colour?',
        options: ['red', 'green', 'blue'],
      },
    },
    { id: 'end', type: 'END', config: { output: '{{nodes.pick.option}}' } },
  ],
  edges: [
    { from: 'start', to: 'pick' },
    { from: 'pick', to: 'end' },
  ],
};

let services: LocalServices;
let server: DevServer;
let folder: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-selection-hint-'));
  writeFileSync(join(folder, 'pick-colour.json'), JSON.stringify(PICK));
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

interface Reply<T = Record<string, unknown>> {
  status: number;
  body: T;
}

async function get<T>(path: string): Promise<Reply<T>> {
  const response = await fetch(`${server.url}${path}`);
  return { status: response.status, body: (await response.json()) as T };
}

async function post<T = Record<string, unknown>>(path: string, body: unknown): Promise<Reply<T>> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** Reads the API until `done` holds (the run progresses on the server, not on a clock). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

type Page = {
  execution: { status: string };
  rootThreadId: string;
  pending: { interactionId: string; nodeId: string }[];
  nodeStatus: Record<string, { status: string }>;
};

describe('POST /api/interactions/:id/answer of a selection', () => {
  it('refuses an option in another case with 400 and the option it likely meant; the run still waits, and the option completes it', async () => {
    const started = await post<{ executionId: string }>('/api/workflows/pick-colour/runs', { input: {} });
    expect(started.status).toBe(202);
    const { executionId } = started.body;
    const page = (
      await until(
        () => get<Page>(`/api/executions/${executionId}`),
        (reply) => reply.body.pending.length > 0,
      )
    ).body;
    const [question] = page.pending;
    const path = `/api/interactions/${encodeURIComponent(question!.interactionId)}/answer`;

    const wrong = await post(path, { select: 'Green' });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({
      error: {
        code: 'INVALID_INTERACTION_ANSWER',
        message:
          'node pick (ask_for_selection): "Green" is not one of the 3 options (0: red, 1: green, 2: blue) nor an index of one; did you mean "green"?',
      },
    });
    const still = (await get<Page>(`/api/executions/${executionId}`)).body;
    expect(still.execution.status).toBe('RUNNING');
    expect(still.pending.map((p) => p.interactionId)).toEqual([question!.interactionId]);

    expect((await post(path, { select: 'green' })).status).toBe(202);
    const done = (
      await until(
        () => get<Page>(`/api/executions/${executionId}`),
        (reply) => TERMINAL.has(reply.body.execution.status),
      )
    ).body;
    expect(done.execution.status).toBe('COMPLETED');
    const head = await get<{ output: unknown }>(`/api/threads/${done.rootThreadId}`);
    expect(head.body.output).toBe('green');
  });
});
