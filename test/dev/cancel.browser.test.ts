/**
 * Stopping a run from `stepthread dev`: `POST /api/executions/:id/cancel`, and the console's Stop
 * button in a real browser (Debian's chromium through playwright-core; skipped without it). A run
 * waiting on an OpenAI-compatible stand-in has its model connection closed and ends CANCELLED; a run
 * waiting on a person has its question closed; a run cancelled by another process shows why; an
 * ended run and an unknown id are coded errors.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { createInteractionStore } from '../../functions/stores/interaction-store.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { findChromium, launchChromium } from '../support/chromium.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');

let services: LocalServices;
let clients: AwsClients;
let server: DevServer;
let model: ScriptedServer;
let folder: string;

/** start → write (an LLM on the stand-in) → approve (a question) → end. */
function essayWorkflow(baseUrl: string) {
  return {
    id: 'essay',
    version: 1,
    profiles: { default: { provider: 'openai', model: 'test-model', baseUrl } },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'write', type: 'LLM', config: { prompt: 'Write a long essay.' } },
      {
        id: 'approve',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_approval', showMessage: 'Publish it?' },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'write' },
      { from: 'write', to: 'approve' },
      { from: 'approve', to: 'end' },
    ],
  };
}

beforeAll(async () => {
  model = await startScriptedServer();
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-cancel-'));
  writeFileSync(join(folder, 'essay.json'), JSON.stringify(essayWorkflow(`${model.url}/v1`)));
  services = await startLocalServices({ ephemeral: true });
  clients = createAwsClients(services.target, services.names);
  server = await startDevServer({ clients, workflowsDir: folder });
});

afterAll(async () => {
  await server?.close();
  await services?.close();
  await model?.close();
  rmSync(folder, { recursive: true, force: true });
});

async function post<T>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

interface Page {
  execution: { status: string };
  threads: { status: string }[];
  pending: unknown[];
  error?: { code: string; message: string };
}

const page = async (executionId: string) =>
  (await (await fetch(`${server.url}/api/executions/${encodeURIComponent(executionId)}`)).json()) as Page;

/** Starts the essay with its model call held, and resolves once the stand-in holds the request. */
async function startHeldEssay(): Promise<string> {
  const before = model.requests.length;
  model.reply({ ...textReply('never sent'), beforeChunk: () => new Promise(() => {}), delayMs: 60_000 });
  const started = await post<{ executionId: string }>('/api/workflows/essay/runs', { input: {} });
  expect(started.status).toBe(202);
  await vi.waitFor(() => expect(model.requests.length).toBe(before + 1), { timeout: 10_000, interval: 20 });
  return started.body.executionId;
}

