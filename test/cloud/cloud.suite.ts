/**
 * The deployed stack in a second Step Functions interpreter (`npm run test:cloud`, see run.sh): the
 * synthesized template stood up in moto (moto.ts), each Lambda its synthesized bundle (lambda-bridge.ts).
 * Every workflow of the deployed folder (workflows.ts) runs there and on the embedded runtime, and the
 * final thread states must be equal. Interactions are answered with `stepthread respond`, as an operator
 * would; faults are injected into the Lambda service. Then what those runs left is read back as an
 * operator would: `stepthread runs --stack` and the `stepthread dev --target aws` process (these last
 * tests rely on the runs before them, so the file runs in order).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  type SFNClient,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { DeleteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workflow } from '../../engine/model/schema.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import type { InteractionReply } from '../../functions/nodes/user-interaction.ts';
import type { E2e } from '../e2e/helpers.ts';
import { runCli } from '../support/cli.ts';
import { busWatch } from './bus.ts';
import { deniedCalls } from './grants.ts';
import type { MotoStack } from './moto.ts';
import { type Cloud, STACK, SYNTHESIZED, startCloud, WORKFLOWS } from './setup.ts';

/** An answer a person gives: to the question of `nodeId` when given, else to the next one asked. */
type Answer = InteractionReply & { nodeId?: string };

/** How each deployed workflow is run: its input, the answers a person gives, how its run ends. */
interface Plan {
  input: Record<string, unknown>;
  answers?: Answer[];
  status: 'COMPLETED' | 'FAILED';
  /**
   * Also run with `stepthread run` in a data directory and compare what `inspect --json --events
   * --all-conversations` says of both runs (every thread's results, variables, errors, node runs,
   * events in order and conversation). Its answers each name their node (`run --answers`).
   */
  inspect?: boolean;
  /** The execution's status in Step Functions (a failed thread can end a SUCCEEDED execution). */
  execution?: 'SUCCEEDED' | 'FAILED';
  /** A branch that loses the race to a failing one ends COMPLETED or CANCELLED. */
  racingBranches?: boolean;
  /** Nodes whose outputs depend on the order parallel branches ran in (not compared through inspect). */
  orderDependent?: string[];
}
const PLANS: Record<string, Plan> = {
  'context-pipeline': { input: {}, status: 'COMPLETED' },
  'fork-join-research': { input: { topic: 'caching' }, status: 'COMPLETED' },
  // Fails at its CODE node; stack.suite.ts copies such runs from there and starts the copies.
  'size-check': { input: { size: 5 }, status: 'FAILED' },
  'route-loop': { input: {}, status: 'COMPLETED' },
  'support-triage': {
    input: { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } },
    answers: [{ nodeId: 'approve-credit', kind: 'approve' }],
    status: 'COMPLETED',
  },
  'vendor-review': {
    input: { vendor: 'Acme Analytics', monthlyFee: 1200 },
    answers: [{ nodeId: 'approve', kind: 'approve' }],
    status: 'COMPLETED',
  },
  // The agent's refund waits for approval (a task token wait on the LLM function), then runs once.
  // (examples/refund-approval.json itself is left out of the deploy: its MCP server is a local program.)
  'refund-code-tools': {
    input: { customer: 'Ada', order: 'A-17' },
    answers: [{ nodeId: 'agent', kind: 'approve' }],
    status: 'COMPLETED',
    inspect: true,
  },
  // A held tool call inside a fork branch, rejected with a reason: the model reads the refusal.
  'fork-tool-approval': {
    input: {},
    answers: [{ nodeId: 'agent', kind: 'reject', reason: 'not now' }],
    status: 'COMPLETED',
  },
  'fixture-context-pipeline': { input: {}, status: 'COMPLETED' },
  'fixture-research-brief': { input: { topic: 'caching' }, status: 'COMPLETED' },
  // Three loop iterations score 3, the ROUTE goes to the selection, a person picks "publish".
  'fixture-review-items': {
    input: {},
    answers: [{ nodeId: 'approve', kind: 'select', choice: 'publish' }],
    status: 'COMPLETED',
  },
  // SUBGRAPHs (a serial FORK inside one, hooks): inspect names the SUBGRAPH each node run is in.
  'fixture-two-reviews': { input: {}, status: 'COMPLETED', inspect: true },
  'fixture-loop-break-to-end': { input: {}, status: 'COMPLETED' },
  'fixture-readonly-set-once': { input: {}, status: 'COMPLETED' },
  approval: {
    input: { detail: { subject: 'Password reset' } },
    answers: [{ nodeId: 'approve', kind: 'approve', reason: 'looks right' }],
    status: 'COMPLETED',
  },
  'interaction-timeout': { input: {}, status: 'FAILED' },
  // The `ok` branch may finish before `bad` fails (COMPLETED) or be stopped by it (CANCELLED): which
  // one depends on timing, the join's outcome and the parent's state do not.
  'failing-branch': { input: {}, status: 'FAILED', racingBranches: true },
  // `${...}` in CODE and in a prompt reaches the handlers unchanged (no DefinitionSubstitutions).
  'template-literal': { input: {}, status: 'COMPLETED' },
  // A node after the JOIN reads both branches' own results: the JOIN writes them in one BatchWriteItem.
  'join-reads-branches': { input: {}, status: 'COMPLETED' },
  // A question inside a fork branch, answered while the other branch has finished.
  'fork-question': { input: {}, answers: [{ nodeId: 'approve', kind: 'approve' }], status: 'COMPLETED' },
  // A TOOL node (a code tool, in the TOOL function's sandbox).
  'tool-call': { input: {}, status: 'COMPLETED' },
  // A FORK over a list in distributed mode: a Distributed Map (ItemReader from S3), each item (an LLM
  // step, a STANDARD child) creating its own thread.
  'distributed-summaries': {
    input: {
      documents: ['Revenue up.', 'Costs flat.', 'Churn down.'].map((text, i) => ({ id: `q${i}`, text })),
    },
    status: 'COMPLETED',
  },
  // --- Also compared through `inspect --json` of a local `run` (plan.inspect) ---
  // A serial FORK nested in a parallel one, CONTEXT_PROCESSOR operations inside the branches.
  'nested-forks': { input: { topic: 'caching' }, status: 'COMPLETED', inspect: true },
  // ANY_FAILED, ALL_FAILED, SUCCESS_COUNT_THRESHOLD over a serial FORK, ANY_FAILED over a list.
  'join-strategies': { input: { items: [1, 2, 3] }, status: 'COMPLETED', inspect: true },
  // A JOIN timeout over a serial FORK: the slow path's model call is stopped, JOIN_TIMEOUT fails the run.
  'join-timeout': { input: {}, status: 'FAILED', inspect: true },
  // Global variables written by every item at once: an atomic add and a read-modify-write.
  // Each item's `bump` and `times` give the value its own write made, which depends on the items' order.
  'global-counter': {
    input: { numbers: [1, 2, 3, 4, 5] },
    status: 'COMPLETED',
    inspect: true,
    orderDependent: ['bump', 'times'],
  },
  // A budget's BUDGET_WARNING and BUDGET_EXCEEDED, and maxToolCalls counting TOOL nodes.
  'budget-stop': { input: {}, status: 'FAILED', inspect: true },
  // Every kind of question inside fork branches, answered with respond while the others wait.
  'branch-interactions': {
    input: {},
    answers: [
      { nodeId: 'how-many', kind: 'input', value: 12 },
      { nodeId: 'plan', kind: 'select', choice: 'pro' },
      { nodeId: 'sure', kind: 'reject', reason: 'not yet' },
    ],
    status: 'COMPLETED',
    inspect: true,
  },
  // A FORK inside a LOOP: new child threads each iteration; a ROUTE leaves the loop early.
  'loop-fork': { input: { rounds: [1, 2, 3, 4] }, status: 'COMPLETED', inspect: true },
  // maxSteps reached inside a loop: MAX_STEPS_EXCEEDED.
  'max-steps': { input: { rounds: [1, 2, 3, 4, 5, 6] }, status: 'FAILED', inspect: true },
  // Large values (stored by reference) through a FORK over a list: a global object every item
  // rewrites, each item's long output, the JOIN's merge of them. `add` gives the object as its item
  // left it, which depends on the items' order.
  'global-large': {
    input: { keys: ['a', 'b', 'c'] },
    status: 'COMPLETED',
    inspect: true,
    orderDependent: ['add'],
  },
  // A question in a fork branch failed with `respond --fail`: USER_INTERACTION_FAILED and its reason.
  'fork-fail-answer': {
    input: {},
    answers: [{ nodeId: 'ask', kind: 'fail', reason: 'no' }],
    status: 'COMPLETED',
    inspect: true,
  },
  // A FORK over a list: an inline Map state, one child thread per document.
  'map-reduce': {
    input: {
      documents: [
        { id: 'q1', text: 'Revenue up.' },
        { id: 'q2', text: 'Costs flat.' },
        { id: 'q3', text: 'Churn down.' },
      ],
    },
    status: 'COMPLETED',
  },
};

