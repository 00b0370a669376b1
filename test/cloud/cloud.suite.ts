/**
 * The deployed stack in a second Step Functions interpreter (`npm run test:cloud`, see run.sh): the
 * synthesized template stood up in moto (moto.ts), each Lambda its synthesized bundle (lambda-bridge.ts).
 * Every workflow of the deployed folder (workflows.ts) runs there and on the embedded runtime, and the
 * final thread states must be equal. Interactions are answered with `stepthread respond`, as an operator
 * would; faults are injected into the Lambda service.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeExecutionCommand, GetExecutionHistoryCommand, SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import type { InteractionReply } from '../../functions/nodes/user-interaction.ts';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { type E2e, startE2e } from '../e2e/helpers.ts';
import { type MotoStack, startMotoStack } from './moto.ts';

const ASSEMBLY = process.env.STEPTHREAD_CLOUD_ASSEMBLY;
const WORKFLOWS = process.env.STEPTHREAD_CLOUD_WORKFLOWS;
const STACK = process.env.STEPTHREAD_CLOUD_STACK ?? 'StepthreadCloud';

/** How each deployed workflow is run: its input, the answers a person gives, how its run ends. */
interface Plan {
  input: Record<string, unknown>;
  answers?: InteractionReply[];
  status: 'COMPLETED' | 'FAILED';
  /** The execution's status in Step Functions (a failed thread can end a SUCCEEDED execution). */
  execution?: 'SUCCEEDED' | 'FAILED';
  /** A branch that loses the race to a failing one ends COMPLETED or CANCELLED. */
  racingBranches?: boolean;
}
const PLANS: Record<string, Plan> = {
  'context-pipeline': { input: {}, status: 'COMPLETED' },
  'fork-join-research': { input: { topic: 'caching' }, status: 'COMPLETED' },
  'map-reduce': {
    input: {
      documents: [
        { id: 'q1', text: 'Revenue up.' },
        { id: 'q2', text: 'Costs flat.' },
      ],
    },
    status: 'COMPLETED',
  },
  'route-loop': { input: {}, status: 'COMPLETED' },
  'support-triage': {
    input: { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } },
    answers: [{ kind: 'approve' }],
    status: 'COMPLETED',
  },
  'fixture-context-pipeline': { input: {}, status: 'COMPLETED' },
  'fixture-research-brief': { input: { topic: 'caching' }, status: 'COMPLETED' },
  // A validation fixture whose CODE node returns an object for a number variable: both runtimes fail
  // the run at `rate` with INVALID_VARIABLE (after the Retry, since a handler failure is retried).
  'fixture-review-items': { input: {}, status: 'FAILED' },
  'fixture-two-reviews': { input: {}, status: 'COMPLETED' },
  approval: {
    input: { detail: { subject: 'Password reset' } },
    answers: [{ kind: 'approve', reason: 'looks right' }],
    status: 'COMPLETED',
  },
  'interaction-timeout': { input: {}, status: 'FAILED' },
  // The `ok` branch may finish before `bad` fails (COMPLETED) or be stopped by it (CANCELLED): which
  // one depends on timing, the join's outcome and the parent's state do not.
  'failing-branch': { input: {}, status: 'FAILED', racingBranches: true },
  // `${...}` in CODE and in a prompt reaches the handlers unchanged (no DefinitionSubstitutions).
  'template-literal': { input: {}, status: 'COMPLETED' },
};

if (!ASSEMBLY || !WORKFLOWS) {
  console.warn('cloud suite skipped: run it with `npm run test:cloud` (it synthesizes the stack first).');
}

