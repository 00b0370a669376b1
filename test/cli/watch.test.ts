/**
 * `stepthread watch <executionArn>` against a local stand-in of the stack's AppSync Events API
 * (test/support/appsync-events.ts: the realtime WebSocket protocol with its IAM-signed connection and
 * subscription, and the HTTP publish API the LLM Lambda's publisher posts to) and a Step Functions
 * stub saying when the execution ends.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WatchServices } from '../../cli/commands/watch.ts';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { createReplyPublisher } from '../../functions/events/appsync-publisher.ts';
import { replyChannel } from '../../functions/events/reply-channel.ts';
import type { ReplyTextEntry } from '../../functions/handlers/deps.ts';
import { rootThreadIdFor } from '../../functions/nodes/ids.ts';
import {
  type EventsStandIn,
  startEventsStandIn,
  TEST_CREDENTIALS,
  TEST_REGION,
} from '../support/appsync-events.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

const EXECUTION = 'arn:aws:states:us-east-1:123456789012:execution:stepthread-chat:watch-1';

let server: EventsStandIn;
beforeAll(async () => {
  server = await startEventsStandIn();
});
afterAll(async () => {
  await server.close();
});

/** The CLI in-process with output readable while it runs, an execution whose status the test sets. */
function watching(
  args: string[],
  options: { credentials?: typeof TEST_CREDENTIALS; env?: Record<string, string> } = {},
) {
  const output = { stdout: '', stderr: '' };
  const execution = { status: 'RUNNING' as string | undefined };
  const sfn = recordingSfn((name) => {
    if (name !== 'DescribeExecutionCommand') throw new Error(`unexpected ${name}`);
    if (execution.status === undefined)
      throw Object.assign(new Error('no such execution'), { name: 'ExecutionDoesNotExist' });
    return { status: execution.status };
  });
  const io: CliIo = {
    stdout: (text) => {
      output.stdout += text;
    },
    stderr: (text) => {
      output.stderr += text;
    },
    readFile: (path) => readFile(path, 'utf8'),
    env: {
      STEPTHREAD_TARGET: 'aws',
      STEPTHREAD_EVENTS_HTTP: server.url,
      STEPTHREAD_EVENTS_REALTIME: server.url,
      AWS_REGION: TEST_REGION,
      ...options.env,
    },
  };
  const credentials = options.credentials ?? TEST_CREDENTIALS;
  const services: WatchServices = { sfn, pollMs: 25, credentials: async () => credentials };
  const code = main(['node', 'stepthread', 'watch', ...args, '--no-cache'], io, services);
  return { output, execution, code, sfn };
}

function entry(text: string, more: Partial<ReplyTextEntry> = {}): ReplyTextEntry {
  return {
    executionId: EXECUTION,
    threadId: rootThreadIdFor(EXECUTION),
    nodeId: 'talk',
    step: 2,
    reply: 0,
    restart: false,
    text,
    ...more,
  };
}

const publisher = () =>
  createReplyPublisher({ http: server.url, region: TEST_REGION, credentials: async () => TEST_CREDENTIALS });

describe('stepthread watch', () => {
  it('subscribes with signed requests and prints each node’s reply as it streams, until the execution ends', async () => {
    const before = server.subscriptions.length;
    const run = watching([EXECUTION]);
    await server.subscribed(before + 1);
    expect(server.subscriptions.at(-1)).toEqual({
      channel: replyChannel('replies', EXECUTION),
      authorized: true,
    });
    expect(server.connections.at(-1)).toEqual({ authorized: true });

    // What the LLM Lambda publishes for two nodes: the root thread's, then a fork branch's.
    const session = publisher().open();
    session.add(entry('Hello'));
    session.add(entry(', world.'));
    await session.close();
    await vi.waitFor(() => expect(run.output.stdout).toBe('talk: Hello, world.\n'), {
      timeout: 5_000,
      interval: 20,
    });
    const branch = publisher().open();
    branch.add(entry('Short', { threadId: 'branch-b', nodeId: 'summarise', step: 5 }));
    branch.add(entry(' summary.', { threadId: 'branch-b', nodeId: 'summarise', step: 5 }));
    await branch.close();
    await vi.waitFor(() => expect(run.output.stdout).toContain('summary.\n'), {
      timeout: 5_000,
      interval: 20,
    });

    run.execution.status = 'SUCCEEDED';
    expect(await run.code).toBe(0);
    expect(run.output.stdout).toBe('talk: Hello, world.\nsummarise [thread branch-b]: Short summary.\n');
    expect(run.output.stderr).toContain('execution SUCCEEDED');
    // Read DescribeExecution once before subscribing, then at each poll until it ended.
    expect(run.sfn.sent.every((command) => command.input.executionArn === EXECUTION)).toBe(true);
  });

  it('prints the published events as JSON lines with --json, and exits 1 when the execution failed', async () => {
    const before = server.subscriptions.length;
    const run = watching([EXECUTION, '--json']);
    await server.subscribed(before + 1);
    const session = publisher().open();
    session.add(entry('partial'));
    await session.close();
    await vi.waitFor(() => expect(run.output.stdout.split('\n')).toHaveLength(3), {
      timeout: 5_000,
      interval: 20,
    });
    run.execution.status = 'FAILED';
    expect(await run.code).toBe(1);
    expect(
      run.output.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { kind: 'text', ...entry('partial') },
      { kind: 'end', executionId: EXECUTION, threadId: rootThreadIdFor(EXECUTION), nodeId: 'talk', step: 2 },
    ]);
    expect(run.output.stderr).toContain('execution FAILED');
  });

  it('is refused, with what to check, when the caller’s credentials do not sign right', async () => {
    const run = watching([EXECUTION], { credentials: { ...TEST_CREDENTIALS, secretAccessKey: 'wrong' } });
    expect(await run.code).toBe(1);
    expect(run.output.stderr).toMatch(/AWS_REQUEST_FAILED: .*refused the connection.*appsync:EventConnect/);
    expect(server.connections.at(-1)).toEqual({ authorized: false });
  });

  it('says so when the execution has ended already, or does not exist', async () => {
    const ended = watching([EXECUTION]);
    ended.execution.status = 'SUCCEEDED';
    expect(await ended.code).toBe(0);
    expect(ended.output.stderr).toContain('execution SUCCEEDED: nothing streams any more');
    const missing = watching([EXECUTION]);
    missing.execution.status = undefined;
    expect(await missing.code).toBe(1);
    expect(missing.output.stderr).toContain('EXECUTION_NOT_FOUND');
  });

  it('is STREAMING_NOT_DEPLOYED without an Events API to subscribe to, and needs a deployed stack', async () => {
    const none = watching([EXECUTION], {
      env: { STEPTHREAD_EVENTS_HTTP: '', STEPTHREAD_EVENTS_REALTIME: '' },
    });
    expect(await none.code).toBe(1);
    expect(none.output.stderr).toContain('STREAMING_NOT_DEPLOYED');

    const output: string[] = [];
    const io: CliIo = {
      stdout: () => {},
      stderr: (text) => output.push(text),
      readFile: (path) => readFile(path, 'utf8'),
      env: {},
    };
    expect(await main(['node', 'stepthread', 'watch', EXECUTION], io)).toBe(2);
    expect(output.join('')).toContain('no deployed stack selected');
  });
});
