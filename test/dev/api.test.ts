/**
 * Contract tests of `stepthread dev`'s JSON API and event stream, over real dynalite + s3rver
 * (ephemeral) and the examples: what each route returns, and the coded 4xx of malformed, unknown,
 * cross-origin and conflicting requests.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { offerReply } from '../../functions/local/offered-replies.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { createInteractionStore, parseInteractionId } from '../../functions/stores/interaction-store.ts';
import { createStoredBytesReader } from '../../functions/stores/stored-bytes.ts';
import { manyForks, manyForksInput, manyForksPathOrder } from '../support/many-forks.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']);
const TICKET = { ticket: { subject: 'Double billing in March', customer: 'Ana', monthlyFee: 30 } };

let services: LocalServices;
let clients: AwsClients;
let server: DevServer;
let folder: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-api-'));
  cpSync(join(ROOT, 'examples'), folder, { recursive: true });
  writeFileSync(
    join(folder, 'broken.json'),
    JSON.stringify({ id: 'broken', version: 1, nodes: [{ id: 'start', type: 'START' }], edges: [] }),
  );
  services = await startLocalServices({ ephemeral: true });
  clients = createAwsClients(services.target, services.names);
  countHeadReads(clients.dynamo);
  server = await startDevServer({ clients, workflowsDir: folder });
});

afterAll(async () => {
  await server?.close();
  await services?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** GetItems of each thread's head (`THREAD#<id>` / `THREAD`), by thread id. */
const headReads = new Map<string, number>();

function countHeadReads(dynamo: AwsClients['dynamo']): void {
  aroundCommands(dynamo, ({ commandName, input }, next) => {
    const key = (input as { Key?: { pk?: unknown; sk?: unknown } }).Key;
    const [partition, sort] = [key?.pk, key?.sk].map((value) => (typeof value === 'string' ? value : ''));
    if (commandName === 'GetItemCommand' && sort === 'THREAD' && partition?.startsWith('THREAD#')) {
      const id = partition.slice('THREAD#'.length);
      headReads.set(id, (headReads.get(id) ?? 0) + 1);
    }
    return next();
  });
}

/** Starts support-triage over the API and waits until its approval is pending. */
async function startWaitingTriage(): Promise<{ executionId: string; waiting: Page }> {
  const started = await post<{ executionId: string }>('/api/workflows/support-triage/runs', {
    input: TICKET,
  });
  const { executionId } = started.body;
  const waiting = await until(
    async () => (await get<Page>(`/api/executions/${executionId}`)).body,
    (page) => page.pending.length > 0,
  );
  return { executionId, waiting };
}

interface Reply<T = Record<string, unknown>> {
  status: number;
  body: T;
}

async function get<T = Record<string, unknown>>(path: string): Promise<Reply<T>> {
  const response = await fetch(`${server.url}${path}`);
  return { status: response.status, body: (await response.json()) as T };
}

async function post<T = Record<string, unknown>>(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply<T>> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
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
  execution: { status: string; workflowId: string };
  rootThreadId: string;
  threads: { threadId: string; forkPathId?: string; status: string }[];
  nodeStatus: Record<string, { status: string }>;
  pending: { interactionId: string; nodeId: string; interactionType: string; answerable: boolean }[];
  copies: { threadId: string; executionId: string }[];
};

/** The live event stream, read in the background, with a wait for an execution's status. */
async function openEventStream() {
  const seen: { type: string; data: Record<string, unknown> }[] = [];
  const controller = new AbortController();
  const stream = await fetch(`${server.url}/api/events`, { signal: controller.signal });
  const contentType = stream.headers.get('content-type') ?? '';
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of stream.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (type && data) seen.push({ type, data: JSON.parse(data) });
      }
    }
  })().catch(() => {});
  return {
    contentType,
    seen,
    until: (executionId: string, status: string) =>
      until(
        async () => seen,
        (events) =>
          events.some(
            (e) => e.type === 'execution' && e.data.executionId === executionId && e.data.status === status,
          ),
      ),
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}

const finished = (executionId: string) =>
  until(
    async () => (await get<Page>(`/api/executions/${executionId}`)).body,
    (page) => TERMINAL.has(page.execution.status),
  );

