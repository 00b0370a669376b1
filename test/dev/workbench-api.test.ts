/**
 * The dev API the console's workbench uses, over real dynalite + s3rver (ephemeral) and the
 * examples: a step's input as its node ran it, two runs compared as `diff` compares them, and Resume
 * refusing what is not interrupted. (Resuming an interrupted run is in workbench.browser.test.ts,
 * which stops a `dev` process to make one.)
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const TICKET = { ticket: { subject: 'Double billing in March', customer: 'Ana', monthlyFee: 30 } };

let services: LocalServices;
let server: DevServer;
let folder: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-workbench-'));
  cpSync(join(ROOT, 'examples'), folder, { recursive: true });
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

async function call<T>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${server.url}${path}`, {
    ...(body === undefined
      ? {}
      : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

interface Page {
  execution: { status: string };
  rootThreadId: string;
  pending: { interactionId: string }[];
}

/** Runs support-triage with the approval answered `approve`, to its end; gives its execution page. */
async function triage(approve: boolean): Promise<Page & { executionId: string }> {
  const started = await call<{ executionId: string }>('/api/workflows/support-triage/runs', {
    input: TICKET,
  });
  const { executionId } = started.body;
  const page = () => call<Page>(`/api/executions/${executionId}`).then((reply) => reply.body);
  const waiting = await vi.waitFor(
    async () => {
      const shown = await page();
      expect(shown.pending).toHaveLength(1);
      return shown;
    },
    { timeout: 20_000, interval: 50 },
  );
  const id = encodeURIComponent(waiting.pending[0]!.interactionId);
  expect(
    (await call(`/api/interactions/${id}/answer`, approve ? { approve: true } : { reject: true })).status,
  ).toBe(202);
  return {
    executionId,
    ...(await vi.waitFor(
      async () => {
        const shown = await page();
        expect(shown.execution.status).toBe('COMPLETED');
        return shown;
      },
      { timeout: 20_000, interval: 50 },
    )),
  };
}

interface StepInput {
  nodeId: string;
  rendered: Record<string, unknown>;
  reads: Record<string, unknown>;
  toolCalls: { name: string; arguments: unknown; result?: string }[];
}

interface StepRow {
  step: number;
  nodeId: string;
}

const stepOf = async (threadId: string, nodeId: string) =>
  (await call<{ steps: StepRow[] }>(`/api/threads/${threadId}/steps`)).body.steps.find(
    (row) => row.nodeId === nodeId,
  )!.step;

