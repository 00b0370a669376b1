/**
 * The console's answer endpoint refuses an ask_for_input answer the outputVariable's declared type
 * does not take (400 INVALID_INTERACTION_ANSWER, naming the variable and its type); the run goes on
 * waiting, and a right answer completes it. Over `stepthread dev` on real dynalite + s3rver.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { COUNT_QUESTION as COUNT } from '../support/count-question.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']);

let services: LocalServices;
let server: DevServer;
let folder: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-answer-fits-'));
  writeFileSync(join(folder, 'count-ask.json'), JSON.stringify(COUNT));
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
  pending: { interactionId: string; nodeId: string; answerVariable?: unknown }[];
  nodeStatus: Record<string, { status: string }>;
};

describe('POST /api/interactions/:id/answer', () => {
  it('refuses an input its variable does not take with 400, the run still waits, and a right one completes it', async () => {
    const started = await post<{ executionId: string }>('/api/workflows/count-ask/runs', { input: {} });
    expect(started.status).toBe(202);
    const { executionId } = started.body;
    const page = (
      await until(
        () => get<Page>(`/api/executions/${executionId}`),
        (reply) => reply.body.pending.length > 0,
      )
    ).body;
    const [question] = page.pending;
    // The console is told what the answer must be, to read what is typed accordingly.
    expect(question).toMatchObject({ nodeId: 'ask', answerVariable: { name: 'count', type: 'number' } });
    const path = `/api/interactions/${encodeURIComponent(question!.interactionId)}/answer`;

    const wrong = await post(path, { input: 'lots' });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({
      error: {
        code: 'INVALID_INTERACTION_ANSWER',
        message:
          'node ask (ask_for_input): the answer is stored in variable "count", declared number, so it must be a number; got "lots" (string)',
      },
    });
    // Nothing was recorded: the run still waits on the same question.
    const still = (await get<Page>(`/api/executions/${executionId}`)).body;
    expect(still.execution.status).toBe('RUNNING');
    expect(still.pending.map((p) => p.interactionId)).toEqual([question!.interactionId]);
    expect(still.nodeStatus.ask?.status).toBe('WAITING');

    expect((await post(path, { input: 42 })).status).toBe(202);
    const done = (
      await until(
        () => get<Page>(`/api/executions/${executionId}`),
        (reply) => TERMINAL.has(reply.body.execution.status),
      )
    ).body;
    expect(done.execution.status).toBe('COMPLETED');
    const head = await get<{ variables: { thread: { count: unknown } } }>(
      `/api/threads/${done.rootThreadId}`,
    );
    expect(head.body.variables.thread.count).toBe(42);
  });
});
