/**
 * `stepthread dev --target aws` shows the replies a deployed execution streams: the server subscribes
 * to the execution's channel of the stack's Events API (a local stand-in speaking its realtime and
 * HTTP publish protocols, test/support/appsync-events.ts) and forwards what the LLM Lambda's publisher
 * posts as `token` events, and as the page's `streaming` snapshot, until the execution ends. Step
 * Functions is a stub; the stores are real (dynalite + s3rver).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replyWatchOf } from '../../cli/dev/remote-replies.ts';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createReplyPublisher } from '../../functions/events/appsync-publisher.ts';
import type { ReplyTextEntry } from '../../functions/handlers/deps.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import {
  type EventsStandIn,
  startEventsStandIn,
  TEST_CREDENTIALS,
  TEST_REGION,
} from '../support/appsync-events.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const MACHINE = 'arn:aws:states:us-east-1:123456789012:stateMachine:demo-support-triage';

let services: LocalServices;
let events: EventsStandIn;
let server: DevServer;
const status = { value: 'RUNNING' };
const sfn = recordingSfn((name, input) => {
  if (name === 'ListStateMachinesCommand') {
    return { stateMachines: [{ name: 'demo-support-triage', stateMachineArn: MACHINE }] };
  }
  if (name === 'StartExecutionCommand') {
    return { executionArn: `${MACHINE.replace(':stateMachine:', ':execution:')}:${String(input.name)}` };
  }
  if (name === 'DescribeExecutionCommand') {
    return {
      executionArn: input.executionArn,
      stateMachineArn: MACHINE,
      status: status.value,
      startDate: new Date('2026-01-01T00:00:00Z'),
    };
  }
  if (name === 'GetExecutionHistoryCommand') return { events: [] };
  return {};
});

beforeAll(async () => {
  [services, events] = await Promise.all([startLocalServices({ ephemeral: true }), startEventsStandIn()]);
  server = await startDevServer({
    clients: createAwsClients(services.target, services.names),
    workflowsDir: join(ROOT, 'examples'),
    deployed: {
      sfn,
      prefix: 'demo',
      pollMs: 25,
      replies: replyWatchOf(
        { http: events.url, realtime: events.url, namespace: 'replies' },
        { AWS_REGION: TEST_REGION },
        async () => TEST_CREDENTIALS,
      ),
    },
  });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await Promise.all([services?.close(), events?.close()]);
});

/** The live event stream, read in the background. */
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
  return {
    seen,
    until: (test: () => boolean) =>
      new Promise<void>((resolve) => {
        if (test()) resolve();
        else waits.push({ test, resolve });
      }),
    close: () => controller.abort(),
  };
}

describe('stepthread dev --target aws, streaming', () => {
  it('forwards the replies a deployed run streams as token events and a page snapshot, until it ends', async () => {
    const stream = await openEventStream();
    try {
      const started = await fetch(`${server.url}/api/workflows/support-triage/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: { ticket: { subject: 'x' } } }),
      });
      expect(started.status).toBe(202);
      const { executionId, threadId } = (await started.json()) as { executionId: string; threadId: string };
      await events.subscribed(1);

      // What the LLM Lambda publishes while its node runs.
      const entry = (text: string): ReplyTextEntry => ({
        executionId,
        threadId,
        nodeId: 'classify',
        step: 2,
        reply: 0,
        restart: false,
        text,
      });
      const publisher = createReplyPublisher({
        http: events.url,
        region: TEST_REGION,
        credentials: async () => TEST_CREDENTIALS,
      });
      const session = publisher.open();
      session.add(entry('Billing'));
      session.add(entry(' question'));
      // Published within the flush interval, before the reply ends: the page shows it growing.
      const tokens = () =>
        stream.seen.filter((e) => e.type === 'token' && e.data.executionId === executionId);
      await stream.until(
        () =>
          tokens()
            .map((t) => t.data.text)
            .join('') === 'Billing question',
      );

      const page = await fetch(`${server.url}/api/executions/${encodeURIComponent(executionId)}`);
      const body = (await page.json()) as {
        streaming?: { replies: { nodeId: string; replies: string[] }[] };
      };
      expect(body.streaming?.replies).toEqual([expect.objectContaining({ nodeId: 'classify' })]);
      expect(body.streaming!.replies[0]!.replies).toEqual(['Billing question']);
      expect(tokens()[0]!.data).toMatchObject({ threadId, nodeId: 'classify', step: 2, reply: 0 });
      await session.close();

      status.value = 'SUCCEEDED';
      await stream.until(() =>
        stream.seen.some(
          (e) =>
            e.type === 'execution' && e.data.executionId === executionId && e.data.status === 'COMPLETED',
        ),
      );
      // Nothing of the run streams any more: the page has no replies in flight.
      const after = (await (
        await fetch(`${server.url}/api/executions/${encodeURIComponent(executionId)}`)
      ).json()) as { streaming?: unknown };
      expect(after.streaming).toBeUndefined();
    } finally {
      stream.close();
    }
  }, 60_000);
});