describe('the workbench API', () => {
  let source: Page & { executionId: string };
  beforeAll(async () => {
    source = await triage(true);
  }, 60_000);

  it("gives a step's input as its node ran it: the rendered prompt, the tool calls, the values read", async () => {
    const root = source.rootThreadId;
    const reply = await call<StepInput>(`/api/threads/${root}/steps/${await stepOf(root, 'reply')}/input`);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      nodeId: 'reply',
      rendered: { prompt: 'Write the reply to Ana. Credit granted: 6 EUR.' },
      reads: { input: TICKET, credit: { amount: 6, currency: 'EUR' } },
      toolCalls: [],
    });
    const classify = await call<StepInput>(
      `/api/threads/${root}/steps/${await stepOf(root, 'classify')}/input`,
    );
    expect(classify.body.rendered).toEqual({
      prompt: 'Classify this ticket as billing or technical: Double billing in March',
    });
    expect(classify.body.toolCalls).toEqual([
      expect.objectContaining({
        name: 'tenure',
        arguments: { since: 2019, now: 2025 },
        result: '{"years":6}',
      }),
    ]);
    const code = await call<StepInput>(
      `/api/threads/${root}/steps/${await stepOf(root, 'compute-credit')}/input`,
    );
    expect(code.body.rendered).toEqual({ inputs: { fee: 30 } });
  });

  it("gives a fork branch's first step the state its parent had after the FORK, and START nothing", async () => {
    const started = await call<{ executionId: string }>('/api/workflows/fork-join-research/runs', {
      input: { topic: 'the payments service' },
    });
    const page = await vi.waitFor(
      async () => {
        const shown = (
          await call<Page & { threads: { threadId: string; forkPathId?: string }[] }>(
            `/api/executions/${started.body.executionId}`,
          )
        ).body;
        expect(shown.execution.status).toBe('COMPLETED');
        return shown;
      },
      { timeout: 20_000, interval: 50 },
    );
    const risks = page.threads.find((thread) => thread.forkPathId === 'split/risks')!;
    const first = await call<StepInput>(`/api/threads/${risks.threadId}/steps/1/input`);
    expect(first.body).toMatchObject({
      nodeId: 'risks',
      rendered: { prompt: 'List the main risks of the payments service.' },
      reads: { input: { topic: 'the payments service' } },
    });
    const start = await call<StepInput>(`/api/threads/${page.rootThreadId}/steps/1/input`);
    expect(start.body).toMatchObject({ nodeId: 'start', rendered: {}, reads: {}, toolCalls: [] });
  });

  it('refuses a step the thread does not have, and one that is not a number, with codes', async () => {
    const past = await call<{ error: { code: string } }>(
      `/api/threads/${source.rootThreadId}/steps/999/input`,
    );
    expect(past.status).toBe(400);
    expect(past.body.error.code).toBe('COPY_POINT_NOT_FOUND');
    const word = await call<{ error: { code: string } }>(
      `/api/threads/${source.rootThreadId}/steps/two/input`,
    );
    expect(word.status).toBe(400);
    expect(word.body.error.code).toBe('API_BAD_REQUEST');
  });

  it('compares a copy with an edited variable against its source as diff does, with both sides’ steps', async () => {
    const step = await stepOf(source.rootThreadId, 'compute-credit');
    const copy = await call<{ threadId: string }>(`/api/threads/${source.rootThreadId}/copy`, {
      fromStep: step,
      set: { approved: false },
    });
    expect(copy.status).toBe(201);
    const run = await call<{ executionId: string }>(`/api/threads/${copy.body.threadId}/run`, {});
    await vi.waitFor(
      async () =>
        expect((await call<Page>(`/api/executions/${run.body.executionId}`)).body.execution.status).toBe(
          'COMPLETED',
        ),
      { timeout: 20_000, interval: 50 },
    );
    const compared = await call<{
      diff: { sharedSteps: number; partsAt: { reason: string; a: { nodeId: string } } };
      a: { steps: { nodeId: string; output?: unknown }[]; messages: unknown[] };
      b: { steps: { nodeId: string; output?: unknown }[]; messages: { content: string }[] };
    }>(`/api/compare?a=${source.rootThreadId}&b=${copy.body.threadId}`);
    expect(compared.status).toBe(200);
    expect(compared.body.diff.sharedSteps).toBe(step - 1);
    expect(compared.body.diff.partsAt).toMatchObject({ reason: 'output', a: { nodeId: 'compute-credit' } });
    expect(compared.body.a.steps.map((row) => row.nodeId)).toEqual(['compute-credit', 'reply', 'end']);
    expect(compared.body.b.steps[0]).toMatchObject({
      nodeId: 'compute-credit',
      output: { amount: 0, currency: 'EUR' },
    });
    expect(compared.body.b.messages.at(-1)?.content).toBe(
      'Sorry for the double charge. We have refunded it.',
    );
    const missing = await call<{ error: { code: string } }>(`/api/compare?a=${source.rootThreadId}`);
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('API_BAD_REQUEST');
  });

  it('refuses to resume a run that ended (409) or that does not exist (404)', async () => {
    const ended = await call<{ error: { code: string } }>(`/api/executions/${source.executionId}/resume`, {});
    expect(ended.status).toBe(409);
    expect(ended.body.error.code).toBe('RUN_NOT_RESUMABLE');
    const unknown = await call<{ error: { code: string } }>('/api/executions/no-such-run/resume', {});
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('EXECUTION_NOT_FOUND');
  });
});
