/**
 * The dev API on a long thread (a LOOP of 150 iterations: 453 steps): its steps and events come a
 * page at a time — by default those of the latest 100 steps, `?from=` reads earlier — and only the
 * step records of the page are read, so the execution page neither downloads nor renders thousands
 * of rows (the browser side: test/dev/console.browser.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, LATEST_STEPS, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { valid } from '../e2e/helpers.ts';
import { longLoop } from '../support/long-loop.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

let services: LocalServices;
let server: DevServer;
let folder: string;
let threadId = '';
let executionId = '';
/** Whole step records (they carry their events) that the stores returned. */
let stepRecordsRead = 0;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-long-'));
  services = await startLocalServices({ ephemeral: true });
  const clients = createAwsClients(services.target, services.names);
  aroundCommands(clients.dynamo, async (_call, next) => {
    const response = (await next()) as { Items?: Record<string, unknown>[] };
    stepRecordsRead += (response.Items ?? []).filter((item) => 'events' in item && 'result' in item).length;
    return response;
  });
  const outcome = await createLocalRuntime({ clients })
    .prepare(valid(longLoop), { continueAfterEvents: false })
    .run({ count: 150 });
  expect(outcome.status).toBe('COMPLETED');
  threadId = outcome.threadId;
  executionId = outcome.executionId;
  server = await startDevServer({ clients, workflowsDir: folder });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await services?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** The answer's body and its size in bytes, and the step records reading it took. */
async function get<T>(path: string): Promise<{ body: T; bytes: number; records: number }> {
  stepRecordsRead = 0;
  const response = await fetch(`${server.url}${path}`);
  expect(response.status).toBe(200);
  const text = await response.text();
  return { body: JSON.parse(text) as T, bytes: Buffer.byteLength(text), records: stepRecordsRead };
}

interface Steps {
  stepCount: number;
  from: number;
  steps: { step: number; nodeId: string }[];
}
interface Events {
  stepCount: number;
  from: number;
  events: { type: string; nodeId?: string }[];
}

const started = (events: Events['events']) => events.filter((event) => event.type === 'NODE_STARTED');

describe('the dev API on a thread of 453 steps', () => {
  it('gives its latest 100 steps by default, reading those records only, and earlier ones from ?from=', async () => {
    expect(LATEST_STEPS).toBe(100);
    const latest = await get<Steps>(`/api/threads/${threadId}/steps`);
    expect(latest.body).toMatchObject({ stepCount: 453, from: 354 });
    expect(latest.body.steps.map((row) => row.step)).toEqual(Array.from({ length: 100 }, (_, i) => 354 + i));
    expect(latest.records).toBe(100);

    const earlier = await get<Steps>(`/api/threads/${threadId}/steps?from=254`);
    expect(earlier.body.from).toBe(254);
    expect(earlier.body.steps).toHaveLength(200);
    const all = await get<Steps>(`/api/threads/${threadId}/steps?from=1`);
    expect(all.body.steps).toHaveLength(453);
    expect(all.body.steps.slice(-100)).toEqual(latest.body.steps);
    expect(latest.bytes * 4).toBeLessThan(all.bytes);
    // A range, as before; `limit` sets how many of the latest.
    expect((await get<Steps>(`/api/threads/${threadId}/steps?from=1&to=3`)).body.steps).toHaveLength(3);
    expect((await get<Steps>(`/api/threads/${threadId}/steps?to=3`)).body).toMatchObject({ from: 1 });
    const ten = await get<Steps>(`/api/threads/${threadId}/steps?limit=10`);
    expect(ten.body.steps.map((row) => row.step)).toEqual(Array.from({ length: 10 }, (_, i) => 444 + i));
  });

  it('gives the events of those latest 100 steps by default (and all of them from step 1)', async () => {
    const latest = await get<Events>(`/api/threads/${threadId}/events`);
    expect(latest.body).toMatchObject({ stepCount: 453, from: 354 });
    expect(started(latest.body.events)).toHaveLength(100);
    expect(latest.records).toBe(100);
    // The thread's own events, recorded outside steps, are there whatever the window.
    expect(latest.body.events.map((event) => event.type)).toContain('THREAD_COMPLETED');

    const all = await get<Events>(`/api/threads/${threadId}/events?from=1`);
    expect(started(all.body.events)).toHaveLength(453);
    expect(all.body.events.slice(-latest.body.events.length)).toEqual(latest.body.events);
    expect(latest.bytes * 4).toBeLessThan(all.bytes);
    const earlier = await get<Events>(`/api/threads/${threadId}/events?from=254`);
    expect(started(earlier.body.events)).toHaveLength(200);
  });

  it('lists the latest 100 node runs of each thread on the execution page, counting them all per node', async () => {
    type Page = {
      threads: { threadId: string; nodes: { nodeId: string }[]; earlierRuns?: number }[];
      nodeStatus: Record<string, { runs: number; status: string }>;
    };
    const page = await get<Page>(`/api/executions/${executionId}`);
    const [root] = page.body.threads;
    expect(root).toMatchObject({ threadId, earlierRuns: 353 });
    // Steps 354-453: 33 iterations' loop, inc and lend, the exit loop and the end.
    expect(root!.nodes).toHaveLength(100);
    expect(root!.nodes.slice(-3).map((run) => run.nodeId)).toEqual(['lend', 'loop', 'end']);
    expect(page.body.nodeStatus.inc).toMatchObject({ runs: 150, status: 'COMPLETED' });
    expect(page.body.nodeStatus.loop).toMatchObject({ runs: 151 });
    expect(page.bytes).toBeLessThan(40_000);
  });
});
