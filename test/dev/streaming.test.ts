/**
 * `stepthread dev` streams LLM replies: `/api/events` carries a `token` event for each piece as it
 * arrives, and the execution page keeps what arrived so far (for a page opened mid-reply) until the
 * step commits. Against an OpenAI-compatible stand-in that holds its last chunk back until the test
 * lets it go, and the scripted provider's `streamChunkMs` on a fork's branches; real dynalite + s3rver.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { heldBeforeLastWord } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const REPLY = 'Streams are lists over time, read as they come.';

let services: LocalServices;
let server: DevServer;
let model: ScriptedServer;
let folder: string;

const chain = (id: string, profile: unknown, nodes: Record<string, unknown>[], edges?: unknown[]) => ({
  id,
  version: 1,
  profiles: { default: profile },
  nodes,
  edges: edges ?? nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
});

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-stream-'));
  [services, model] = await Promise.all([startLocalServices({ ephemeral: true }), startScriptedServer()]);
  writeFileSync(
    join(folder, 'explain.json'),
    JSON.stringify(
      chain('explain', { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` }, [
        { id: 'start', type: 'START' },
        { id: 'explain', type: 'LLM', config: { prompt: 'What is a stream?' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.explain}}' } },
      ]),
    ),
  );
  const branches = ['facts', 'risks'];
  writeFileSync(
    join(folder, 'branches.json'),
    JSON.stringify(
      chain(
        'branches',
        {
          provider: 'scripted',
          streamChunkMs: 5,
          byNode: { facts: ['Facts come word by word.'], risks: ['Risks stream on their own thread.'] },
        },
        [
          { id: 'start', type: 'START' },
          {
            id: 'split',
            type: 'FORK',
            config: { forkPathIds: branches, forkStrategy: 'parallel', childNodeIds: branches },
          },
          { id: 'facts', type: 'LLM', config: { prompt: 'Facts?' } },
          { id: 'risks', type: 'LLM', config: { prompt: 'Risks?' } },
          {
            id: 'merge',
            type: 'JOIN',
            config: { forkPathIds: branches, joinStrategy: 'ALL_COMPLETED', timeout: 0 },
          },
          { id: 'end', type: 'END' },
        ],
        [
          { from: 'start', to: 'split' },
          { from: 'facts', to: 'merge' },
          { from: 'risks', to: 'merge' },
          { from: 'merge', to: 'end' },
        ],
      ),
    ),
  );
  server = await startDevServer({
    clients: createAwsClients(services.target, services.names),
    workflowsDir: folder,
  });
});

afterAll(async () => {
  await server?.close();
  await Promise.all([services?.close(), model?.close()]);
  rmSync(folder, { recursive: true, force: true });
});

type Token = { executionId: string; threadId: string; nodeId: string; text: string; seq: number };
type Page = {
  execution: { status: string };
  rootThreadId: string;
  threads: { threadId: string; forkPathId?: string }[];
  streaming?: { seq: number; replies: { threadId: string; nodeId: string; replies: string[] }[] };
};

/** The live event stream, read in the background; resolves waits as events arrive. */
async function openEventStream() {
  const seen: { type: string; data: Record<string, unknown> }[] = [];
  const waits: { test: () => boolean; resolve: () => void }[] = [];
  const controller = new AbortController();
  const response = await fetch(`${server.url}/api/events`, { signal: controller.signal });
  (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (type && data) seen.push({ type, data: JSON.parse(data) });
      }
      for (const wait of [...waits]) {
        if (!wait.test()) continue;
        waits.splice(waits.indexOf(wait), 1);
        wait.resolve();
      }
    }
  })().catch(() => {});
  const tokens = (executionId: string) =>
    seen.filter((e) => e.type === 'token' && e.data.executionId === executionId).map((e) => e.data as Token);
  return {
    tokens,
    /** Resolves once `test` holds of the events seen. */
    until: (test: () => boolean) =>
      new Promise<void>((resolve) => {
        if (test()) resolve();
        else waits.push({ test, resolve });
      }),
    ended: (executionId: string) => () =>
      seen.some(
        (e) => e.type === 'execution' && e.data.executionId === executionId && e.data.status !== 'RUNNING',
      ),
    close: () => controller.abort(),
  };
}

async function start(workflowId: string): Promise<string> {
  const response = await fetch(`${server.url}/api/workflows/${workflowId}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: {} }),
  });
  return ((await response.json()) as { executionId: string }).executionId;
}

const page = async (executionId: string) =>
  (await (await fetch(`${server.url}/api/executions/${executionId}`)).json()) as Page;

const conversation = async (threadId: string) =>
  (
    (await (await fetch(`${server.url}/api/threads/${threadId}/conversation`)).json()) as {
      messages: { role: string; content: string }[];
    }
  ).messages;

describe('stepthread dev: streamed replies', () => {
  it('sends token events before the server sends the last chunk, and a page opened mid-reply has the text so far', async () => {
    const held = heldBeforeLastWord(REPLY, { prompt: 9, completion: 9 });
    model.reply(held.reply);
    const events = await openEventStream();
    try {
      const executionId = await start('explain');
      await events.until(() => events.tokens(executionId).some((token) => token.text === 'they '));
      expect(held.lastSent()).toBe(false);
      const [first] = events.tokens(executionId);
      expect(first).toMatchObject({ nodeId: 'explain', text: 'Streams ' });
      // The page as a reload reads it: what came so far, on the node's thread.
      const midway = await page(executionId);
      expect(midway.streaming?.replies).toEqual([
        expect.objectContaining({
          threadId: midway.rootThreadId,
          nodeId: 'explain',
          replies: ['Streams are lists over time, read as they '],
        }),
      ]);
      expect(midway.streaming!.seq).toBeGreaterThanOrEqual(events.tokens(executionId).at(-1)!.seq);

      held.release();
      await events.until(events.ended(executionId));
      const tokens = events.tokens(executionId);
      expect(tokens.map((token) => token.text).join('')).toBe(REPLY);
      // Each token event is numbered after the one before.
      expect(tokens.map((token) => token.seq)).toEqual([...tokens.map((t) => t.seq)].sort((a, b) => a - b));
      const done = await page(executionId);
      expect(done.execution.status).toBe('COMPLETED');
      expect(done.streaming).toBeUndefined();
      expect((await conversation(done.rootThreadId)).at(-1)).toEqual({ role: 'assistant', content: REPLY });
    } finally {
      events.close();
    }
  });

  it("streams each fork branch's reply on its own thread (scripted streamChunkMs)", async () => {
    const events = await openEventStream();
    try {
      const executionId = await start('branches');
      await events.until(events.ended(executionId));
      const shown = await page(executionId);
      expect(shown.execution.status).toBe('COMPLETED');
      const threadOf = (path: string) =>
        shown.threads.find((thread) => thread.forkPathId === `split/${path}`)!.threadId;
      const tokens = events.tokens(executionId);
      const textOf = (nodeId: string) =>
        tokens
          .filter((token) => token.nodeId === nodeId)
          .map((token) => {
            expect(token.threadId).toBe(threadOf(nodeId));
            return token.text;
          });
      expect(textOf('facts')).toEqual(['Facts ', 'come ', 'word ', 'by ', 'word.']);
      expect(textOf('risks').join('')).toBe('Risks stream on their own thread.');
      expect((await conversation(threadOf('risks'))).at(-1)?.content).toBe(
        'Risks stream on their own thread.',
      );
    } finally {
      events.close();
    }
  });
});
