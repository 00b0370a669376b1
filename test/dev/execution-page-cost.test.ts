/**
 * What a refresh of the execution page reads. The console asks for `GET /api/executions/:id` again
 * after each burst of live events; each thread's node runs are kept between requests, so a refresh
 * reads the step records committed since the previous one, not the thread's whole history: the same
 * count after a loop of 300 iterations as after one of 1,500. And the page says what it said
 * before: a server that showed a run while it ran answers exactly as a fresh one does.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeRunsOf } from '../../cli/commands/inspect.ts';
import { createNodeRunsCache, NodeRunFold } from '../../cli/dev/node-runs-cache.ts';
import { type DevServer, LATEST_STEPS, startDevServer } from '../../cli/dev/server.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { longLoop } from '../support/long-loop.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']);

/** The long loop (`input.count` iterations), then a question, then `input.more` iterations more. */
const longAsk = {
  ...longLoop,
  id: 'long-ask',
  nodes: [
    ...longLoop.nodes.filter((node) => node.id !== 'end'),
    {
      id: 'ask',
      type: 'USER_INTERACTION',
      config: { userInteractionType: 'ask_for_approval', showMessage: 'Go on?', timeoutSeconds: 86400 },
    },
    {
      id: 'again',
      type: 'LOOP_START',
      config: { loopId: 'm', dataSource: '{{input.more}}', maxIterations: 100 },
    },
    {
      id: 'inc2',
      type: 'VARIABLE',
      config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
    },
    { id: 'mend', type: 'LOOP_END', config: { loopId: 'm' } },
    { id: 'end', type: 'END', config: { output: { n: '{{n}}' } } },
  ],
  edges: [
    { from: 'start', to: 'loop' },
    { from: 'loop', to: 'inc' },
    { from: 'inc', to: 'lend' },
    { from: 'lend', to: 'ask' },
    { from: 'ask', to: 'again' },
    { from: 'again', to: 'inc2' },
    { from: 'inc2', to: 'mend' },
    { from: 'mend', to: 'end' },
  ],
};

/** start → `review` (a SUBGRAPH whose child's CODE node throws) → end. */
const reviewFails = {
  id: 'review-fails',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'review',
      type: 'SUBGRAPH',
      config: {
        workflow: {
          id: 'child',
          version: 1,
          nodes: [
            { id: 'begin', type: 'START' },
            { id: 'work', type: 'CODE', config: { code: "throw new Error('boom')" } },
            { id: 'finish', type: 'END' },
          ],
          edges: [
            { from: 'begin', to: 'work' },
            { from: 'work', to: 'finish' },
          ],
        },
      },
    },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'review' },
    { from: 'review', to: 'end' },
  ],
};

let services: LocalServices;
let clients: AwsClients;
let server: DevServer;
let folder: string;

/** What the stores answered while counting: requests, items, and whole step records among them. */
const read = { counting: false, requests: 0, items: 0, stepRecords: 0 };

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-page-cost-'));
  for (const example of ['fork-join-research', 'map-reduce', 'support-triage']) {
    cpSync(join(ROOT, 'examples', `${example}.json`), join(folder, `${example}.json`));
  }
  cpSync(join(ROOT, 'test', 'fixtures', 'valid', 'subgraph.json'), join(folder, 'two-reviews.json'));
  writeFileSync(join(folder, 'review-fails.json'), JSON.stringify(reviewFails));
  writeFileSync(join(folder, 'long-ask.json'), JSON.stringify(longAsk));
  for (const count of [300, 1500]) {
    writeFileSync(
      join(folder, `long-ask-${count}.json`),
      JSON.stringify({ ...longAsk, id: `long-ask-${count}` }),
    );
  }
  services = await startLocalServices({ ephemeral: true });
  clients = createAwsClients(services.target, services.names);
  aroundCommands(clients.dynamo, async (_call, next) => {
    const response = (await next()) as { Items?: Record<string, unknown>[]; Item?: unknown };
    if (read.counting) {
      const items = response.Items ?? (response.Item ? [response.Item as Record<string, unknown>] : []);
      read.requests += 1;
      read.items += items.length;
      read.stepRecords += items.filter((item) => 'events' in item && 'result' in item).length;
    }
    return response;
  });
  server = await startDevServer({ clients, workflowsDir: folder });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await services?.close();
  rmSync(folder, { recursive: true, force: true });
});