/** The part of a thread two runs of the same workflow must agree on (ids and times excluded). */
function comparable(thread: Thread, conversation: { role: string; content: unknown }[]) {
  return {
    status: thread.status,
    currentNodeId: thread.currentNodeId,
    output: thread.output,
    variables: thread.variables,
    nodeResults: Object.fromEntries(
      Object.entries(thread.nodeResults).map(([id, result]) => [
        id,
        { status: result.status, output: result.output, error: result.error?.code },
      ]),
    ),
    history: thread.executionHistory.map((entry) => `${entry.nodeId}:${entry.status}`),
    errors: thread.errors.map((error) => `${error.code}@${error.nodeId ?? ''}`),
    conversation: conversation.map((message) => ({ role: message.role, content: String(message.content) })),
  };
}

async function finalState(runtime: LocalRuntime, executionId: string, racingBranches = false) {
  const execution = await runtime.stores.executions.getExecution(executionId);
  if (!execution) throw new Error(`no execution record for ${executionId}`);
  const threads = await runtime.stores.threads.listThreadsOfExecution(executionId);
  const root = threads.find(({ thread }) => thread.id === execution.rootThreadId)?.thread;
  if (!root) throw new Error(`no root thread for ${executionId}`);
  return {
    root: comparable(root, await runtime.conversationOf(root)),
    children: threads
      .map(({ thread }) => {
        const status =
          racingBranches && ['COMPLETED', 'CANCELLED'].includes(thread.status)
            ? 'COMPLETED|CANCELLED'
            : thread.status;
        return `${thread.metadata.forkPathId ?? '(root)'}:${status}`;
      })
      .sort(),
  };
}

function replyFlags(reply: InteractionReply): string[] {
  switch (reply.kind) {
    case 'approve':
    case 'reject':
      return [`--${reply.kind}`, ...(reply.reason ? ['--reason', reply.reason] : [])];
    case 'select':
      return ['--select', String(reply.choice)];
    case 'input':
      return ['--input', JSON.stringify(reply.value)];
    case 'fail':
      return ['--fail'];
  }
}