describe('stepthread dev API', () => {
  it('lists the workflows of the folder, valid or with their coded errors', async () => {
    const { status, body } =
      await get<{ id: string; valid: boolean; errors: { code: string }[] }[]>('/api/workflows');
    expect(status).toBe(200);
    const byId = new Map(body.map((entry) => [entry.id, entry]));
    expect(byId.get('fork-join-research')).toMatchObject({ valid: true, errors: [] });
    expect(byId.get('support-triage')).toMatchObject({ valid: true });
    expect(byId.get('broken')?.valid).toBe(false);
    expect(byId.get('broken')?.errors.length).toBeGreaterThan(0);
  });

  it('keeps a workflow id with the file named after it (else the first by name) and refuses its copies, naming that file', async () => {
    type Listed = { id: string; file: string; valid: boolean; errors: { code: string; message: string }[] };
    const withId = async (id: string) =>
      (await get<Listed[]>('/api/workflows')).body.filter((entry) => entry.id === id);
    // A user's first edit: a copy of an example beside it, sorting before it.
    cpSync(join(folder, 'route-loop.json'), join(folder, 'rl-bad.json'));
    const twin = {
      id: 'twin',
      version: 1,
      description: 'Twins',
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'end', type: 'END' },
      ],
      edges: [{ from: 'start', to: 'end' }],
    };
    writeFileSync(join(folder, 'twin-a.json'), JSON.stringify(twin));
    writeFileSync(join(folder, 'twin-b.json'), JSON.stringify(twin));
    try {
      const routeLoop = await withId('route-loop');
      expect(routeLoop.map((entry) => [entry.file, entry.valid, entry.errors.map((e) => e.code)])).toEqual([
        ['rl-bad.json', false, ['DUPLICATE_WORKFLOW_ID']],
        ['route-loop.json', true, []],
      ]);
      expect(routeLoop[0]!.errors[0]!.message).toBe(
        'workflow id route-loop is the id of route-loop.json, which the console serves under it: give rl-bad.json its own id',
      );
      expect((await get('/api/workflows/route-loop')).body).toMatchObject({
        file: 'route-loop.json',
        valid: true,
      });
      const started = await post<{ executionId: string }>('/api/workflows/route-loop/runs', {
        input: { tickets: ['Printer jams'] },
      });
      expect(started.status).toBe(202);
      expect((await finished(started.body.executionId)).execution.status).toBe('COMPLETED');

      // No file named after the id: the first by name keeps it.
      const twins = await withId('twin');
      expect(twins.map((entry) => [entry.file, entry.valid, entry.errors.map((e) => e.code)])).toEqual([
        ['twin-a.json', true, []],
        ['twin-b.json', false, ['DUPLICATE_WORKFLOW_ID']],
      ]);
      expect(twins[1]!.errors[0]!.message).toContain('is the id of twin-a.json');
      expect((await get('/api/workflows/twin')).body).toMatchObject({
        file: 'twin-a.json',
        valid: true,
        description: 'Twins',
      });
      expect((await post('/api/workflows/twin/runs', {})).status).toBe(202);
    } finally {
      for (const file of ['rl-bad.json', 'twin-a.json', 'twin-b.json']) rmSync(join(folder, file));
    }
  });

  it("draws an execution with the definition it ran, not the file's later edits", async () => {
    const file = join(folder, 'edited.json');
    const nodes = (id: string) => [
      { id: 'start', type: 'START' },
      { id, type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
      { id: 'end', type: 'END' },
    ];
    const edges = (id: string) => [
      { from: 'start', to: id },
      { from: id, to: 'end' },
    ];
    writeFileSync(file, JSON.stringify({ id: 'edited', version: 1, nodes: nodes('c'), edges: edges('c') }));
    try {
      const started = await post<{ executionId: string }>('/api/workflows/edited/runs', {});
      await finished(started.body.executionId);
      writeFileSync(
        file,
        JSON.stringify({ id: 'edited', version: 1, nodes: nodes('c-new'), edges: edges('c-new') }),
      );
      const page = (
        await get<Page & { definition?: { graph: { nodes: { id: string }[] } } }>(
          `/api/executions/${started.body.executionId}`,
        )
      ).body;
      expect(page.definition?.graph.nodes.map((node) => node.id)).toEqual(
        expect.arrayContaining(['start', 'c', 'end']),
      );
      expect(page.definition?.graph.nodes.map((node) => node.id)).not.toContain('c-new');
    } finally {
      rmSync(file);
    }
  });

  it('serves a workflow with its graph: nodes, edges, fork regions and loops', async () => {
    const fork = await get<{ graph: { nodes: { id: string }[]; forks: unknown[]; edges: unknown[] } }>(
      '/api/workflows/fork-join-research',
    );
    expect(fork.status).toBe(200);
    expect(fork.body.graph.nodes.map((node) => node.id)).toContain('merge');
    expect(fork.body.graph.forks).toEqual([
      expect.objectContaining({ forkId: 'split', joinId: 'merge', paths: expect.any(Array) }),
    ]);
    const loop = await get<{ graph: { loops: unknown[]; edges: { kind: string }[] } }>(
      '/api/workflows/route-loop',
    );
    expect(loop.body.graph.loops).toHaveLength(1);
    expect(loop.body.graph.edges.some((edge) => edge.kind === 'loop')).toBe(true);
  });

  it('runs fork-join-research: every node completes, fork children have conversations and steps', async () => {
    const started = await post<{ executionId: string; threadId: string }>(
      '/api/workflows/fork-join-research/runs',
      { input: { topic: 'the payments service' } },
    );
    expect(started.status).toBe(202);
    const page = await finished(started.body.executionId);
    expect(page.execution.status).toBe('COMPLETED');
    const graph = (await get<{ graph: { nodes: { id: string }[] } }>('/api/workflows/fork-join-research'))
      .body.graph;
    for (const node of graph.nodes) expect(page.nodeStatus[node.id]?.status, node.id).toBe('COMPLETED');
    const children = page.threads.filter((thread) => thread.forkPathId);
    expect(children.map((child) => child.forkPathId).sort()).toEqual([
      'split/facts',
      'split/risks',
      'split/summary',
    ]);
    const facts = children.find((child) => child.forkPathId === 'split/facts')!;
    const conversation = await get<{ messages: { content: string }[] }>(
      `/api/threads/${facts.threadId}/conversation`,
    );
    expect(conversation.body.messages.map((message) => message.content)).toContain(
      'Facts: the service handles 1,200 requests per second at peak.',
    );
    // Before its first step a child holds the conversation its parent had at the fork (the plan).
    const atFork = await get<{ step: number; messages: { content: string }[] }>(
      `/api/threads/${facts.threadId}/conversation?step=0`,
    );
    expect(atFork.body, JSON.stringify(atFork.body)).toMatchObject({ step: 0 });
    expect(atFork.body.messages.map((message) => message.content)).toEqual([
      'Make a research plan for: the payments service',
      'Plan: look at facts, risks, and a one-line summary.',
    ]);

    const root = page.rootThreadId;
    const steps = await get<{ stepCount: number; steps: { step: number; nodeId: string }[] }>(
      `/api/threads/${root}/steps`,
    );
    expect(steps.body.steps.map((step) => step.nodeId)).toEqual(
      expect.arrayContaining(['start', 'plan', 'split', 'merge', 'report', 'end']),
    );
    // The conversation as it was after step 2 (the plan) holds the plan and not the report.
    const early = await get<{ step: number; messages: { content: string }[] }>(
      `/api/threads/${root}/conversation?step=2`,
    );
    const texts = early.body.messages.map((message) => message.content).join('\n');
    expect(texts).toContain('Plan: look at facts');
    expect(texts).not.toContain('Report:');
    const events = await get<{ events: { type: string }[] }>(`/api/threads/${root}/events`);
    expect(events.body.events.map((event) => event.type)).toContain('THREAD_COMPLETED');
    const head = await get<{ status: string; output: { report: string } }>(`/api/threads/${root}`);
    expect(head.body.output.report).toContain('Report:');
    // Each thread's stored bytes, as `inspect --bytes` counts them.
    const inspected = await buildInspectReport(
      createLocalRuntime({ clients }),
      started.body.executionId,
      undefined,
      'all',
      {},
      { storedBytes: createStoredBytesReader(clients, clients) },
    );
    for (const thread of inspected.threads) {
      const stored = await get(`/api/threads/${thread.threadId}/stored-bytes`);
      expect(stored.status).toBe(200);
      expect(stored.body).toEqual({ threadId: thread.threadId, ...thread.storedBytes });
      expect(thread.storedBytes!.items).toBeGreaterThan(0);
    }
    expect((await get('/api/threads/t-nope/stored-bytes')).body).toMatchObject({
      error: { code: 'THREAD_NOT_FOUND' },
    });

    const list = await get<{ executionId: string; status: string; durationMs: number }[]>('/api/executions');
    expect(list.body.find((row) => row.executionId === started.body.executionId)).toMatchObject({
      status: 'COMPLETED',
      durationMs: expect.any(Number),
    });
  });

  it("gives a failed run's reason (its root thread's error) when another process ran it", async () => {
    const fails = {
      id: 'fails',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'work', type: 'CODE', config: { code: "throw new Error('boom')" } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'end' },
      ],
    };
    writeFileSync(join(folder, 'fails.json'), JSON.stringify(fails));
    // An earlier `dev` over the same data ran it; this one has no live run to ask.
    const earlier = await startDevServer({ clients, workflowsDir: folder });
    try {
      const started = await fetch(`${earlier.url}/api/workflows/fails/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      const { executionId } = (await started.json()) as { executionId: string };
      await earlier.close();
      const page = (await finished(executionId)) as Page & { error?: { code: string; message: string } };
      expect(page.execution.status).toBe('FAILED');
      expect(page.error).toEqual({
        code: 'CODE_ERROR',
        message: 'node work: Error: boom (line 1)',
        nodeId: 'work',
      });
    } finally {
      await earlier.close();
      rmSync(join(folder, 'fails.json'));
    }
  });

  it("lists fork children in their FORK's path order, a list's items by index", async () => {
    writeFileSync(join(folder, 'many-forks.json'), JSON.stringify(manyForks));
    try {
      const started = await post<{ executionId: string }>('/api/workflows/many-forks/runs', {
        input: manyForksInput,
      });
      const page = (await finished(started.body.executionId)) as Page & {
        threads: { threadId: string; forkPathId?: string; children: string[] }[];
      };
      expect(page.execution.status).toBe('COMPLETED');
      // They start in the same millisecond: the store's listing (by hashed id) ordered them.
      expect(page.threads.map((thread) => thread.forkPathId ?? 'root')).toEqual([
        'root',
        ...manyForksPathOrder,
      ]);
      const pathOf = new Map(page.threads.map((thread) => [thread.threadId, thread.forkPathId]));
      expect(page.threads[0]!.children.map((id) => pathOf.get(id))).toEqual(manyForksPathOrder);
    } finally {
      rmSync(join(folder, 'many-forks.json'));
    }
  });

  it('streams each node event with the thread it ran on, and a thread event as each thread of a run starts', async () => {
    const stream = await openEventStream();
    const started = await post<{ executionId: string; threadId: string }>(
      '/api/workflows/fork-join-research/runs',
      { input: { topic: 'the payments service' } },
    );
    const { executionId, threadId: rootThreadId } = started.body;
    await stream.until(executionId, 'COMPLETED');
    await stream.close();
    const page = (await get<Page>(`/api/executions/${executionId}`)).body;
    const childOf = (path: string) => page.threads.find((thread) => thread.forkPathId === path)!.threadId;
    const mine = stream.seen.filter((event) => event.data.executionId === executionId);
    const threadOfNode = (nodeId: string) =>
      new Set(mine.filter((e) => e.type === 'node' && e.data.nodeId === nodeId).map((e) => e.data.threadId));
    expect(threadOfNode('start')).toEqual(new Set([rootThreadId]));
    expect(threadOfNode('plan')).toEqual(new Set([rootThreadId]));
    expect(threadOfNode('facts')).toEqual(new Set([childOf('split/facts')]));
    expect(threadOfNode('risks')).toEqual(new Set([childOf('split/risks')]));
    const threadEvents = mine.filter((e) => e.type === 'thread').map((e) => e.data);
    expect(threadEvents).toEqual(
      expect.arrayContaining(
        [rootThreadId, childOf('split/facts'), childOf('split/risks'), childOf('split/summary')].map(
          (threadId) => ({ executionId, threadId, status: 'RUNNING' }),
        ),
      ),
    );
    expect(threadEvents).toHaveLength(4);
  });

  it('streams node, interaction and execution events; an approval answered over the API ends the run', async () => {
    const stream = await openEventStream();
    expect(stream.contentType).toContain('text/event-stream');
    const { executionId, waiting } = await startWaitingTriage();
    const [question] = waiting.pending;
    expect(question).toMatchObject({
      nodeId: 'approve-credit',
      interactionType: 'ask_for_approval',
      answerable: true,
    });
    expect(waiting.nodeStatus['approve-credit']?.status).toBe('WAITING');
    const path = `/api/interactions/${encodeURIComponent(question!.interactionId)}/answer`;

    // Wrong kind of answer, two answers at once, and not an object: 400 with codes.
    expect((await post(path, { select: 1 })).body).toMatchObject({
      error: { code: 'INVALID_INTERACTION_ANSWER' },
    });
    expect((await post(path, { approve: true, reject: true })).status).toBe(400);
    expect((await post(path, [true])).body).toMatchObject({ error: { code: 'API_BAD_REQUEST' } });

    // Two answers at the same moment: one is taken, the other was answered already (the first's
    // step may not have committed yet, so the item still says PENDING).
    const racing = await Promise.all([post(path, { approve: true }), post(path, { approve: true })]);
    expect(racing.map((reply) => reply.status).sort()).toEqual([202, 409]);
    expect(racing.find((reply) => reply.status === 409)!.body).toMatchObject({
      error: { code: 'INTERACTION_ALREADY_ANSWERED' },
    });
    const page = await finished(executionId);
    expect(page.execution.status).toBe('COMPLETED');
    const again = await post(path, { approve: true });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: 'INTERACTION_ALREADY_ANSWERED' } });
    const head = await get<{ variables: { thread: { approved: boolean } } }>(
      `/api/threads/${page.rootThreadId}`,
    );
    expect(head.body.variables.thread.approved).toBe(true);

    await stream.until(executionId, 'COMPLETED');
    await stream.close();
    const mine = stream.seen.filter((event) => event.data.executionId === executionId);
    expect(
      mine.some((e) => e.type === 'node' && e.data.nodeId === 'classify' && e.data.status === 'COMPLETED'),
    ).toBe(true);
    expect(mine.some((e) => e.type === 'interaction' && e.data.status === 'PENDING')).toBe(true);
    expect(mine.some((e) => e.type === 'interaction' && e.data.status === 'ANSWERED')).toBe(true);
  });

  it('takes an answer `stepthread respond` offers from another process: the run goes on, the console shows it answered', async () => {
    const stream = await openEventStream();
    const { executionId, waiting } = await startWaitingTriage();
    const parts = parseInteractionId(waiting.pending[0]!.interactionId)!;
    // What respond does on the same data directory, through the stores alone.
    const store = createInteractionStore(createAwsClients(services.target, services.names));
    const interaction = await store.getInteraction(parts.threadId, parts.nodeId);
    await offerReply(store, interaction, { kind: 'reject', reason: 'not this time' }, 'unused');
    const page = await finished(executionId);
    expect(page.execution.status).toBe('COMPLETED');
    expect(page.pending).toEqual([]);
    const head = await get<{ variables: { thread: { approved: boolean } } }>(
      `/api/threads/${page.rootThreadId}`,
    );
    expect(head.body.variables.thread.approved).toBe(false);
    await stream.until(executionId, 'COMPLETED');
    await stream.close();
    expect(
      stream.seen.some(
        (e) => e.type === 'interaction' && e.data.executionId === executionId && e.data.status === 'ANSWERED',
      ),
    ).toBe(true);
  });

  it('runs each step on the head its previous commit wrote; a run answered after the page read it completes', async () => {
    // The embedded runtime keeps the head a commit wrote for the thread's next step (a GetItem less).
    // The page reads the execution, the thread, its steps, conversation and events while the run
    // waits; the answer then commits on the stored head and the run completes.
    const events = await openEventStream();
    const { executionId, waiting } = await startWaitingTriage();
    const root = waiting.rootThreadId;
    for (const path of ['', '/steps', '/conversation', '/events']) {
      expect((await get(`/api/threads/${root}${path}`)).status).toBe(200);
    }
    headReads.delete(root);
    const answer = `/api/interactions/${encodeURIComponent(waiting.pending[0]!.interactionId)}/answer`;
    expect((await post(answer, { approve: true })).status).toBe(202);
    await events.until(executionId, 'COMPLETED');
    // The answer's step reads the head (the question's own reads came between), compute-credit,
    // reply and end reuse what the step before wrote, and the run's summary reads it once: 5 without reuse.
    expect(headReads.get(root)).toBe(2);
    const page = (await get<Page>(`/api/executions/${executionId}`)).body;
    expect(page.execution.status).toBe('COMPLETED');
    const head = await get<{ status: string; step: number; variables: { thread: Record<string, unknown> } }>(
      `/api/threads/${root}`,
    );
    expect(head.body).toMatchObject({
      status: 'COMPLETED',
      variables: { thread: { approved: true, credit: { amount: 6, currency: 'EUR' } } },
    });
    type Row = { step: number; nodeId: string; logs?: { lines: string[] } };
    const steps = (await get<{ steps: Row[] }>(`/api/threads/${root}/steps`)).body.steps;
    expect(steps.map((step) => step.nodeId)).toEqual([
      'start',
      'classify',
      'is-billing',
      'approve-credit',
      'compute-credit',
      'reply',
      'end',
    ]);
    expect(steps.map((step) => step.step)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // What the CODE node printed is on its step, and only there.
    expect(steps.filter((step) => step.logs).map(({ nodeId, logs }) => ({ nodeId, logs }))).toEqual([
      { nodeId: 'compute-credit', logs: { lines: ['monthly fee 30 approved true'] } },
    ]);
    await events.close();
  });

  it('copies a thread from a middle step and runs the copy to the end', async () => {
    const started = await post<{ executionId: string }>('/api/workflows/fork-join-research/runs', {
      input: { topic: 'copies' },
    });
    const page = await finished(started.body.executionId);
    const root = page.rootThreadId;
    const steps = (await get<{ steps: { step: number; nodeId: string }[] }>(`/api/threads/${root}/steps`))
      .body.steps;
    const report = steps.find((step) => step.nodeId === 'report')!;

    expect((await post(`/api/threads/${root}/copy`, { fromStep: 1 })).body).toMatchObject({
      error: { code: 'COPY_POINT_NOT_FOUND' },
    });
    expect((await post(`/api/threads/${root}/copy`, { fromStep: 'x' })).status).toBe(400);
    const copy = await post<{ threadId: string; status: string; currentNodeId: string }>(
      `/api/threads/${root}/copy`,
      { fromStep: report.step },
    );
    expect(copy.status).toBe(201);
    expect(copy.body).toMatchObject({ status: 'CREATED', currentNodeId: 'report' });
    // Before it runs, the copy's conversation and variables are the source's before `report` ran.
    type At = { step: number; messages: unknown[]; variables: unknown };
    const atCopy = (await get<At>(`/api/threads/${copy.body.threadId}/conversation`)).body;
    const atSource = (await get<At>(`/api/threads/${root}/conversation?step=${report.step - 1}`)).body;
    expect(atCopy.step).toBe(0);
    expect(atCopy.messages.length).toBeGreaterThan(0);
    expect([atCopy.messages, atCopy.variables]).toEqual([atSource.messages, atSource.variables]);

    // Run twice at once (a double click): one run starts, the other is refused.
    const runs = await Promise.all([
      post<{ executionId: string }>(`/api/threads/${copy.body.threadId}/run`, {}),
      post<{ executionId: string }>(`/api/threads/${copy.body.threadId}/run`, {}),
    ]);
    expect(runs.map((reply) => reply.status).sort()).toEqual([202, 409]);
    const run = runs.find((reply) => reply.status === 202)!;
    expect(runs.find((reply) => reply.status === 409)!.body).toMatchObject({
      error: { code: 'INVALID_STATUS_TRANSITION' },
    });
    const copied = await finished(run.body.executionId);
    expect(copied.execution.status).toBe('COMPLETED');
    expect(copied.rootThreadId).toBe(copy.body.threadId);
    // Once it ran, step 0 is still the state it was copied with.
    expect((await get<At>(`/api/threads/${copy.body.threadId}/conversation?step=0`)).body).toMatchObject({
      step: 0,
      messages: atSource.messages,
      variables: atSource.variables,
    });
    const source = (await get<Page>(`/api/executions/${started.body.executionId}`)).body;
    expect(source.copies).toEqual([expect.objectContaining({ threadId: copy.body.threadId })]);
    // A finished thread is not run again.
    const rerun = await post(`/api/threads/${copy.body.threadId}/run`, {});
    expect(rerun.status).toBe(409);
    expect(rerun.body).toMatchObject({ error: { code: 'INVALID_STATUS_TRANSITION' } });
  });

  it("retries a run stopped at its first question as the console's Retry does: the copy asks that question again and completes", async () => {
    const pick = {
      id: 'pick',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'choose',
          type: 'USER_INTERACTION',
          config: {
            userInteractionType: 'ask_for_selection',
            showMessage: 'Priority?',
            options: ['low', 'high'],
          },
        },
        { id: 'end', type: 'END', config: { output: '{{nodes.choose.option}}' } },
      ],
      edges: [
        { from: 'start', to: 'choose' },
        { from: 'choose', to: 'end' },
      ],
    };
    writeFileSync(join(folder, 'pick.json'), JSON.stringify(pick));
    type Stopped = Page & { error?: { code: string; nodeId?: string } };
    const waitingOrEnded = (executionId: string) =>
      until(
        async () => (await get<Stopped>(`/api/executions/${executionId}`)).body,
        (page) => page.pending.length > 0 || TERMINAL.has(page.execution.status),
      );
    try {
      const started = await post<{ executionId: string }>('/api/workflows/pick/runs', { input: {} });
      await waitingOrEnded(started.body.executionId);
      expect((await post(`/api/executions/${started.body.executionId}/cancel`, {})).status).toBe(200);
      const stopped = (await finished(started.body.executionId)) as Stopped;
      expect(stopped.execution.status).toBe('CANCELLED');
      // Retry: a copy from the node its error names, none for a cancelled run (as it stopped), run at once.
      expect(stopped.error).toMatchObject({ code: 'RUN_CANCELLED' });
      expect(stopped.error?.nodeId).toBeUndefined();
      const copy = await post<{ threadId: string; currentNodeId: string }>(
        `/api/threads/${stopped.rootThreadId}/copy`,
        {},
      );
      expect(copy.body).toMatchObject({ currentNodeId: 'choose' });
      const retried = await post<{ executionId: string }>(`/api/threads/${copy.body.threadId}/run`, {});
      expect(retried.status).toBe(202);

      const asking = await waitingOrEnded(retried.body.executionId);
      expect(asking.execution.status).toBe('RUNNING');
      expect(asking.pending).toEqual([expect.objectContaining({ nodeId: 'choose', answerable: true })]);
      const answer = `/api/interactions/${encodeURIComponent(asking.pending[0]!.interactionId)}/answer`;
      expect((await post(answer, { select: 1 })).status).toBe(202);
      const done = await finished(retried.body.executionId);
      expect(done.execution.status).toBe('COMPLETED');
      const head = (await get<{ output: unknown }>(`/api/threads/${copy.body.threadId}`)).body;
      expect(head.output).toBe('high');
    } finally {
      rmSync(join(folder, 'pick.json'));
    }
  });

  it('copies with edits (`set`, `input`): the copy runs with them and records them; a refused edit is a coded 400 and no copy', async () => {
    const { executionId, waiting } = await startWaitingTriage();
    const root = waiting.rootThreadId;
    const answer = `/api/interactions/${encodeURIComponent(waiting.pending[0]!.interactionId)}/answer`;
    expect((await post(answer, { reject: true })).status).toBe(202);
    expect((await finished(executionId)).execution.status).toBe('COMPLETED');
    const copyOf = (body: Record<string, unknown>) =>
      post<{ threadId: string; metadata: { edits?: unknown[] }; error?: { code: string } }>(
        `/api/threads/${root}/copy`,
        { fromNodeId: 'compute-credit', ...body },
      );
    const copiesBefore = (await get<Page>(`/api/executions/${executionId}`)).body.copies;
    for (const [body, code] of [
      [{ set: { aproved: true } }, 'UNKNOWN_VARIABLE_REFERENCE'],
      [{ set: { approved: 'yes' } }, 'INVALID_VARIABLE'],
      [{ set: ['approved'] }, 'INVALID_COPY_EDIT'],
      [{ input: 'x' }, 'INPUT_INVALID'],
    ] as const) {
      const refused = await copyOf(body);
      expect([refused.status, refused.body.error?.code]).toEqual([400, code]);
    }
    expect((await get<Page>(`/api/executions/${executionId}`)).body.copies).toEqual(copiesBefore);

    const input = { ticket: { ...TICKET.ticket, monthlyFee: 50 } };
    const copy = await copyOf({ set: { approved: true }, input });
    expect(copy.status).toBe(201);
    expect(copy.body.metadata.edits).toEqual([
      { kind: 'variable', name: 'approved', scope: 'thread', value: true, at: expect.any(String) },
      { kind: 'input', value: input, at: expect.any(String) },
    ]);
    const run = await post<{ executionId: string }>(`/api/threads/${copy.body.threadId}/run`, {});
    expect(run.status).toBe(202);
    expect((await finished(run.body.executionId)).execution.status).toBe('COMPLETED');
    const head = await get<{ variables: { thread: Record<string, unknown> } }>(
      `/api/threads/${copy.body.threadId}`,
    );
    expect(head.body.variables.thread).toMatchObject({
      approved: true,
      credit: { amount: 10, currency: 'EUR' },
    });
  });

  it('copies with workflow edits (`nodeConfig`, `profile`): the copy runs with them and records them; a refused edit is a 400 with every problem and no copy', async () => {
    const { executionId, waiting } = await startWaitingTriage();
    const root = waiting.rootThreadId;
    const answer = `/api/interactions/${encodeURIComponent(waiting.pending[0]!.interactionId)}/answer`;
    expect((await post(answer, { reject: true })).status).toBe(202);
    expect((await finished(executionId)).execution.status).toBe('COMPLETED');
    const copyOf = (body: Record<string, unknown>) =>
      post<{
        threadId: string;
        metadata: { edits?: unknown[]; workflowEdits?: unknown[] };
        error?: { code: string };
        errors?: { code: string }[];
      }>(`/api/threads/${root}/copy`, { fromNodeId: 'compute-credit', ...body });
    const copiesBefore = (await get<Page>(`/api/executions/${executionId}`)).body.copies;
    for (const [body, code] of [
      [{ nodeConfig: { 'compute-credt': { code: 'return 1' } } }, 'NODE_NOT_FOUND'],
      [{ nodeConfig: { 'compute-credit': { cod: 'return 1' } } }, 'UNKNOWN_KEY'],
      [{ nodeConfig: { 'compute-credit': { code: 5 } } }, 'INVALID_NODE_CONFIG'],
      [{ nodeConfig: { 'compute-credit': 'return 1' } }, 'INVALID_COPY_EDIT'],
      [{ profile: { other: { provider: 'scripted' } } }, 'UNKNOWN_PROFILE'],
      [{ profile: { default: { provider: 'nobody' } } }, 'SCHEMA_INVALID'],
    ] as const) {
      const refused = await copyOf(body);
      expect([refused.status, refused.body.error?.code]).toEqual([400, code]);
    }
    expect((await get<Page>(`/api/executions/${executionId}`)).body.copies).toEqual(copiesBefore);

    const code = "return { amount: 99, currency: 'EUR' }";
    const profile = { provider: 'scripted', responses: ['Credit noted.'] };
    const copy = await copyOf({ nodeConfig: { 'compute-credit': { code } }, profile: { default: profile } });
    expect(copy.status).toBe(201);
    expect(copy.body.metadata.edits).toEqual([
      { kind: 'profile', profileId: 'default', value: profile, at: expect.any(String) },
      { kind: 'nodeConfig', nodeId: 'compute-credit', key: 'code', value: code, at: expect.any(String) },
    ]);
    const run = await post<{ executionId: string }>(`/api/threads/${copy.body.threadId}/run`, {});
    expect(run.status).toBe(202);
    expect((await finished(run.body.executionId)).execution.status).toBe('COMPLETED');
    const head = await get<{ output: Record<string, unknown> }>(`/api/threads/${copy.body.threadId}`);
    expect(head.body.output).toMatchObject({ credit: { amount: 99 }, reply: 'Credit noted.' });
    // The copy's execution page lists its edits on its thread, as `inspect --json` does.
    const copyPage = await get<{ threads: { threadId: string; edits?: unknown[] }[] }>(
      `/api/executions/${run.body.executionId}`,
    );
    expect(copyPage.body.threads.find((thread) => thread.threadId === copy.body.threadId)?.edits).toEqual(
      copy.body.metadata.edits,
    );
  });

  it("lists no steps for a copy that has not run (its source's are not its own), and refuses an inverted or non-step range", async () => {
    const started = await post<{ executionId: string }>('/api/workflows/fork-join-research/runs', {
      input: { topic: 'ranges' },
    });
    const root = (await finished(started.body.executionId)).rootThreadId;
    type Steps = { stepCount: number; from: number; steps: { step: number }[] };
    const all = (await get<Steps>(`/api/threads/${root}/steps`)).body;
    const report = all.steps.at(-2)!.step;
    const copy = (await post<{ threadId: string }>(`/api/threads/${root}/copy`, { fromStep: report })).body;
    // What the page asks after "Copy from here": the copy's own steps, none yet (was 500 with
    // DynamoDB's "BETWEEN operator requires upper bound" text).
    for (const query of ['', '?from=1', '?limit=5']) {
      const own = await get<Steps>(`/api/threads/${copy.threadId}/steps${query}`);
      expect({ query, status: own.status, stepCount: own.body.stepCount, steps: own.body.steps }).toEqual({
        query,
        status: 200,
        stepCount: 0,
        steps: [],
      });
    }
    expect((await get(`/api/threads/${copy.threadId}/events`)).status).toBe(200);
    // Past the end: nothing, not an error.
    const past = await get<Steps>(`/api/threads/${root}/steps?from=${all.stepCount + 5}`);
    expect([past.status, past.body.steps]).toEqual([200, []]);
    const last = await get<Steps>(`/api/threads/${root}/steps?from=2&to=3`);
    expect(last.body.steps.map((step) => step.step)).toEqual([2, 3]);
    const refused: [string, string][] = [
      ['steps?from=10&to=5', '"from" (10) is after "to" (5)'],
      ['steps?from=-1', '"from" must be a whole number ≥ 1'],
      ['steps?to=1.5', '"to" must be a whole number ≥ 1'],
      ['steps?from=0', '"from" must be a whole number ≥ 1'],
      ['steps?limit=0', '"limit" must be a whole number ≥ 1'],
      ['steps?from=99999999999999999999', '"from" must be a whole number ≥ 1'],
      ['events?from=-2', '"from" must be a whole number ≥ 1'],
      ['events?limit=x', '"limit" must be a whole number ≥ 1'],
    ];
    for (const [query, message] of refused) {
      const reply = await get<{ error: { code: string; message: string } }>(`/api/threads/${root}/${query}`);
      expect({ query, status: reply.status, code: reply.body.error.code }).toEqual({
        query,
        status: 400,
        code: 'API_BAD_REQUEST',
      });
      expect(reply.body.error.message).toContain(message);
    }
  });

  it('answers malformed and unknown requests with 4xx and a coded JSON error', async () => {
    const cases: [Promise<Reply>, number, string][] = [
      [get('/api/nothing-here'), 404, 'API_NOT_FOUND'],
      // A malformed percent-escape, in the console's paths and in an API parameter.
      [get('/%zz'), 400, 'API_BAD_REQUEST'],
      [get('/api/executions/%E0%A4%A'), 400, 'API_BAD_REQUEST'],
      [get('/api/workflows/no-such-workflow'), 404, 'WORKFLOW_NOT_FOUND'],
      [get('/api/executions/no-such-execution'), 404, 'EXECUTION_NOT_FOUND'],
      [get('/api/threads/t-nothing'), 404, 'THREAD_NOT_FOUND'],
      [get('/api/threads/t-nothing/steps?from=x'), 400, 'API_BAD_REQUEST'],
      [post('/api/workflows/fork-join-research/runs', '{"input":'), 400, 'API_BAD_REQUEST'],
      [post('/api/workflows/fork-join-research/runs', { input: [1, 2] }), 400, 'API_BAD_REQUEST'],
      // What run refuses in --input: an integer JSON would round, a value nested too deep.
      [
        post('/api/workflows/fork-join-research/runs', '{"input": {"orderId": 12345678901234567891}}'),
        400,
        'INPUT_NUMBER_INEXACT',
      ],
      [
        post(
          '/api/workflows/fork-join-research/runs',
          `{"input": {"a": ${'['.repeat(100)}${']'.repeat(100)}}}`,
        ),
        400,
        'VALUE_TOO_DEEP',
      ],
      [post('/api/workflows/no-such-workflow/runs', {}), 404, 'WORKFLOW_NOT_FOUND'],
      [post('/api/workflows/broken/runs', {}), 422, 'NO_PATH_TO_END'],
      [
        post('/api/workflows/fork-join-research/runs', {}, { 'content-type': 'text/plain' }),
        415,
        'API_UNSUPPORTED_MEDIA_TYPE',
      ],
      [post('/api/interactions/nothing/answer', { approve: true }), 400, 'API_BAD_REQUEST'],
      [post('/api/interactions/t-x%2Fnode/answer', { approve: true }), 404, 'INTERACTION_NOT_FOUND'],
      [post('/api/executions', {}), 405, 'API_METHOD_NOT_ALLOWED'],
    ];
    for (const [reply, status, code] of cases) {
      const { status: got, body } = await reply;
      expect({ got, code: (body.error as { code: string }).code }).toEqual({ got: status, code });
    }
    const big = await post('/api/workflows/fork-join-research/runs', {
      input: { text: 'x'.repeat(1_100_000) },
    });
    expect(big.status).toBe(413);
  });

  it('refuses writes from other origins and requests for another host', async () => {
    const foreign = await post(
      '/api/workflows/fork-join-research/runs',
      {},
      { origin: 'https://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ error: { code: 'API_FORBIDDEN_ORIGIN' } });
    const crossSite = await post(
      '/api/workflows/fork-join-research/runs',
      {},
      { 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.status).toBe(403);
    // DNS rebinding: a page of another name resolving to 127.0.0.1.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${server.url}/api/workflows`,
        { headers: { host: `attacker.example:${server.port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
  });
});
