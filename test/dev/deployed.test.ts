/**
 * `stepthread dev --target aws`: the requests it makes, against a stub. The stores are real (dynalite +
 * s3rver standing in for the stack's table and bucket); Step Functions is a stub that records the
 * commands: a run starts with StartExecution on `<prefix>-<workflowId>`, an answer goes back with
 * SendTaskSuccess and the stored task token, and each execution links to the Step Functions console.
 * The stub knows no executions, so the server falls back to the table alone. The same server over a
 * real Step Functions interpreter (the stack in moto): test/cloud/cloud.suite.ts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer, stepFunctionsConsoleUrl } from '../../cli/dev/server.ts';
import { compileWorkflow } from '../../engine/asl/index.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { createInteractionStore } from '../../functions/stores/interaction-store.ts';
import { putNodeTable } from '../../functions/stores/node-tables.ts';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const MACHINE = 'arn:aws:states:eu-west-1:123456789012:stateMachine:demo-support-triage';
const RESEARCH = 'arn:aws:states:eu-west-1:123456789012:stateMachine:demo-fork-join-research';
const research = loadWorkflowsFromDir(join(ROOT, 'examples')).find(
  (loaded) => loaded.workflow.id === 'fork-join-research',
)!.workflow;

let services: LocalServices;
let server: DevServer;
const sfn = recordingSfn((name, input) => {
  if (name === 'ListStateMachinesCommand') {
    return {
      stateMachines: [
        { name: 'demo-support-triage', stateMachineArn: MACHINE },
        { name: 'demo-fork-join-research', stateMachineArn: RESEARCH },
      ],
    };
  }
  if (name === 'DescribeStateMachineCommand' && input.stateMachineArn === RESEARCH) {
    return { definition: JSON.stringify(compileWorkflow(research).definition) };
  }
  if (name === 'StartExecutionCommand') {
    const machine = String(input.stateMachineArn).replace(/:live$/, '');
    return { executionArn: `${machine.replace(':stateMachine:', ':execution:')}:${String(input.name)}` };
  }
  return {};
});
const sent = sfn.sent;

beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true });
  const clients = createAwsClients(services.target, services.names);
  // The stack's bucket holds the node table research's definition names, as a deploy stores it.
  await putNodeTable(clients.s3, clients.bucketName, compileWorkflow(research).nodeTable);
  server = await startDevServer({
    clients,
    workflowsDir: join(ROOT, 'examples'),
    deployed: { sfn, prefix: 'demo' },
  });
});

afterAll(async () => {
  await server?.close();
  await services?.close();
});

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('stepthread dev --target aws', () => {
  it('starts a run with StartExecution on <prefix>-<workflowId> and links it to the Step Functions console', async () => {
    const started = await post('/api/workflows/support-triage/runs', { input: { ticket: { subject: 'x' } } });
    expect(started.status).toBe(202);
    const executionId = String(started.body.executionId);
    expect(executionId.startsWith(`${MACHINE.replace(':stateMachine:', ':execution:')}:`)).toBe(true);
    expect(started.body.consoleUrl).toBe(
      `https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/${executionId}`,
    );
    const start = sent.find((command) => command.name === 'StartExecutionCommand')!;
    // On the `live` alias: pinned to the version of the latest deploy.
    expect(start.input.stateMachineArn).toBe(`${MACHINE}:live`);
    expect(JSON.parse(String(start.input.input))).toEqual({ input: { ticket: { subject: 'x' } } });
    // Not indexed by the stack yet: listed as running.
    const page = await fetch(`${server.url}/api/executions/${encodeURIComponent(executionId)}`);
    expect(page.status).toBe(200);
    expect(((await page.json()) as { execution: { status: string } }).execution.status).toBe('RUNNING');
    expect((await post('/api/workflows/route-loop/runs', {})).body).toMatchObject({
      error: { code: 'WORKFLOW_NOT_FOUND' },
    });
  });

  it('answers an interaction with SendTaskSuccess and its stored task token', async () => {
    const store = createInteractionStore(createAwsClients(services.target, services.names));
    await store.recordPending({
      interactionId: 't-deployed/approve-credit',
      executionId: `${MACHINE.replace(':stateMachine:', ':execution:')}:run-1`,
      workflowId: 'support-triage',
      rootThreadId: 't-deployed',
      threadId: 't-deployed',
      nodeId: 'approve-credit',
      authorNodeId: 'approve-credit',
      step: 3,
      interactionType: 'ask_for_approval',
      message: 'Grant a credit?',
      requestedAt: '2026-01-01T00:00:00.000Z',
      taskToken: 'token-of-the-waiting-task',
      status: 'PENDING',
    });
    const listed = await fetch(`${server.url}/api/interactions?thread=t-deployed`);
    expect(await listed.json()).toEqual([
      expect.objectContaining({ interactionId: 't-deployed/approve-credit', answerable: true }),
    ]);
    const answered = await post(
      `/api/interactions/${encodeURIComponent('t-deployed/approve-credit')}/answer`,
      {
        approve: true,
      },
    );
    expect(answered.status).toBe(202);
    const success = sent.find((command) => command.name === 'SendTaskSuccessCommand')!;
    expect(success.input.taskToken).toBe('token-of-the-waiting-task');
  });

  it("runs a copied thread on the stack: StartExecution on the workflow's live alias, entering at the copy's node", async () => {
    const clients = createAwsClients(services.target, services.names);
    const source = await createLocalRuntime({ clients }).prepare(research).run({ topic: 'caching' });
    expect(source.status).toBe('COMPLETED');
    const finished = await post(`/api/threads/${source.threadId}/run`, {});
    expect(finished.status).toBe(409);
    expect(finished.body).toMatchObject({ error: { code: 'INVALID_STATUS_TRANSITION' } });
    const copy = await post(`/api/threads/${source.threadId}/copy`, { fromNodeId: 'report' });
    expect(copy.status).toBe(201);
    const run = await post(`/api/threads/${String(copy.body.threadId)}/run`, {});
    expect(run.status).toBe(202);
    expect(run.body.executionId).toMatch(
      /^arn:aws:states:eu-west-1:123456789012:execution:demo-fork-join-research:/,
    );
    const start = sent.filter((command) => command.name === 'StartExecutionCommand').at(-1)!;
    expect(start.input.stateMachineArn).toBe(`${RESEARCH}:live`);
    expect(JSON.parse(String(start.input.input))).toMatchObject({
      resume: {
        copy: true,
        at: 'report',
        node: { id: 'report', type: 'LLM' },
        envelope: { threadId: copy.body.threadId, rootThreadId: copy.body.threadId },
      },
    });
    expect((await post('/api/threads/t-nothing/run', {})).status).toBe(404);
  });

  it("lists the stack's state machines once a minute at most, however often the executions list is read", async () => {
    const listings = () => sent.filter((command) => command.name === 'ListStateMachinesCommand').length;
    const read = async () => expect((await fetch(`${server.url}/api/executions`)).status).toBe(200);
    await read();
    const listed = listings();
    expect(listed).toBeGreaterThan(0);
    for (let i = 0; i < 3; i += 1) await read();
    expect(listings()).toBe(listed);
  });

  it('links only execution ARNs to the console', () => {
    expect(stepFunctionsConsoleUrl('3c75d5cf-599a-403b-9f78-ca14c9c493ed')).toBeUndefined();
  });
});