describe.skipIf(!ASSEMBLY || !WORKFLOWS)('the synthesized stack in moto', () => {
  let stack: MotoStack;
  let e2e: E2e;
  let cloud: LocalRuntime;
  let sfn: SFNClient;
  const workflows = new Map<string, Workflow>();
  // The CLI caches the stack's outputs here.
  const dataDir = mkdtempSync(join(tmpdir(), 'stepthread-cloud-cli-'));

  /**
   * The CLI in-process, with the environment an operator would have: credentials and endpoint, and
   * `--stack` (the table and bucket come from the stack's outputs, not from variables).
   */
  async function cli(args: string[]): Promise<string> {
    let out = '';
    let err = '';
    const code = await main(['node', 'stepthread', ...args], {
      stdout: (text) => {
        out += text;
      },
      stderr: (text) => {
        err += text;
      },
      readFile: () => Promise.reject(new Error('no files')),
      env: { ...process.env, ...stack.env, STEPTHREAD_DATA_DIR: dataDir },
    });
    if (code !== 0) throw new Error(`stepthread ${args.join(' ')} exited ${code}: ${err}`);
    return out;
  }

  /** Starts the workflow with `stepthread start`, answers its interactions with `stepthread respond`. */
  async function runInMoto(id: string, plan: Plan, name: string) {
    const executionArn = (
      await cli(['start', id, '--stack', STACK, '--name', name, '--input', JSON.stringify(plan.input)])
    ).trim();
    const answers = [...(plan.answers ?? [])];
    for (;;) {
      const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      if (described.status !== 'RUNNING') {
        return { executionArn, status: described.status, answersLeft: answers.length };
      }
      const pending = JSON.parse(await cli(['pending', executionArn, '--stack', STACK, '--json'])) as {
        interactionId: string;
      }[];
      for (const interaction of pending) {
        const reply = answers.shift();
        if (reply) await cli(['respond', interaction.interactionId, '--stack', STACK, ...replyFlags(reply)]);
      }
      await new Promise((done) => setTimeout(done, 250));
    }
  }

  async function runEmbedded(workflow: Workflow, plan: Plan) {
    const answers = [...(plan.answers ?? [])];
    const outcome = await e2e.runtime.prepare(workflow).run(plan.input, {
      noRetryWaits: true,
      // No answer left: nobody answers, so the interaction waits until its timeout.
      answerInteraction: async (_interaction, { signal }) =>
        answers.shift() ??
        new Promise<undefined>((done) => signal?.addEventListener('abort', () => done(undefined))),
    });
    return { outcome, answersLeft: answers.length };
  }

  beforeAll(async () => {
    for (const { workflow } of loadWorkflowsFromDir(WORKFLOWS!)) workflows.set(workflow.id, workflow);
    stack = await startMotoStack(ASSEMBLY!, STACK);
    e2e = await startE2e('cloud');
    const clients = createAwsClients(
      { kind: 'endpoint', endpoint: stack.endpoint },
      { tableName: stack.outputs.TableName!, bucketName: stack.outputs.BucketName! },
    );
    cloud = createLocalRuntime({ clients });
    sfn = new SFNClient({
      endpoint: stack.endpoint,
      region: stack.env.AWS_REGION,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await e2e?.close();
  });

  it('deploys a plan for every workflow of the folder', () => {
    expect([...workflows.keys()].sort()).toEqual(Object.keys(PLANS).sort());
  });

  for (const [id, plan] of Object.entries(PLANS)) {
    it(`${id}: the same final thread state in moto as on the embedded runtime`, async () => {
      const workflow = workflows.get(id)!;
      const local = await runEmbedded(workflow, plan);
      expect(local.outcome.status).toBe(plan.status);
      const remote = await runInMoto(id, plan, `run-${id}`);
      expect(remote.answersLeft).toBe(0);
      expect(remote.status).toBe(plan.execution ?? (plan.status === 'COMPLETED' ? 'SUCCEEDED' : 'FAILED'));
      expect(await finalState(cloud, remote.executionArn, plan.racingBranches)).toEqual(
        await finalState(e2e.runtime, local.outcome.executionId, plan.racingBranches),
      );
    }, 120_000);
  }

  it('a Lambda failure is retried by the state machine and leaves the same state', async () => {
    const plan = PLANS['fork-join-research']!;
    const clean = await runEmbedded(workflows.get('fork-join-research')!, plan);
    await stack.faults('fail-first');
    try {
      const remote = await runInMoto('fork-join-research', plan, 'retried-fork-join-research');
      const { injected } = await stack.faults('none');
      expect(remote.status).toBe('SUCCEEDED');
      expect(injected).toBeGreaterThan(5);
      const history = await sfn.send(
        new GetExecutionHistoryCommand({ executionArn: remote.executionArn, maxResults: 1000 }),
      );
      // Each injected failure is in the history as a failed Lambda call that the Retry then repeated.
      const failed = (history.events ?? []).filter(
        (event) => event.lambdaFunctionFailedEventDetails?.error === 'Lambda.ServiceException',
      );
      expect(failed).toHaveLength(injected);
      expect(await finalState(cloud, remote.executionArn)).toEqual(
        await finalState(e2e.runtime, clean.outcome.executionId),
      );
    } finally {
      await stack.faults('none');
    }
  }, 180_000);

  it("a crash after every handler's writes, retried, leaves the same state as a run without faults", async () => {
    const plan = PLANS['support-triage']!;
    const clean = await runEmbedded(workflows.get('support-triage')!, plan);
    await stack.faults('crash-first');
    try {
      const remote = await runInMoto('support-triage', plan, 'crashed-support-triage');
      const { injected } = await stack.faults('none');
      expect(remote.status).toBe('SUCCEEDED');
      expect(injected).toBeGreaterThan(5);
      expect(await finalState(cloud, remote.executionArn)).toEqual(
        await finalState(e2e.runtime, clean.outcome.executionId),
      );
    } finally {
      await stack.faults('none');
    }
  }, 180_000);
});
