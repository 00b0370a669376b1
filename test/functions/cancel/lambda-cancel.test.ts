/**
 * The AWS side of a cancel (issue 27): the deployed LLM and TOOL handlers (functions/handlers/*.ts,
 * `handler` as the Lambda runtime calls it, stores from the environment) watch their run's cancel mark
 * while their call runs. Invoked with the Task inputs the compiled definition gives them, against real
 * dynalite and s3rver and loopback stand-ins that hold their reply: `stepthread cancel` (the cancel's
 * records and mark; StopExecution is the cloud suite's part) ends the invocation at the function's
 * next look, the stand-in sees its connection closed, and the step leaves no trace.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import { createAwsClients } from '../../../functions/aws/clients.ts';
import { handler as llm } from '../../../functions/handlers/llm.ts';
import { handler as start } from '../../../functions/handlers/start.ts';
import { handler as tool } from '../../../functions/handlers/tool.ts';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../../functions/local/services.ts';
import { putNodeTable } from '../../../functions/stores/node-tables.ts';

const NAMES = { tableName: 'lambda-cancel', bucketName: 'lambda-cancel' };

/** A loopback server that takes every request and never answers; counts the closed ones. */
interface HeldServer {
  readonly url: string;
  readonly received: () => number;
  readonly closed: () => number;
  close(): Promise<void>;
}

async function startHeldServer(): Promise<HeldServer> {
  let received = 0;
  let closed = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    received += 1;
    response.on('close', () => {
      if (!response.writableEnded) closed += 1;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
    closed: () => closed,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let services: LocalServices;
let held: HeldServer;
let runtime: LocalRuntime;
const saved: Record<string, string | undefined> = {};
beforeAll(async () => {
  [services, held] = await Promise.all([
    startLocalServices({ ephemeral: true, names: NAMES }),
    startHeldServer(),
  ]);
  const variables: Record<string, string> = {
    STEPTHREAD_TABLE: NAMES.tableName,
    STEPTHREAD_BUCKET: NAMES.bucketName,
    STEPTHREAD_DYNAMODB_ENDPOINT: services.target.dynamoEndpoint!,
    STEPTHREAD_S3_ENDPOINT: services.target.s3Endpoint!,
    OPENAI_API_KEY: 'test-key',
  };
  for (const [key, value] of Object.entries(variables)) {
    saved[key] = process.env[key];
    process.env[key] = value;
  }
  // What `stepthread cancel --stack` runs against the stack's table.
  runtime = createLocalRuntime({ clients: createAwsClients(services.target, services.names) });
});
afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  await held?.close();
  await services?.close();
});

type States = Record<string, { Parameters?: Record<string, unknown> }>;

/** A Task state's static Parameters (the `.$` paths are what the test fills in). */
function staticParameters(states: States, name: string): Record<string, unknown> {
  const parameters = states[name]?.Parameters;
  if (parameters === undefined) throw new Error(`no state ${name}`);
  return Object.fromEntries(Object.entries(parameters).filter(([key]) => !key.endsWith('.$')));
}

/** START → `wait` (the node under test) → END. */
function workflowWaitingIn(
  id: string,
  wait: Record<string, unknown>,
  extra: Record<string, unknown>,
): Workflow {
  return {
    id,
    version: 1,
    ...extra,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'wait', ...wait },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'wait' },
      { from: 'wait', to: 'end' },
    ],
  } as Workflow;
}

const context = { awsRequestId: 'request-1' } as never;

/**
 * Starts the run as its START function would, invokes `handler` for `wait`, cancels the run once the
 * held server has the call, and returns how the invocation ended.
 */
async function cancelWhileWaiting(workflow: Workflow, handler: typeof llm) {
  const executionId = `arn:aws:states:us-east-1:123456789012:execution:${workflow.id}:run-1`;
  const compiled = compileWorkflow(workflow);
  // As a deploy does: the Tasks name their nodes in the node table the bucket holds.
  await putNodeTable(
    createAwsClients(services.target, services.names).s3,
    NAMES.bucketName,
    compiled.nodeTable,
  );
  const states = compiled.definition.States as unknown as States;
  const started = (await start(
    { ...staticParameters(states, 'start'), executionId, input: { input: {} } },
    context,
  )) as Envelope;
  const before = { received: held.received(), closed: held.closed() };
  const invocation = handler({ ...staticParameters(states, 'wait'), envelope: started }, context);
  invocation.catch(() => {});
  await vi.waitFor(() => expect(held.received()).toBe(before.received + 1), {
    timeout: 10_000,
    interval: 20,
  });

  const cancelled = await runtime.cancel(executionId, { reason: 'too slow' });
  expect(cancelled).toMatchObject({ status: 'CANCELLED', threadsCancelled: 1 });
  // The function looks every 2 s: it ends at its next look, long before any timeout of its call.
  const error = await invocation.then(
    () => undefined,
    (thrown: unknown) => thrown as Error,
  );
  expect(error?.name).toBe('RunCancelled');
  expect(error?.message).toBe('the run was cancelled: too slow');
  await vi.waitFor(() => expect(held.closed()).toBe(before.closed + 1), { timeout: 5000, interval: 20 });

  // Nothing half-written: START's step only, the thread CANCELLED by the cancel.
  const { thread } = await runtime.stores.threads.getThread(started.threadId);
  expect(thread.status).toBe('CANCELLED');
  expect(thread.step).toBe(1);
  expect(await runtime.stores.threads.readSteps(thread.id)).toHaveLength(1);
}

describe('a deployed function waiting on its call, its run cancelled', () => {
  it('the LLM function closes its model call at its next look at the cancel mark', async () => {
    const workflow = workflowWaitingIn(
      'lambda-cancel-llm',
      { type: 'LLM', config: { prompt: 'Write a long essay.' } },
      { profiles: { default: { provider: 'openai', model: 'gpt-4o-mini', baseUrl: `${held.url}/v1` } } },
    );
    await cancelWhileWaiting(workflow, llm);
  }, 60_000);

  it('the TOOL function closes its tool call at its next look at the cancel mark', async () => {
    const workflow = workflowWaitingIn(
      'lambda-cancel-tool',
      { type: 'TOOL', config: { toolName: 'lookup', arguments: { order: 'A-17' } } },
      {
        tools: {
          lookup: {
            description: 'Looks an order up',
            parameters: { type: 'object' },
            handler: { kind: 'http', url: `${held.url}/lookup`, method: 'POST', allowPrivateNetwork: true },
          },
        },
      },
    );
    await cancelWhileWaiting(workflow, tool);
  }, 60_000);
});
