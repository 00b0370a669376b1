/**
 * The publisher of streamed replies against a local stand-in of the AppSync Events HTTP publish API
 * (test/support/appsync-events.ts): what it posts (path, SigV4 headers checked against the test
 * credentials, body), how many requests a reply of N deltas costs, and that a failed publish never
 * reaches the node.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createReplyPublisher,
  MAX_EVENTS_PER_PUBLISH,
  publishingReplies,
  type ReplyPublisherOptions,
  replyPublisherFromEnvironment,
} from '../../../functions/events/appsync-publisher.ts';
import { parseReplyEvent, type ReplyEvent, replyChannel } from '../../../functions/events/reply-channel.ts';
import type { HandlerDeps, ReplyTextEntry } from '../../../functions/handlers/deps.ts';
import type { TaskRunner } from '../../../functions/handlers/dispatch-table.ts';
import {
  type EventsStandIn,
  startEventsStandIn,
  TEST_CREDENTIALS,
  TEST_REGION,
} from '../../support/appsync-events.ts';

const EXECUTION = 'arn:aws:states:us-east-1:123456789012:execution:stepthread-chat:run-1';

let server: EventsStandIn;
beforeAll(async () => {
  server = await startEventsStandIn();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.publishes.length = 0;
  server.failPublishes(0);
});

function publisher(overrides: Partial<ReplyPublisherOptions> = {}) {
  return createReplyPublisher({
    http: server.url,
    region: TEST_REGION,
    credentials: async () => TEST_CREDENTIALS,
    warn: () => {},
    ...overrides,
  });
}

function entry(text: string, more: Partial<ReplyTextEntry> = {}): ReplyTextEntry {
  return {
    executionId: EXECUTION,
    threadId: 't-root',
    nodeId: 'talk',
    step: 3,
    reply: 0,
    restart: false,
    text,
    ...more,
  };
}

function published(): ReplyEvent[] {
  return server.publishes.flatMap((request) => request.events.map((event) => parseReplyEvent(event)!));
}

function textOf(events: readonly ReplyEvent[]): string {
  return events.map((event) => (event.kind === 'text' ? event.text : '')).join('');
}

describe('the AppSync Events reply publisher', () => {
  it('posts a reply of 30 deltas as 3 signed requests to /event on the execution channel, the last with its end', async () => {
    const session = publisher().open();
    const deltas = Array.from({ length: 30 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(98)}`);
    // 100 bytes each: 1 KB waits after the 11th, so the 11th and 22nd send; the rest go at the end.
    for (const delta of deltas) session.add(entry(delta));
    await session.close();

    expect(server.publishes).toHaveLength(3);
    for (const request of server.publishes) {
      expect(request.path).toBe('/event');
      expect(request.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDSTREAMTEST\/\d{8}\/us-east-1\/appsync\/aws4_request/,
      );
      expect(request.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
      expect(request.headers['content-type']).toBe('application/json; charset=UTF-8');
      expect(request.signatureValid).toBe(true);
      expect(request.channel).toBe(replyChannel('replies', EXECUTION));
    }
    expect(server.publishes.map((request) => request.events.length)).toEqual([1, 1, 2]);
    const events = published();
    expect(textOf(events)).toBe(deltas.join(''));
    expect(events.at(-1)).toEqual({
      kind: 'end',
      executionId: EXECUTION,
      threadId: 't-root',
      nodeId: 'talk',
      step: 3,
    });
    expect(events[0]).toMatchObject({
      kind: 'text',
      reply: 0,
      restart: false,
      threadId: 't-root',
      nodeId: 'talk',
      step: 3,
    });
  });

  it('publishes what waits once the flush interval passed, before the reply ends', async () => {
    const session = publisher().open();
    session.add(entry('Hello'));
    session.add(entry(', world'));
    await vi.waitFor(() => expect(server.publishes).toHaveLength(1), { timeout: 5_000, interval: 20 });
    expect(published()).toEqual([expect.objectContaining({ kind: 'text', text: 'Hello, world' })]);
    session.add(entry('!'));
    await session.close();
    expect(server.publishes).toHaveLength(2);
    expect(textOf(published())).toBe('Hello, world!');
  });

  it('puts at most 5 events in one request', async () => {
    const session = publisher().open();
    // Seven nodes of a fork stream at once: 7 text events and, at the end, 7 end events.
    for (let i = 0; i < 7; i++) session.add(entry(`branch ${i}`, { threadId: `t-${i}`, nodeId: `n${i}` }));
    await session.close();
    expect(server.publishes.map((request) => request.events.length)).toEqual([5, 5, 4]);
    expect(Math.max(...server.publishes.map((r) => r.events.length))).toBeLessThanOrEqual(
      MAX_EVENTS_PER_PUBLISH,
    );
    expect(published().filter((event) => event.kind === 'end')).toHaveLength(7);
  });

  it('keeps a retry apart: the restarted reply is an event of its own that says so', async () => {
    const session = publisher().open();
    session.add(entry('first try'));
    session.add(entry('second', { restart: true }));
    session.add(entry(' try'));
    session.add(entry('after the tool', { reply: 1, restart: true }));
    await session.close();
    expect(
      published().map((event) => (event.kind === 'text' ? [event.reply, event.restart, event.text] : 'end')),
    ).toEqual([[0, false, 'first try'], [0, true, 'second try'], [1, true, 'after the tool'], 'end']);
  });

  it('drops a batch the API refuses, warns by ids and counts, and publishes the next', async () => {
    const warnings: Array<[string, Record<string, unknown>]> = [];
    const session = publisher({ warn: (message, fields) => warnings.push([message, fields]) }).open();
    server.failPublishes(1);
    for (let i = 0; i < 11; i++) session.add(entry('y'.repeat(100)));
    session.add(entry('the rest'));
    await expect(session.close()).resolves.toBeUndefined();
    expect(server.publishes).toHaveLength(2);
    expect(warnings).toEqual([
      [
        'streamed reply not published',
        { channel: replyChannel('replies', EXECUTION), count: 1, status: 500 },
      ],
    ]);
    expect(JSON.stringify(warnings)).not.toContain('yyy');
    expect(textOf(published().slice(1))).toBe('the rest');
  });

  it('is refused by the stand-in when signed with other credentials (the signature is checked)', async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const session = publisher({
      credentials: async () => ({ ...TEST_CREDENTIALS, secretAccessKey: 'not-the-secret' }),
      warn: (_message, fields) => warnings.push(fields),
    }).open();
    session.add(entry('forged'));
    await session.close();
    expect(server.publishes.map((request) => request.signatureValid)).toEqual([false]);
    expect(warnings).toEqual([expect.objectContaining({ status: 401 })]);
  });

  it('gives up on an endpoint it cannot reach after one try, without failing the node', async () => {
    const warnings: Array<[string, Record<string, unknown>]> = [];
    const gone = await startEventsStandIn();
    await gone.close();
    const runner: TaskRunner = async (_event, deps) => {
      // Three batches' worth: only the first is tried, the rest are dropped and counted.
      for (let i = 0; i < 30; i++) deps.onReplyText?.(entry('z'.repeat(100)));
      return { executionId: EXECUTION } as never;
    };
    const run = publishingReplies(
      runner,
      publisher({ http: gone.url, warn: (message, fields) => warnings.push([message, fields]) }),
    );
    await expect(run({} as never, {} as HandlerDeps)).resolves.toEqual({ executionId: EXECUTION });
    expect(warnings).toEqual([
      ['streamed reply not published', expect.objectContaining({ count: 1, errorName: 'TypeError' })],
      ['streamed reply not published', { reason: 'unreachable', droppedEvents: 3 }],
    ]);
  });
});

describe('publishingReplies (the LLM Lambda hook)', () => {
  it('hands the runner a reply watcher and returns once what streamed is published, watcher given or not', async () => {
    const seen: string[] = [];
    const runner: TaskRunner = async (_event, deps) => {
      for (const text of ['one ', 'two ', 'three']) deps.onReplyText?.(entry(text));
      return { step: 4 } as never;
    };
    const run = publishingReplies(runner, publisher());
    const result = await run(
      {} as never,
      { onReplyText: (e: ReplyTextEntry) => seen.push(e.text) } as unknown as HandlerDeps,
    );
    expect(result).toEqual({ step: 4 });
    expect(seen).toEqual(['one ', 'two ', 'three']);
    expect(textOf(published())).toBe('one two three');
    expect(published().at(-1)?.kind).toBe('end');
  });

  it('publishes what streamed before a failure, then lets the failure through unchanged', async () => {
    const failure = new Error('model went away');
    const runner: TaskRunner = async (_event, deps) => {
      deps.onReplyText?.(entry('half a'));
      throw failure;
    };
    await expect(publishingReplies(runner, publisher())({} as never, {} as HandlerDeps)).rejects.toBe(
      failure,
    );
    expect(textOf(published())).toBe('half a');
  });

  it('is off without an Events API in the environment, and signs with the environment keys when named', async () => {
    const runner: TaskRunner = async () => ({}) as never;
    expect(replyPublisherFromEnvironment({})).toBeUndefined();
    expect(publishingReplies(runner, undefined)).toBe(runner);

    const fromEnv = replyPublisherFromEnvironment({
      STEPTHREAD_EVENTS_HTTP: server.url,
      STEPTHREAD_EVENTS_NAMESPACE: 'replies',
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
      AWS_SESSION_TOKEN: 'session-token',
      AWS_REGION: TEST_REGION,
    })!;
    const session = fromEnv.open();
    session.add(entry('from the environment'));
    await session.close();
    expect(server.publishes).toHaveLength(1);
    expect(server.publishes[0]!.signatureValid).toBe(true);
    expect(server.publishes[0]!.headers['x-amz-security-token']).toBe('session-token');
  });
});