/** What a rule on the stack's bus matches to watch the cancels' events. */
const CANCELLED_EVENTS = { source: ['stepthread'], 'detail-type': ['THREAD_CANCELLED'] };

/** Workflows deployed only to be cancelled (the last test): no plan runs them to their end. */
const CANCELLED_ONLY = ['slow-model'];
/** Workflows stack.suite.ts runs, where moto is known to end them otherwise than AWS would. */
const STACK_SUITE_ONLY = ['distributed-early'];
/** Issue 30's 2,000-node chain (test/support/prompt-chain.ts): run by its own test, with its own time. */
const LONG_ONLY = ['prompt-chain'];

/** A row of `runs --json` (and of the dev server's executions list). */
interface RunRow {
  executionId: string;
  workflowId: string;
  status: string;
  stepFunctionsStatus?: string;
  startTime: string;
  endTime?: string;
  durationMs: number;
  rootThreadId?: string;
  consoleUrl?: string;
}

/** The parts of the dev server's execution page the suite reads. */
interface ExecutionPageJson {
  execution: RunRow;
  rootThreadId?: string;
  threads: { threadId: string; forkPathId?: string; status: string }[];
  nodeStatus: Record<string, { status: string; threadId?: string }>;
  pending: unknown[];
  stepFunctions?: {
    status: string;
    input?: unknown;
    historyComplete: boolean;
    states: {
      stateName: string;
      stateType: string;
      nodeId?: string;
      status: string;
      attempts?: number;
      durationMs?: number;
      threadId?: string;
    }[];
  };
}

/**
 * The real `stepthread` bin in a child process (as a user starts it), with the environment that
 * reaches moto; resolves once it prints the console's URL. `stop` sends SIGINT (Ctrl-C) and gives the
 * exit code.
 */