async function get<T>(path: string, on: DevServer = server): Promise<T> {
  const response = await fetch(`${on.url}${path}`);
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

async function post<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status, path).toBeLessThan(300);
  return (await response.json()) as T;
}

/** What one request read from the stores. */
async function counted<T>(
  path: string,
): Promise<{ body: T; requests: number; items: number; stepRecords: number }> {
  Object.assign(read, { counting: true, requests: 0, items: 0, stepRecords: 0 });
  try {
    const body = await get<T>(path);
    return { body, requests: read.requests, items: read.items, stepRecords: read.stepRecords };
  } finally {
    read.counting = false;
  }
}

/** Reads until `done` holds (the run progresses on the server, not on a clock). */
async function until<T>(readIt: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await readIt();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

interface Page {
  execution: { status: string };
  rootThreadId: string;
  threads: { threadId: string; nodes: unknown[]; earlierRuns?: number }[];
  nodeStatus: Record<string, { runs: number; status: string }>;
  pending: { interactionId: string }[];
  executions?: { executionId: string }[];
}

const pageOf = (executionId: string) => get<Page>(`/api/executions/${executionId}`);
/** The page of the latest execution of a run that continued as new (the run's own page otherwise). */
const latestPageOf = async (executionId: string) => {
  const page = await pageOf(executionId);
  const latest = page.executions?.at(-1)?.executionId;
  return latest === undefined || latest === executionId ? page : pageOf(latest);
};
const finished = (executionId: string) =>
  until(
    () => latestPageOf(executionId),
    (page) => TERMINAL.has(page.execution.status),
  );
const waiting = (executionId: string) =>
  until(
    () => latestPageOf(executionId),
    (page) => page.pending.length > 0,
  );
const answer = (interactionId: string) =>
  post(`/api/interactions/${encodeURIComponent(interactionId)}/answer`, { approve: true });
const stepOf = async (threadId: string) => (await get<{ step: number }>(`/api/threads/${threadId}`)).step;

/**
 * A long-ask run of `count` iterations, shown while it runs until its question; then the page
 * once more, the answer, 10 iterations more (33 steps) while the page is not asked, and the page
 * again: what each of those two requests read.
 */
async function refreshesOfLongRun(count: number) {
  // A workflow of its own, so the runs' pages list the same executions of their workflow (copies).
  const { executionId } = await post<{ executionId: string }>(`/api/workflows/long-ask-${count}/runs`, {
    input: { count, more: 10 },
  });
  const asked = await waiting(executionId);
  const threadId = asked.rootThreadId;
  const before = await stepOf(threadId);
  const again = await counted<Page>(`/api/executions/${executionId}`);
  await answer(asked.pending[0]!.interactionId);
  // The thread's head alone, until it ends: no page read in between.
  await until(
    () => get<{ status: string }>(`/api/threads/${threadId}`),
    (head) => TERMINAL.has(head.status),
  );
  // And its execution, which ends after its thread: a page read between the two would find the run
  // still going (a read more or less than the other run's page, by timing alone).
  await until(
    () => get<{ executionId: string; status: string }[]>(`/api/executions?workflow=long-ask-${count}`),
    (rows) => TERMINAL.has(rows.find((row) => row.executionId === executionId)?.status ?? ''),
  );
  const after = await stepOf(threadId);
  const refreshed = await counted<Page>(`/api/executions/${executionId}`);
  return { executionId, threadId, before, after, again, refreshed };
}

/** The long runs of the first test, which the others read again. */
const seen: Awaited<ReturnType<typeof refreshesOfLongRun>>[] = [];

describe('the execution page of a long run, refreshed', () => {
  it('reads only the steps committed since the previous request, whatever the run length', async () => {
    // One execution each (no continue-as-new), so the two pages differ by the runs' length alone.
    process.env.STEPTHREAD_CONTINUE_AFTER_EVENTS = 'off';
    try {
      for (const count of [300, 1500]) seen.push(await refreshesOfLongRun(count));
    } finally {
      delete process.env.STEPTHREAD_CONTINUE_AFTER_EVENTS;
    }
    const [short, long] = seen as [(typeof seen)[0], (typeof seen)[0]];
    for (const [run, count] of [
      [short, 300],
      [long, 1500],
    ] as const) {
      // START and the loop's 3 × count + 1 steps; the question's step commits with its answer.
      expect(run.before).toBe(3 * count + 2);
      // Nothing new since the page was last shown (at the question): no step record read.
      expect(run.again.stepRecords).toBe(0);
      // The answer's step and 10 iterations: those records only.
      expect(run.refreshed.stepRecords).toBe(run.after - run.before);
      expect(run.refreshed.body.nodeStatus.inc).toMatchObject({ runs: count, status: 'COMPLETED' });
      expect(run.refreshed.body.nodeStatus.inc2).toMatchObject({ runs: 10, status: 'COMPLETED' });
      expect(run.refreshed.body.threads[0]).toMatchObject({
        nodes: expect.any(Array),
        earlierRuns: run.after - LATEST_STEPS,
      });
    }
    expect(long.after - long.before).toBe(short.after - short.before);
    // The same reads, request for request and item for item, after 900 steps as after 4,500.
    expect(long.refreshed.stepRecords).toBe(short.refreshed.stepRecords);
    expect(long.refreshed.items).toBe(short.refreshed.items);
    expect(long.refreshed.requests).toBe(short.refreshed.requests);
    expect(long.again.items).toBe(short.again.items);
  }, 300_000);

  it('reads no step record, batch of events or second head of the threads of a finished fork over 200 items', async () => {
    const documents = Array.from({ length: 200 }, (_, i) => ({ id: `d${i}`, text: `document ${i}` }));
    const { executionId } = await post<{ executionId: string }>('/api/workflows/map-reduce/runs', {
      input: { documents },
    });
    await finished(executionId);
    const refreshed = await counted<Page>(`/api/executions/${executionId}`);
    expect(refreshed.body.threads).toHaveLength(201);
    expect(refreshed.body.nodeStatus.summarise).toMatchObject({ runs: 200, status: 'COMPLETED' });
    expect(refreshed.stepRecords).toBe(0);
    // Each thread's head once, as the execution's threads are listed; the rest does not grow with them.
    expect(refreshed.items).toBeLessThan(201 + 10);
  });

  it("the executions list and a thread's steps and events read no more on the longer run", async () => {
    const list = await counted<unknown[]>('/api/executions');
    expect(list.stepRecords).toBe(0);
    const reads = [];
    for (const { threadId } of seen) {
      reads.push({
        steps: (await counted(`/api/threads/${threadId}/steps`)).stepRecords,
        events: (await counted(`/api/threads/${threadId}/events`)).stepRecords,
      });
    }
    expect(reads).toEqual([
      { steps: LATEST_STEPS, events: LATEST_STEPS },
      { steps: LATEST_STEPS, events: LATEST_STEPS },
    ]);
  });
});

describe('the execution page with its node runs kept between requests', () => {
  it('says exactly what a fresh server says: forks, a map, a question, subgraphs, copies, a long loop', async () => {
    const start = async (workflowId: string, input: unknown) =>
      (await post<{ executionId: string }>(`/api/workflows/${workflowId}/runs`, { input })).executionId;
    const forked = await start('fork-join-research', { topic: 'caching' });
    const mapped = await start('map-reduce', {
      documents: ['The cache keeps each thread.', 'A refresh reads what is new.', 'Old steps never change.'],
    });
    const subgraphs = await start('two-reviews', {});
    const failing = await start('review-fails', {});
    const triage = await start('support-triage', {
      ticket: { subject: 'Double billing in March', customer: 'Ana', monthlyFee: 30 },
    });
    // Long enough to continue as new: its page follows the chain of executions.
    const continued = await start('long-ask', { count: 1500, more: 2 });
    for (const executionId of [forked, mapped, subgraphs, failing]) await finished(executionId);
    for (const executionId of [triage, continued]) {
      await answer((await waiting(executionId)).pending[0]!.interactionId);
      await finished(executionId);
    }
    expect(
      (await get<{ executions?: unknown[] }>(`/api/executions/${continued}`)).executions?.length,
    ).toBeGreaterThan(1);

    // A copy of the fork's root from its report, and one of the long run from its 40th step (its
    // page lists the source's runs before its own), each run to the end.
    const copies: string[] = [];
    const forkRoot = (await pageOf(forked)).rootThreadId;
    const forkSteps = await get<{ steps: { step: number; nodeId: string }[] }>(
      `/api/threads/${forkRoot}/steps`,
    );
    const report = forkSteps.steps.find((step) => step.nodeId === 'report')!;
    const sources = [
      { threadId: forkRoot, fromStep: report.step },
      { threadId: seen[0]!.threadId, fromStep: 40 },
    ];
    for (const { threadId, fromStep } of sources) {
      const copy = await post<{ threadId: string }>(`/api/threads/${threadId}/copy`, { fromStep });
      const { executionId } = await post<{ executionId: string }>(`/api/threads/${copy.threadId}/run`, {});
      copies.push(executionId);
      const page = await until(
        () => latestPageOf(executionId),
        (shown) => shown.pending.length > 0 || TERMINAL.has(shown.execution.status),
      );
      if (page.pending.length > 0) await answer(page.pending[0]!.interactionId);
      await finished(executionId);
    }

    const fresh = await startDevServer({ clients, workflowsDir: folder });
    try {
      const executions = [
        forked,
        mapped,
        subgraphs,
        failing,
        triage,
        ...copies,
        ...seen.map((run) => run.executionId),
      ];
      for (const executionId of executions) {
        const path = `/api/executions/${executionId}`;
        // A failed run's `error` too: a fresh one, which never ran it, reads it from its root thread.
        const warmed = await get<Record<string, unknown>>(path);
        expect(JSON.stringify(warmed), executionId).toBe(JSON.stringify(await get(path, fresh)));
      }
      const copied = (await get<Page>(`/api/executions/${copies[1]}`)).threads[0]!;
      expect(copied.earlierRuns).toBeGreaterThan(0);
      const failed = await get<Page>(`/api/executions/${failing}`);
      expect(failed.nodeStatus.review?.status).toBe('FAILED');
    } finally {
      await fresh.close();
    }
  }, 300_000);
});

describe('NodeRunFold', () => {
  it('folds a stream given in parts as nodeRunsOf folds it whole, wherever it is cut', async () => {
    const executions =
      await get<{ executionId: string; workflowId: string; rootThreadId: string }[]>('/api/executions');
    for (const { rootThreadId, workflowId } of executions.filter((row) =>
      ['two-reviews', 'review-fails', 'fork-join-research'].includes(row.workflowId),
    )) {
      const { events } = await get<{ events: StepthreadEvent[] }>(
        `/api/threads/${rootThreadId}/events?from=1`,
      );
      const whole = nodeRunsOf(events);
      for (let cut = 0; cut <= events.length; cut += 1) {
        const fold = new NodeRunFold(3);
        fold.push(events.slice(0, cut));
        fold.push(events.slice(cut));
        const { latest, total, byNode } = fold.summary();
        expect([latest, total], `${workflowId} cut at ${cut}`).toEqual([whole.slice(-3), whole.length]);
        expect([...byNode.keys()]).toEqual([...new Set(whole.map((run) => run.nodeId))]);
      }
    }
  });
});

describe('NodeRunFold tool calls', () => {
  it("adds up a node's tool calls, and the failed ones, over its runs (the graph marks a node with any failed)", () => {
    const run = (nodeId: string, second: number): StepthreadEvent[] =>
      [
        {
          type: 'NODE_STARTED',
          threadId: 't',
          nodeId,
          nodeType: 'LLM',
          at: `2026-01-01T00:00:0${second}.000Z`,
        },
        {
          type: 'NODE_COMPLETED',
          threadId: 't',
          nodeId,
          status: 'COMPLETED',
          at: `2026-01-01T00:00:0${second + 1}.000Z`,
        },
      ] as StepthreadEvent[];
    const fold = new NodeRunFold(3);
    fold.push(run('agent', 0), { toolCalls: { calls: 2, failed: 2 } });
    fold.push(run('weigher', 2), { toolCalls: { calls: 1, failed: 0 } });
    fold.push(run('agent', 4), { toolCalls: { calls: 3, failed: 1, approvals: 1 } });
    fold.push(run('plain', 6));
    const { byNode } = fold.summary();
    expect(byNode.get('agent')).toMatchObject({ runs: 2, toolCalls: { calls: 5, failed: 3 } });
    expect(byNode.get('weigher')?.toolCalls).toEqual({ calls: 1, failed: 0 });
    expect(byNode.get('plain')?.toolCalls).toBeUndefined();
  });
});

describe('createNodeRunsCache', () => {
  it('keeps the threads shown last, at most its capacity, and reads a dropped one whole again', async () => {
    const stepsOf = (threadId: string) =>
      Array.from({ length: 5 }, (_, i) => ({
        step: i + 1,
        events: [
          {
            type: 'NODE_STARTED',
            threadId,
            nodeId: 'work',
            nodeType: 'CODE',
            at: '2026-01-01T00:00:00.000Z',
          },
          {
            type: 'NODE_COMPLETED',
            threadId,
            nodeId: 'work',
            status: 'COMPLETED',
            at: '2026-01-01T00:00:01.000Z',
          },
        ] as StepthreadEvent[],
      }));
    let recordsRead = 0;
    const store = {
      getThread: () => Promise.reject(new Error('no copies here')),
      getCopySource: () => Promise.reject(new Error('no copies here')),
      readJournal: async (threadId: string) => ({
        executionHistory: [],
        events: [{ type: 'THREAD_COMPLETED', threadId }] as StepthreadEvent[],
        logs: [],
        positions: [],
        length: stepsOf(threadId).length,
      }),
      readSteps: async (threadId: string, range: { from?: number; to?: number } = {}) => {
        const records = stepsOf(threadId).filter(
          ({ step }) => step >= (range.from ?? 1) && step <= (range.to ?? Number.POSITIVE_INFINITY),
        );
        recordsRead += records.length;
        return records;
      },
    } as unknown as Parameters<typeof createNodeRunsCache>[0];
    const cache = createNodeRunsCache(store, 3, 2);
    const show = async (threadId: string) => {
      recordsRead = 0;
      const summary = await cache.nodeRunsOf({ id: threadId, metadata: {} } as Thread);
      expect(summary).toMatchObject({ total: 5, latest: { length: 3 } });
      expect(summary.byNode.get('work')).toMatchObject({
        runs: 5,
        last: { status: 'COMPLETED', durationMs: 1000 },
      });
      return recordsRead;
    };
    expect([await show('a'), await show('b'), await show('a')]).toEqual([5, 5, 0]);
    // c takes the place of b, the least recently shown; b then takes c's, and c a's.
    expect([await show('c'), cache.size, await show('a'), await show('b')]).toEqual([5, 2, 0, 5]);
    expect([await show('c'), await show('b'), cache.size]).toEqual([5, 0, 2]);
  });
});