describe('POST /api/executions/:id/cancel', () => {
  it('closes the model call in flight and ends the run CANCELLED with the reason', async () => {
    const abandoned = model.abandoned.length;
    const executionId = await startHeldEssay();
    const cancelled = await post<Record<string, unknown>>(`/api/executions/${executionId}/cancel`, {
      reason: 'wrong topic',
    });
    expect(cancelled).toEqual({
      status: 200,
      body: {
        executionId,
        threadId: expect.stringMatching(/^t-/),
        status: 'CANCELLED',
        reason: 'wrong topic',
        alreadyCancelled: false,
        threadsCancelled: 1,
        interactionsClosed: 0,
      },
    });
    await vi.waitFor(() => expect(model.abandoned.length).toBe(abandoned + 1), {
      timeout: 5000,
      interval: 20,
    });
    await vi.waitFor(
      async () => {
        const shown = await page(executionId);
        expect(shown.execution.status).toBe('CANCELLED');
        expect(shown.threads.map((thread) => thread.status)).toEqual(['CANCELLED']);
        expect(shown.error?.code).toBe('RUN_CANCELLED');
      },
      { timeout: 5000, interval: 50 },
    );
    // Again: nothing changes.
    const again = await post<{ alreadyCancelled: boolean; reason: string }>(
      `/api/executions/${executionId}/cancel`,
      {},
    );
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ alreadyCancelled: true, reason: 'wrong topic' });
  });

  it('closes the question a run waits on', async () => {
    model.reply(textReply('An essay.'));
    const started = await post<{ executionId: string }>('/api/workflows/essay/runs', { input: {} });
    const { executionId } = started.body;
    await vi.waitFor(async () => expect((await page(executionId)).pending).toHaveLength(1), {
      timeout: 10_000,
      interval: 50,
    });
    const cancelled = await post<{ threadId: string }>(`/api/executions/${executionId}/cancel`, {});
    expect(cancelled.status).toBe(200);
    // Closed by the run as it stopped, or by the cancel after: either way with the cancel's code.
    const question = await createInteractionStore(clients).getInteraction(cancelled.body.threadId, 'approve');
    expect(question).toMatchObject({
      status: 'FAILED',
      resolution: { outcome: 'FAILED', code: 'RUN_CANCELLED' },
    });
    await vi.waitFor(
      async () => {
        const shown = await page(executionId);
        expect(shown.execution.status).toBe('CANCELLED');
        expect(shown.pending).toEqual([]);
      },
      { timeout: 5000, interval: 50 },
    );
  });

  it('a run cancelled outside this server: its page gives RUN_CANCELLED with the reason', async () => {
    // Another process on the data directory (`stepthread run`, then `stepthread cancel`): only the
    // stores are shared, so the page reads why from the run's records, not from a run of its own.
    const elsewhere = createLocalRuntime({ clients });
    const held = model.requests.length;
    model.reply({ ...textReply('never sent'), delayMs: 60_000 });
    const workflow = essayWorkflow(`${model.url}/v1`) as Workflow;
    const running = elsewhere.prepare(workflow).run({}, { executionId: 'cancelled-elsewhere' });
    running.catch(() => {});
    await vi.waitFor(() => expect(model.requests.length).toBe(held + 1), { timeout: 10_000, interval: 20 });
    await elsewhere.cancel('cancelled-elsewhere', { reason: 'wrong model' });
    expect((await running).status).toBe('CANCELLED');
    const shown = await page('cancelled-elsewhere');
    expect(shown.execution.status).toBe('CANCELLED');
    expect(shown.error).toEqual({ code: 'RUN_CANCELLED', message: 'the run was cancelled: wrong model' });
  });

  it('refuses an ended run (409), an unknown one (404) and a reason that is not text (400), with codes', async () => {
    // The model refuses the request: the run fails at once.
    model.reply({ status: 400, body: { error: { message: 'no essays today' } } });
    const started = await post<{ executionId: string }>('/api/workflows/essay/runs', { input: {} });
    const { executionId } = started.body;
    await vi.waitFor(async () => expect((await page(executionId)).execution.status).toBe('FAILED'), {
      timeout: 10_000,
      interval: 50,
    });
    const ended = await post<{ error: { code: string; message: string } }>(
      `/api/executions/${executionId}/cancel`,
      {},
    );
    expect(ended.status).toBe(409);
    expect(ended.body.error).toEqual({
      code: 'RUN_ALREADY_ENDED',
      message: `execution ${executionId} ended FAILED before it could be cancelled`,
    });
    const notText = await post<{ error: { code: string } }>(`/api/executions/${executionId}/cancel`, {
      reason: 7,
    });
    expect(notText.status).toBe(400);
    expect(notText.body.error.code).toBe('API_BAD_REQUEST');
    const unknown = await post<{ error: { code: string } }>('/api/executions/no-such-run/cancel', {});
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('EXECUTION_NOT_FOUND');
  });
});

const executablePath = findChromium();
const consoleBuilt = existsSync(join(ROOT, 'console', 'dist', 'index.html'));
if (executablePath === undefined || !consoleBuilt) {
  console.warn('\n*** Stop button browser test SKIPPED: no chromium, or the console is not built ***\n');
}

describe.skipIf(executablePath === undefined || !consoleBuilt)('the console’s Stop button', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium(executablePath!);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('stops a run waiting on its model: the page shows it CANCELLED, the model connection is closed', async () => {
    const abandoned = model.abandoned.length;
    const executionId = await startHeldEssay();
    const tab = await browser.newPage();
    try {
      await tab.goto(`${server.url}/#/executions/${encodeURIComponent(executionId)}`);
      const status = tab.getByTestId('execution-status');
      await expect.poll(() => status.getAttribute('data-status')).toBe('RUNNING');
      await tab.getByTestId('stop-execution').click();
      await expect.poll(() => status.getAttribute('data-status')).toBe('CANCELLED');
      // Nothing left to stop.
      await expect.poll(() => tab.getByTestId('stop-execution').count()).toBe(0);
      await expect.poll(() => tab.getByTestId('execution-error').innerText()).toContain('RUN_CANCELLED');
      expect(model.abandoned.length).toBe(abandoned + 1);
    } finally {
      await tab.close();
    }
  });
});