async function startCliProcess(
  args: string[],
  env: Record<string, string>,
): Promise<{ url: string; stop: () => Promise<number | null> }> {
  const child = spawn(process.execPath, [resolve(import.meta.dirname, '../../bin/stepthread.js'), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const url = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const found = /console at (http:\/\/\S+)/.exec(line);
      if (found) done(found[1]!);
    });
    void exited.then((code) => fail(new Error(`stepthread ${args.join(' ')} exited (${code}): ${stderr}`)));
  });
  return {
    url,
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

if (!SYNTHESIZED) {
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

/** `inspect --json --events --all-conversations` of a run as the CLI prints it. */
interface InspectJson {
  executionId: string;
  threads: { threadId: string }[];
  [key: string]: unknown;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** The parts of an `awsCost` estimate that come from how long each Lambda ran, not from what the run did. */
const MEASURED_COST = new Set(['usd', 'lambdaGbSeconds', 'byNode', 'bookkeepingUsd']);

/**
 * What two runs' `inspect --json` must agree on: every thread id written as its place in the listing
 * (`<thread 0>` is the root), the execution id as `<execution>`, times, durations and what the AWS
 * estimate derives from them as `<time>`, `<ms>` and `<measured>` (what a run takes is not what it
 * does), the outputs of `orderDependent` nodes as `<order>`. Left out, as docs/deploy.md says: the
 * state machine version a deployed execution runs (`stateMachineVersion`, the stack's only), and the
 * Task attempt on NODE_STARTED, which a deployed handler is not told.
 */
function inspectView(report: InspectJson, orderDependent: readonly string[] = []): unknown {
  let text = JSON.stringify(report);
  report.threads.forEach(({ threadId }, index) => {
    text = text.replaceAll(threadId, `<thread ${index}>`);
  });
  text = text.replaceAll(report.executionId, '<execution>');
  const { stateMachineVersion: _version, ...view } = JSON.parse(text, function (key, value: unknown) {
    if (typeof value === 'string' && ISO_TIME.test(value)) return '<time>';
    if (key === 'durationMs' && typeof value === 'number') return '<ms>';
    if (MEASURED_COST.has(key) && 'lambdaInvocations' in this) return '<measured>';
    if (key === 'attempt' && (this as { type?: string }).type === 'NODE_STARTED') return undefined;
    if (orderDependent.includes(key)) return '<order>';
    return value;
  }) as Record<string, unknown>;
  return view;
}

/** Every error the run's threads recorded, for a message when a run ends otherwise than planned. */
async function threadErrors(runtime: LocalRuntime, executionId: string): Promise<string> {
  const threads = await runtime.stores.threads.listThreadsOfExecution(executionId);
  return JSON.stringify(
    threads.flatMap(({ thread }) =>
      thread.errors.map((error) => ({ path: thread.metadata.forkPathId, ...error })),
    ),
  );
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

/** Takes the answer meant for `nodeId`'s question out of `answers`: the first naming it, else the first naming none. */
function takeAnswer(answers: Answer[], nodeId: string): InteractionReply | undefined {
  const index = answers.findIndex((answer) => answer.nodeId === nodeId);
  const at = index >= 0 ? index : answers.findIndex((answer) => answer.nodeId === undefined);
  if (at < 0) return undefined;
  const [{ nodeId: _nodeId, ...reply }] = answers.splice(at, 1) as [Answer];
  return reply as InteractionReply;
}

/** A plan's answers as `run --answers` takes them: by node id. */
function answersByNode(answers: Answer[]): Record<string, unknown> {
  const byNode: Record<string, unknown> = {};
  for (const { nodeId, ...reply } of answers) {
    if (nodeId === undefined)
      throw new Error('a plan compared through inspect names the node of each answer');
    byNode[nodeId] = answerValue(reply as InteractionReply);
  }
  return byNode;
}

function answerValue(reply: InteractionReply): unknown {
  switch (reply.kind) {
    case 'approve':
    case 'reject':
      return { approved: reply.kind === 'approve', ...(reply.reason ? { reason: reply.reason } : {}) };
    case 'select':
      return reply.choice;
    case 'input':
      return reply.value;
    case 'fail':
      return { fail: reply.reason ?? 'failed' };
  }
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
      return ['--fail', ...(reply.reason ? ['--reason', reply.reason] : [])];
  }
}

describe.skipIf(!SYNTHESIZED)('the synthesized stack in moto', () => {
  let stack: MotoStack;
  let e2e: E2e;
  let cloud: LocalRuntime;
  let sfn: SFNClient;
  let workflows: Map<string, Workflow>;
  let setup: Cloud;
  const cliResult = (args: string[]) => setup.cli(args);

  /**
   * A cancelled execution stops in Step Functions (ABORTED on AWS; on moto FAILED, the LLM Task's own
   * failure overwriting the stop) and its LLM function, polling the cancel mark, returns.
   */
  async function stoppedWithItsLlmCall(executionArn: string, llm: string, after: string): Promise<void> {
    for (let tries = 0; ; tries++) {
      const { status } = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      if (status !== 'RUNNING' || tries > 200) {
        expect(['ABORTED', 'FAILED']).toContain(status);
        break;
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    for (let tries = 0; ((await stack.running())[llm] ?? 0) > 0; tries++) {
      if (tries > 200) throw new Error(`the LLM function still waits on its model 20 s after ${after}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }

  async function cli(args: string[]): Promise<string> {
    const { code, stdout, stderr } = await cliResult(args);
    if (code !== 0) throw new Error(`stepthread ${args.join(' ')} exited ${code}: ${stderr}`);
    return stdout;
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
        nodeId: string;
      }[];
      for (const interaction of pending) {
        const reply = takeAnswer(answers, interaction.nodeId);
        if (reply) await cli(['respond', interaction.interactionId, '--stack', STACK, ...replyFlags(reply)]);
      }
      await new Promise((done) => setTimeout(done, 250));
    }
  }

  /** `stepthread run` of the deployed folder's file, in a data directory of its own: its execution id. */
  async function runWithCli(id: string, plan: Plan): Promise<string> {
    const { code, stdout, stderr } = await runCli(
      [
        'run',
        join(WORKFLOWS!, `${id}.json`),
        '--json',
        '--data-dir',
        localDataDir,
        '--input',
        JSON.stringify(plan.input),
        ...(plan.answers ? ['--answers', JSON.stringify(answersByNode(plan.answers))] : []),
      ],
      { env: {} },
    );
    expect([code, stderr]).toEqual([plan.status === 'COMPLETED' ? 0 : 1, expect.any(String)]);
    return (JSON.parse(stdout) as { executionId: string }).executionId;
  }

  async function inspectJson(executionId: string, where: string[]): Promise<InspectJson> {
    const args = ['inspect', executionId, '--json', '--events', '--all-conversations', ...where];
    const { code, stdout, stderr } =
      where[0] === '--stack' ? await cliResult(args) : await runCli(args, { env: {} });
    if (code !== 0) throw new Error(`stepthread ${args.join(' ')} exited ${code}: ${stderr}`);
    return JSON.parse(stdout) as InspectJson;
  }

  async function runEmbedded(workflow: Workflow, plan: Plan) {
    const answers = [...(plan.answers ?? [])];
    const outcome = await e2e.runtime.prepare(workflow).run(plan.input, {
      noRetryWaits: true,
      // No answer left: nobody answers, so the interaction waits until its timeout.
      answerInteraction: async (interaction, { signal }) =>
        takeAnswer(answers, interaction.nodeId) ??
        new Promise<undefined>((done) => signal?.addEventListener('abort', () => done(undefined))),
    });
    return { outcome, answersLeft: answers.length };
  }

  /** Where `stepthread run` keeps the local runs `inspect` compares with the stack's. */
  let localDataDir: string;

  beforeAll(async () => {
    localDataDir = mkdtempSync(join(tmpdir(), 'stepthread-cloud-local-'));
    setup = await startCloud('cloud');
    ({ stack, e2e, cloud, sfn, workflows } = setup);
  }, 120_000);
  afterAll(async () => {
    await setup?.close();
    if (localDataDir) rmSync(localDataDir, { recursive: true, force: true });
  });

  it('deploys a plan for every workflow of the folder', () => {
    expect([...workflows.keys()].sort()).toEqual(
      [...Object.keys(PLANS), ...CANCELLED_ONLY, ...STACK_SUITE_ONLY, ...LONG_ONLY].sort(),
    );
  });

  for (const [id, plan] of Object.entries(PLANS)) {
    it(`${id}: the same final thread state in moto as on the embedded runtime`, async () => {
      const workflow = workflows.get(id)!;
      const local = await runEmbedded(workflow, plan);
      expect(local.outcome.status).toBe(plan.status);
      const remote = await runInMoto(id, plan, `run-${id}`);
      expect(remote.answersLeft).toBe(0);
      expect(remote.status, await threadErrors(cloud, remote.executionArn)).toBe(
        plan.execution ?? (plan.status === 'COMPLETED' ? 'SUCCEEDED' : 'FAILED'),
      );
      expect(await finalState(cloud, remote.executionArn, plan.racingBranches)).toEqual(
        await finalState(e2e.runtime, local.outcome.executionId, plan.racingBranches),
      );
      if (plan.inspect) {
        const [onStack, onMachine] = [
          await inspectJson(remote.executionArn, ['--stack', STACK]),
          await inspectJson(await runWithCli(id, plan), ['--data-dir', localDataDir]),
        ];
        expect(inspectView(onStack, plan.orderDependent)).toEqual(
          inspectView(onMachine, plan.orderDependent),
        );
      }
    }, 120_000);
  }

  it('prompt-chain: 2,000 LLM nodes with 2 KB prompts, the definition deployed from S3, end as on the embedded runtime', async () => {
    const plan: Plan = { input: {}, status: 'COMPLETED' };
    const local = await runEmbedded(workflows.get('prompt-chain')!, plan);
    expect(local.outcome.status).toBe('COMPLETED');
    const remote = await runInMoto('prompt-chain', plan, 'run-prompt-chain');
    expect(remote.status).toBe('SUCCEEDED');
    const [moto, embedded] = [
      await finalState(cloud, remote.executionArn),
      await finalState(e2e.runtime, local.outcome.executionId),
    ];
    // Every node read its own prompt from the node table in the bucket, the last one included.
    const prompts = moto.root.conversation.filter((message) => message.role === 'user');
    expect(prompts).toHaveLength(2_000);
    expect(prompts.at(-1)!.content).toContain('Step 1999: ppp');
    expect(moto).toEqual(embedded);
  }, 1_800_000);

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

  it('a throttled, timed-out or unknown Lambda invocation is retried too, and the run ends as without faults', async () => {
    const plan = PLANS['fixture-readonly-set-once']!;
    const clean = await runEmbedded(workflows.get('fixture-readonly-set-once')!, plan);
    for (const error of [
      'Lambda.TooManyRequestsException',
      'Lambda.ClientExecutionTimeoutException',
      'Lambda.Unknown',
    ]) {
      await stack.faults('fail-first', error);
      try {
        const remote = await runInMoto('fixture-readonly-set-once', plan, `retried-${error.slice(7)}`);
        const { injected } = await stack.faults('none');
        expect(remote.status, error).toBe('SUCCEEDED');
        expect(injected, error).toBeGreaterThan(1);
        const history = await sfn.send(
          new GetExecutionHistoryCommand({ executionArn: remote.executionArn, maxResults: 1000 }),
        );
        const failed = (history.events ?? []).filter(
          (event) => event.lambdaFunctionFailedEventDetails?.error === error,
        );
        expect(failed, error).toHaveLength(injected);
        expect(await finalState(cloud, remote.executionArn)).toEqual(
          await finalState(e2e.runtime, clean.outcome.executionId),
        );
      } finally {
        await stack.faults('none');
      }
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
  // --- `stepthread runs` and `stepthread dev --target aws` over what the tests above left in moto ---

  /** `runs --stack … --json` as the real CLI prints it. */
  async function runsJson(...args: string[]): Promise<RunRow[]> {
    return JSON.parse(await cli(['runs', '--stack', STACK, '--json', ...args])) as RunRow[];
  }

  const nameOf = (row: RunRow) => row.executionId.split(':').at(-1)!;
  /** The executions the tests above started, by name, with the status each must show. */
  const finished = (): Map<string, { workflowId: string; status: string; sfn: string }> => {
    const expected = new Map<string, { workflowId: string; status: string; sfn: string }>();
    for (const [id, plan] of Object.entries(PLANS)) {
      const sfn = plan.execution ?? (plan.status === 'COMPLETED' ? 'SUCCEEDED' : 'FAILED');
      expected.set(`run-${id}`, { workflowId: id, status: plan.status, sfn });
    }
    expected.set('run-prompt-chain', { workflowId: 'prompt-chain', status: 'COMPLETED', sfn: 'SUCCEEDED' });
    expected.set('retried-fork-join-research', {
      workflowId: 'fork-join-research',
      status: 'COMPLETED',
      sfn: 'SUCCEEDED',
    });
    for (const error of ['TooManyRequestsException', 'ClientExecutionTimeoutException', 'Unknown']) {
      expected.set(`retried-${error}`, {
        workflowId: 'fixture-readonly-set-once',
        status: 'COMPLETED',
        sfn: 'SUCCEEDED',
      });
    }
    expected.set('crashed-support-triage', {
      workflowId: 'support-triage',
      status: 'COMPLETED',
      sfn: 'SUCCEEDED',
    });
    return expected;
  };

  it('runs --stack: a stopped execution shows ABORTED from Step Functions while the table still says RUNNING', async () => {
    const executionArn = (
      await cli(['start', 'route-loop', '--stack', STACK, '--name', 'stopped-route-loop', '--input', '{}'])
    ).trim();
    // Stopped once a node has run: the table has its record (RUNNING) and END never runs.
    for (;;) {
      const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }));
      if ((history.events ?? []).some((event) => event.type === 'TaskStateExited')) break;
      await new Promise((done) => setTimeout(done, 100));
    }
    await sfn.send(new StopExecutionCommand({ executionArn, error: 'stopped', cause: 'by the cloud suite' }));
    for (;;) {
      const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      if (described.status !== 'RUNNING') break;
      await new Promise((done) => setTimeout(done, 200));
    }
    expect((await cloud.stores.executions.getExecution(executionArn)).status).toBe('RUNNING');
    const aborted = await runsJson('--status', 'ABORTED');
    expect(aborted).toEqual([
      expect.objectContaining({
        executionId: executionArn,
        workflowId: 'route-loop',
        status: 'ABORTED',
        stepFunctionsStatus: 'ABORTED',
        rootThreadId: (await cloud.stores.executions.getExecution(executionArn)).rootThreadId,
      }),
    ]);
    expect(aborted[0]!.endTime).toBeDefined();
    expect((await runsJson('--status', 'RUNNING')).map(nameOf)).not.toContain('stopped-route-loop');
  }, 120_000);

  it('runs --stack --json lists every execution newest first, with its status, times, root thread and console link', async () => {
    const listed = await runsJson('--limit', '1000');
    const expected = finished();
    expected.set('stopped-route-loop', { workflowId: 'route-loop', status: 'ABORTED', sfn: 'ABORTED' });
    expect(listed.map(nameOf).sort()).toEqual([...expected.keys()].sort());
    for (const row of listed) {
      const want = expected.get(nameOf(row))!;
      expect(row, nameOf(row)).toMatchObject({
        workflowId: want.workflowId,
        status: want.status,
        stepFunctionsStatus: want.sfn,
        consoleUrl: `https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/${row.executionId}`,
      });
      const record = await cloud.stores.executions.getExecution(row.executionId);
      expect(row.rootThreadId).toBe(record.rootThreadId);
      const described = await sfn.send(new DescribeExecutionCommand({ executionArn: row.executionId }));
      expect(row.startTime).toBe(described.startDate!.toISOString());
      expect(row.endTime).toBe(described.stopDate!.toISOString());
      expect(row.durationMs).toBe(described.stopDate!.getTime() - described.startDate!.getTime());
    }
    const starts = listed.map((row) => row.startTime);
    expect(starts).toEqual([...starts].sort().reverse());
    // Without --limit: the newest 100 at most (here, all of them).
    expect(await runsJson()).toEqual(listed.map((row) => ({ ...row, durationMs: expect.any(Number) })));
  }, 120_000);

  it('runs --stack filters by --status, --workflow and --limit, and refuses an unknown status with a code', async () => {
    const all = await runsJson('--limit', '1000');
    const failed = [...finished()].filter(([, want]) => want.status === 'FAILED').map(([name]) => name);
    expect((await runsJson('--status', 'failed')).map(nameOf).sort()).toEqual(failed.sort());
    expect((await runsJson('--workflow', 'support-triage')).map(nameOf).sort()).toEqual([
      'crashed-support-triage',
      'run-support-triage',
    ]);
    expect(
      (await runsJson('--workflow', 'fork-join-research', '--status', 'COMPLETED')).map(nameOf).sort(),
    ).toEqual(['retried-fork-join-research', 'run-fork-join-research']);
    // A Step Functions status filters on Step Functions' view (applied by ListExecutions).
    expect((await runsJson('--status', 'SUCCEEDED')).map(nameOf).sort()).toEqual(
      all
        .filter((row) => row.stepFunctionsStatus === 'SUCCEEDED')
        .map(nameOf)
        .sort(),
    );
    expect((await runsJson('--limit', '3')).map(nameOf)).toEqual(all.slice(0, 3).map(nameOf));
    const table = await cli(['runs', '--stack', STACK, '--workflow', 'route-loop']);
    const [header, ...rows] = table.trimEnd().split('\n');
    // VERSION: the state machine version each runs (`start` started them on the `live` alias).
    expect(header).toMatch(/^EXECUTION\s+WORKFLOW\s+VERSION\s+STATUS\s+STARTED\s+DURATION\s+ROOT THREAD$/);
    expect(rows).toHaveLength(2);
    expect(rows.find((row) => row.includes('stopped-route-loop'))).toMatch(/\sroute-loop\s+1\s+ABORTED\s/);
    expect(rows.find((row) => row.includes('run-route-loop'))).toMatch(/\sroute-loop\s+1\s+COMPLETED\s/);
    const refused = await cliResult(['runs', '--stack', STACK, '--status', 'DONE']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('INVALID_RUNS_FILTER');
  }, 120_000);

  it('dev --target aws serves the stack: executions, an execution page with its graph, threads, conversation and Step Functions history, and answers an interaction', async () => {
    const dev = await startCliProcess(
      ['dev', WORKFLOWS!, '--target', 'aws', '--stack', STACK, '--port', '0'],
      setup.operatorEnv,
    );
    try {
      const get = async (path: string) => {
        const response = await fetch(`${dev.url}${path}`);
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const post = async (path: string, body: unknown) => {
        const response = await fetch(`${dev.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const page = async (executionId: string) =>
        (await get(`/api/executions/${encodeURIComponent(executionId)}`))
          .body as unknown as ExecutionPageJson;
      expect((await get('/api/health')).body).toMatchObject({ target: 'aws' });

      // The executions list: Step Functions' executions of the folder's workflows, newest first.
      const listed = (await get('/api/executions')).body as unknown as RunRow[];
      const runs = await runsJson('--limit', '1000');
      expect(listed.map((row) => row.executionId)).toEqual(runs.map((row) => row.executionId));
      for (const row of listed) {
        const same = runs.find((run) => run.executionId === row.executionId)!;
        expect(row).toMatchObject({
          status: same.status,
          stepFunctionsStatus: same.stepFunctionsStatus,
          consoleUrl: same.consoleUrl,
          startTime: same.startTime,
        });
      }

      // A finished execution's page: every node of the graph completed, the fork's threads, the
      // conversation as the stack stored it, the Step Functions view and its console link.
      const forkRun = runs.find((row) => nameOf(row) === 'run-fork-join-research')!;
      const forkPage = await page(forkRun.executionId);
      expect(forkPage.execution).toMatchObject({
        status: 'COMPLETED',
        stepFunctionsStatus: 'SUCCEEDED',
        consoleUrl: `https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/${forkRun.executionId}`,
      });
      const graph = (await get('/api/workflows/fork-join-research')).body.graph as {
        nodes: { id: string }[];
      };
      for (const node of graph.nodes) {
        expect(forkPage.nodeStatus[node.id]?.status, node.id).toBe('COMPLETED');
      }
      expect(forkPage.threads.map((thread) => thread.forkPathId ?? '(root)').sort()).toEqual([
        '(root)',
        'split/facts',
        'split/risks',
        'split/summary',
      ]);
      expect(forkPage.stepFunctions).toMatchObject({
        status: 'SUCCEEDED',
        input: { input: PLANS['fork-join-research']!.input },
        historyComplete: true,
      });
      const taskStates = forkPage.stepFunctions!.states.filter((state) => state.stateType === 'Task');
      expect(taskStates.find((state) => state.nodeId === 'plan')).toMatchObject({
        stateName: 'plan',
        status: 'SUCCEEDED',
        attempts: 1,
        durationMs: expect.any(Number),
      });
      // Each of the paths' Task states ran on its own fork child's thread.
      const children = new Set(forkPage.threads.filter((thread) => thread.forkPathId).map((t) => t.threadId));
      for (const nodeId of ['facts', 'risks', 'summary']) {
        expect(children.has(taskStates.find((state) => state.nodeId === nodeId)!.threadId!)).toBe(true);
      }
      const root = forkPage.rootThreadId!;
      const conversation = (await get(`/api/threads/${root}/conversation`)).body as {
        messages: { role: string; content: string }[];
      };
      const stored = await cloud.conversationOf((await cloud.stores.threads.getThread(root)).thread);
      expect(conversation.messages.map((m) => [m.role, m.content])).toEqual(
        stored.map((m) => [m.role, String(m.content)]),
      );
      expect(conversation.messages.length).toBeGreaterThan(0);

      // The stopped execution: ABORTED, from Step Functions.
      const stopped = runs.find((row) => nameOf(row) === 'stopped-route-loop')!;
      expect((await page(stopped.executionId)).execution).toMatchObject({
        status: 'ABORTED',
        stepFunctionsStatus: 'ABORTED',
      });
      expect((await get(`/api/executions/${encodeURIComponent(`${stopped.executionId}-nope`)}`)).status).toBe(
        404,
      );

      // A run started in the console, waiting for a person, answered through the API.
      const plan = PLANS.approval!;
      const local = await runEmbedded(workflows.get('approval')!, plan);
      const started = await post('/api/workflows/approval/runs', { input: plan.input });
      expect(started.status).toBe(202);
      const executionArn = String(started.body.executionId);
      expect(executionArn).toMatch(/^arn:aws:states:us-east-1:123456789012:execution:stepthread-approval:/);
      expect(started.body.consoleUrl).toContain(`#/v2/executions/details/${executionArn}`);
      let pending: { interactionId: string; answerable: boolean }[] = [];
      for (let tries = 0; pending.length === 0; tries += 1) {
        if (tries > 200) throw new Error('the approval was never asked');
        await new Promise((done) => setTimeout(done, 250));
        pending = (await get(`/api/interactions?execution=${encodeURIComponent(executionArn)}`))
          .body as unknown as typeof pending;
      }
      expect(pending).toEqual([
        expect.objectContaining({ interactionId: expect.any(String), answerable: true }),
      ]);
      const waiting = await page(executionArn);
      expect(waiting.execution).toMatchObject({ status: 'RUNNING', stepFunctionsStatus: 'RUNNING' });
      expect(waiting.nodeStatus.approve?.status).toBe('WAITING');
      expect(waiting.nodeStatus.draft?.status).toBe('COMPLETED');
      expect(waiting.stepFunctions!.states.find((state) => state.stateName === 'approve')).toMatchObject({
        status: 'RUNNING',
        nodeId: 'approve',
      });
      expect((await get('/api/executions')).body).toEqual(
        expect.arrayContaining([expect.objectContaining({ executionId: executionArn, status: 'RUNNING' })]),
      );
      const wrong = await post(`/api/interactions/${encodeURIComponent(pending[0]!.interactionId)}/answer`, {
        select: 1,
      });
      expect(wrong.status).toBe(400);
      expect(wrong.body).toMatchObject({ error: { code: 'INVALID_INTERACTION_ANSWER' } });
      const answered = await post(
        `/api/interactions/${encodeURIComponent(pending[0]!.interactionId)}/answer`,
        {
          approve: true,
          reason: 'looks right',
        },
      );
      expect(answered.status).toBe(202);
      let done = waiting;
      // Until Step Functions too says it ended: the table's thread finishes a state or two before.
      for (
        let tries = 0;
        done.execution.status === 'RUNNING' || done.execution.stepFunctionsStatus === 'RUNNING';
        tries += 1
      ) {
        if (tries > 200) throw new Error('the answered run never ended');
        await new Promise((resolve) => setTimeout(resolve, 250));
        done = await page(executionArn);
      }
      expect(done.execution).toMatchObject({ status: 'COMPLETED', stepFunctionsStatus: 'SUCCEEDED' });
      expect(done.nodeStatus.approve?.status).toBe('COMPLETED');
      expect(done.pending).toEqual([]);
      expect(await finalState(cloud, executionArn)).toEqual(
        await finalState(e2e.runtime, local.outcome.executionId),
      );
      const again = await post(`/api/interactions/${encodeURIComponent(pending[0]!.interactionId)}/answer`, {
        approve: true,
      });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ error: { code: 'INTERACTION_ALREADY_ANSWERED' } });

      // Retry over the stack: a copy from a node, with a profile edit, started on the state machine
      // (through its entry), ends COMPLETED with the edit in effect; the finished source is not run.
      const finishedRun = await post(`/api/threads/${root}/run`, {});
      expect(finishedRun.status).toBe(409);
      expect(finishedRun.body).toMatchObject({ error: { code: 'INVALID_STATUS_TRANSITION' } });
      const copied = await post(`/api/threads/${root}/copy`, {
        fromNodeId: 'report',
        profile: { default: { provider: 'scripted', responses: ['Report, edited in the console.'] } },
      });
      expect(copied.status).toBe(201);
      const copyRun = await post(`/api/threads/${String(copied.body.threadId)}/run`, {});
      expect(copyRun.status).toBe(202);
      const copyArn = String(copyRun.body.executionId);
      expect(copyArn).toMatch(
        /^arn:aws:states:us-east-1:123456789012:execution:stepthread-fork-join-research:/,
      );
      let copyPage = await page(copyArn);
      for (let tries = 0; copyPage.execution.stepFunctionsStatus === 'RUNNING'; tries += 1) {
        if (tries > 200) throw new Error('the copy never ended');
        await new Promise((resolve) => setTimeout(resolve, 250));
        copyPage = await page(copyArn);
      }
      expect(copyPage.execution).toMatchObject({ status: 'COMPLETED', stepFunctionsStatus: 'SUCCEEDED' });
      const copyThread = (await cloud.stores.threads.getThread(String(copied.body.threadId))).thread;
      expect(JSON.stringify(copyThread.output)).toContain('Report, edited in the console.');
    } finally {
      expect(await dev.stop()).toBe(0);
    }
  }, 240_000);

  it('cancel --stack stops an execution whose model call is in flight: the LLM function sees the cancel mark and returns, the run ends CANCELLED, its THREAD_CANCELLED on the bus', async () => {
    const llm = [...stack.roles].find(([, role]) => /^RuntimeLlmFunction/.test(role.logicalId))![0];
    const bus = busWatch(stack.endpoint, new EventBridgeClient(setup.clientConfig));
    const observed = await bus.observeBus('cancel-events', 'observe-cancel', CANCELLED_EVENTS);
    const executionArn = (
      await cli(['start', 'slow-model', '--stack', STACK, '--name', 'cancelled-slow-model', '--input', '{}'])
    ).trim();
    // The model call is in flight: the LLM function runs (its scripted model answers after 300 s).
    for (let tries = 0; ((await stack.running())[llm] ?? 0) === 0; tries++) {
      if (tries > 600) throw new Error('the LLM function was never invoked');
      await new Promise((done) => setTimeout(done, 100));
    }
    const cancelled = JSON.parse(
      await cli(['cancel', executionArn, '--stack', STACK, '--reason', 'over budget', '--json']),
    ) as Record<string, unknown>;
    expect(cancelled).toMatchObject({
      executionId: executionArn,
      status: 'CANCELLED',
      reason: 'over budget',
      alreadyCancelled: false,
      threadsCancelled: 1,
    });
    // Stopped. AWS keeps a stopped execution ABORTED; moto stops it at its next step, and the LLM
    // Task's own failure (its call aborted) then overwrites that with FAILED (its environment's
    // set_error replaces a stop), so either ends it here. The table says CANCELLED either way.
    // The function polls the mark every 2 s: it returns long before its model would have answered.
    await stoppedWithItsLlmCall(executionArn, llm, 'the cancel');
    expect(await stack.calls()).toContainEqual(
      expect.objectContaining({ principal: llm, action: 'dynamodb:GetItem', allowed: true }),
    );
    const { rootThreadId } = await cloud.stores.executions.getExecution(executionArn);
    expect((await cloud.stores.executions.getExecution(executionArn)).status).toBe('CANCELLED');
    const { thread } = await cloud.stores.threads.getThread(rootThreadId);
    expect(thread.status).toBe('CANCELLED');
    expect(thread.step).toBe(1);
    const inspected = JSON.parse(await cli(['inspect', executionArn, '--stack', STACK, '--json'])) as {
      executionStatus: string;
      threads: { status: string }[];
    };
    expect(inspected.executionStatus).toBe('CANCELLED');
    expect(inspected.threads.map((entry) => entry.status)).toEqual(['CANCELLED']);
    expect((await runsJson('--status', 'CANCELLED')).map(nameOf)).toEqual(['cancelled-slow-model']);
    // On the stack's bus as every other event of the run: found by the stack's EventBusName output.
    expect(await bus.eventsOfThread(observed.url, rootThreadId)).toEqual([
      expect.objectContaining({
        type: 'THREAD_CANCELLED',
        threadId: rootThreadId,
        workflowId: 'slow-model',
        from: 'RUNNING',
        to: 'CANCELLED',
        reason: 'over budget',
      }),
    ]);
    // What the operator policy allowed: the mark, the records, StopExecution, the events.
    const operator = setup.operatorCalls.filter((call) => call.allowed).map((call) => call.action);
    expect(operator).toEqual(
      expect.arrayContaining([
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'states:StopExecution',
        'events:PutEvents',
      ]),
    );
    expect(
      setup.operatorCalls.filter((call) => !call.allowed && /^(dynamodb|events):/.test(call.action)),
    ).toEqual([]);
  }, 120_000);

  // After `cancel --stack`, whose runs listing expects its run as the only CANCELLED one.
  it('dev --target aws: Stop (POST /api/executions/:id/cancel) stops a deployed execution whose model call is in flight; its page says CANCELLED and why, its THREAD_CANCELLED on the bus', async () => {
    const llm = [...stack.roles].find(([, role]) => /^RuntimeLlmFunction/.test(role.logicalId))![0];
    const bus = busWatch(stack.endpoint, new EventBridgeClient(setup.clientConfig));
    const observed = await bus.observeBus('stop-events', 'observe-stop', CANCELLED_EVENTS);
    const executionArn = (
      await cli(['start', 'slow-model', '--stack', STACK, '--name', 'stopped-from-dev', '--input', '{}'])
    ).trim();
    for (let tries = 0; ((await stack.running())[llm] ?? 0) === 0; tries++) {
      if (tries > 600) throw new Error('the LLM function was never invoked');
      await new Promise((done) => setTimeout(done, 100));
    }
    const dev = await startCliProcess(
      ['dev', WORKFLOWS!, '--target', 'aws', '--stack', STACK, '--port', '0'],
      setup.operatorEnv,
    );
    try {
      const stopped = await fetch(`${dev.url}/api/executions/${encodeURIComponent(executionArn)}/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'stopped from the console' }),
      });
      expect(stopped.status).toBe(200);
      expect(await stopped.json()).toMatchObject({
        executionId: executionArn,
        status: 'CANCELLED',
        reason: 'stopped from the console',
        alreadyCancelled: false,
        threadsCancelled: 1,
      });
      // Stopped in Step Functions (ABORTED, or FAILED on moto: see cancel --stack above).
      // The LLM function saw the mark and returned.
      await stoppedWithItsLlmCall(executionArn, llm, 'the Stop');
      const shown = (await (
        await fetch(`${dev.url}/api/executions/${encodeURIComponent(executionArn)}`)
      ).json()) as ExecutionPageJson & { error?: { code: string; message: string } };
      expect(shown.execution.status).toBe('CANCELLED');
      expect(shown.threads.map((thread) => thread.status)).toEqual(['CANCELLED']);
      expect(shown.error).toEqual({
        code: 'RUN_CANCELLED',
        message: 'the run was cancelled: stopped from the console',
      });
      expect(await bus.eventsOfThread(observed.url, shown.rootThreadId!)).toEqual([
        expect.objectContaining({
          type: 'THREAD_CANCELLED',
          threadId: shown.rootThreadId,
          reason: 'stopped from the console',
        }),
      ]);
    } finally {
      expect(await dev.stop()).toBe(0);
    }
  }, 120_000);

  // --- IAM: every SDK call the bundles made above, checked by the bridge against its function's role
  // (a refused call failed its run above already; this names it). permissions.suite.ts checks for
  // unused grants over both suites' calls. ---

  // After the listing and dev tests, which list the runs made before them.
  it('retentionDays (30 here): an ended run is set to expire; after what TTL deletes, a copy made before still reads its history and conversation', async () => {
    const remote = await runInMoto('route-loop', PLANS['route-loop']!, 'expiring-route-loop');
    expect(remote.status).toBe('SUCCEEDED');
    const { rootThreadId, endTime } = await cloud.stores.executions.getExecution(remote.executionArn);
    const expiry = Math.floor(Date.parse(endTime!) / 1000) + 30 * 86_400;
    const tableName = stack.outputs.TableName!;
    const { dynamo } = createAwsClients(
      { kind: 'endpoint', endpoint: stack.endpoint },
      {
        tableName,
        bucketName: stack.outputs.BucketName!,
      },
    );
    const scan = async () =>
      ((await dynamo.send(new ScanCommand({ TableName: tableName }))).Items ?? []) as Record<
        string,
        unknown
      >[];
    const runItems = (await scan()).filter(
      (item) => item.pk === `THREAD#${rootThreadId}` || item.pk === `EXEC#${remote.executionArn}`,
    );
    expect(runItems.length).toBeGreaterThan(3);
    expect(runItems.map((item) => item.expiresAt).filter((at) => at !== expiry)).toEqual([]);
    const conversation = await cloud.conversationOf(
      (await cloud.stores.threads.getThread(rootThreadId)).thread,
    );
    const copy = await cloud.copyThread(rootThreadId);
    // What DynamoDB's TTL does a month and a day later: delete every item whose expiry has passed.
    const expired = (await scan()).filter(
      (item) => typeof item.expiresAt === 'number' && item.expiresAt <= expiry + 86_400,
    );
    for (const item of expired) {
      await dynamo.send(new DeleteCommand({ TableName: tableName, Key: { pk: item.pk, sk: item.sk } }));
    }
    expect(expired.length).toBeGreaterThan(0);
    await expect(cloud.stores.executions.getExecution(remote.executionArn)).rejects.toMatchObject({
      code: 'EXECUTION_NOT_FOUND',
    });
    const journal = await cloud.stores.threads.readJournal(copy.id);
    expect(journal.executionHistory).toHaveLength(copy.metadata.copiedAtStep!);
    expect(await cloud.conversationOf((await cloud.stores.threads.getThread(copy.id)).thread)).toEqual(
      conversation,
    );
  }, 120_000);

  it("every SDK call of every function was allowed by that function's role as synthesized", async () => {
    const calls = await stack.calls();
    // The runs above reached the table, the bucket and the bus from every function they invoked.
    expect(new Set(calls.map((call) => call.principal)).size).toBeGreaterThan(5);
    expect(deniedCalls(calls)).toEqual([]);
  });
});
