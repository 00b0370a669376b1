import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudFormationClient, CreateStackCommand, DeleteStackCommand } from '@aws-sdk/client-cloudformation';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeEventBusCommand,
  EventBridgeClient,
  PutEventsCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateBucketCommand, DeleteBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import {
  CreateStateMachineAliasCommand,
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  DescribeStateMachineCommand,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  ListExecutionsCommand,
  type SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
  UpdateStateMachineAliasCommand,
  UpdateStateMachineCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RerunJson } from '../../cli/commands/rerun.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { CopyEdit } from '../../engine/thread/copy-edits.ts';
import { workflowForThread } from '../../engine/thread/copy-workflow-edits.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { tableDefinition } from '../../functions/stores/table.ts';
import { compileForDeploy } from '../../infra/compile.ts';
import { type E2e, plain } from '../e2e/helpers.ts';
import { type BusWatch, busWatch } from './bus.ts';
import { ACCOUNT, type MotoStack, REGION, type Template } from './moto.ts';
import { type Cloud, STACK, SYNTHESIZED, startCloud } from './setup.ts';

const TICKETS = { tickets: ['Printer jams', 'Site down', 'Typo on pricing page', 'Card payments failing'] };

/** After the check that continues an execution: the continue Task (6 events), the CONTINUED Pass (2), its end (1). */
const AFTER_CHECK = 9;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe.skipIf(!SYNTHESIZED)('the deployed stack’s AWS behaviour, in moto', () => {
  let stack: MotoStack;
  let template: Template;
  let e2e: E2e;
  let cloud: LocalRuntime;
  let sfn: SFNClient;
  let events: EventBridgeClient;
  let queue: BusWatch['queue'];
  let observeBus: BusWatch['observeBus'];
  let drain: BusWatch['drain'];
  let eventsOfThread: BusWatch['eventsOfThread'];
  let s3: S3Client;
  let workflows: Map<string, Workflow>;
  let setup: Cloud;
  /** The CLI in-process with an operator's environment; `--stack` finds the table and bucket. */
  const cli = (args: string[], env?: Record<string, string>) => setup.cli(args, env);

  async function finished(executionArn: string): Promise<DescribeExecutionCommandOutput> {
    for (;;) {
      const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      if (described.status !== 'RUNNING') return described;
      await sleep(250);
    }
  }

  async function history(executionArn: string): Promise<HistoryEvent[]> {
    const all: HistoryEvent[] = [];
    let nextToken: string | undefined;
    do {
      const page = await sfn.send(
        new GetExecutionHistoryCommand({
          executionArn,
          maxResults: 1000,
          ...(nextToken ? { nextToken } : {}),
        }),
      );
      all.push(...(page.events ?? []));
      nextToken = page.nextToken;
    } while (nextToken);
    return all;
  }

  /** The template's rules whose logical id contains `part`, with the name moto.ts gave each. */
  function rules(part: string): { name: string; properties: Record<string, unknown> }[] {
    return Object.entries(template.Resources)
      .filter(([id, resource]) => resource.Type === 'AWS::Events::Rule' && id.includes(part))
      .map(([id, resource]) => ({
        name: `${STACK}-${id}`.slice(0, 64),
        properties: resource.Properties ?? {},
      }));
  }

  /** What a run leaves on its root thread, thread ids (which derive from execution ids) masked. */
  async function runState(runtime: LocalRuntime, threadId: string) {
    const { thread } = await runtime.stores.threads.getThread(threadId);
    const journal = await runtime.stores.threads.readJournal(threadId);
    const state = {
      status: thread.status,
      output: thread.output,
      step: thread.step,
      errors: thread.errors,
      variables: thread.variables,
      conversation: plain(await runtime.conversationOf(thread)),
      history: journal.executionHistory.map((entry) => [entry.nodeId, entry.status, entry.step]),
      events: journal.events
        .filter((event) => event.type !== 'THREAD_CONTINUED')
        .map((event) => `${event.type} ${'nodeId' in event ? event.nodeId : ''}`),
    };
    return JSON.parse(JSON.stringify(state).replace(/t-[0-9a-f]{32}/g, '<thread>')) as unknown;
  }

  beforeAll(async () => {
    setup = await startCloud('cloud-stack');
    ({ stack, template, e2e, cloud, sfn, workflows } = setup);
    events = new EventBridgeClient(setup.clientConfig);
    ({ queue, observeBus, drain, eventsOfThread } = busWatch(stack.endpoint, events));
    s3 = new S3Client({ ...setup.clientConfig, forcePathStyle: true });
  }, 120_000);
  afterAll(() => setup?.close());

  /**
   * The authorisations a CLI command's SDK calls needed, each checked against the operator policy as
   * synthesized (actions and resources: setup.ts records them), and those the policy does not allow.
   */
  async function checked(args: string[]) {
    const before = setup.operatorCalls.length;
    const result = await cli(args);
    const calls = setup.operatorCalls.slice(before);
    const beyond = [
      ...new Set(
        calls
          .filter((call) => !call.allowed)
          .map((call) => `${call.action} ${call.resources.join(' ').replace(/[0-9a-f]{64}/g, '<hash>')}`),
      ),
    ].sort();
    return { result, calls, beyond };
  }
  /** `--stack` reads the stack's outputs (DescribeStacks), which the policy leaves out on purpose. */
  const describeStacks = `cloudformation:DescribeStacks arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${STACK}/*`;

  it('the operator policy allows every call of start, pending, respond, inspect and runs, on the resources they touch', async () => {
    const input = JSON.stringify({ detail: { subject: 'Password reset' } });
    const start = await checked([
      'start',
      'approval',
      '--stack',
      STACK,
      '--name',
      'operator',
      '--input',
      input,
    ]);
    expect(start.result.code).toBe(0);
    // Its first `--stack` command reads the outputs; the others use the cached names.
    expect(start.beyond).toEqual([describeStacks]);
    expect(start.calls.map((call) => call.action)).toContain('states:StartExecution');
    const executionArn = start.result.stdout.trim();
    let pending: Awaited<ReturnType<typeof checked>>;
    for (;;) {
      pending = await checked(['pending', executionArn, '--stack', STACK, '--json']);
      if ((JSON.parse(pending.result.stdout) as unknown[]).length > 0) break;
      await sleep(250);
    }
    expect(pending.beyond).toEqual([]);
    const [open] = JSON.parse(pending.result.stdout) as { interactionId: string }[];
    const respond = await checked(['respond', open!.interactionId, '--stack', STACK, '--approve']);
    expect(respond.result.code).toBe(0);
    expect(respond.beyond).toEqual([]);
    expect(respond.calls.map((call) => call.action)).toContain('states:SendTaskSuccess');
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');
    const inspect = await checked(['inspect', executionArn, '--stack', STACK, '--json']);
    expect(inspect.result.code).toBe(0);
    expect(inspect.beyond).toEqual([]);
    const runs = await checked(['runs', '--stack', STACK, '--json']);
    expect(runs.result.code).toBe(0);
    expect(runs.beyond).toEqual([]);
    // Starting with an input over 8 KB also writes it to the bucket under values/: in the policy too.
    const large = JSON.stringify({ detail: { subject: 'x'.repeat(10_000) } });
    const largeStart = await checked([
      'start',
      'approval',
      '--stack',
      STACK,
      '--name',
      'operator-large',
      '--input',
      large,
    ]);
    expect(largeStart.result.code).toBe(0);
    expect(largeStart.beyond).toEqual([]);
    expect(largeStart.calls.map((call) => call.action)).toContain('s3:PutObject');
    // `respond --fail` fails the run with SendTaskFailure: in the policy too.
    let asked: { interactionId: string }[] = [];
    while (asked.length === 0) {
      await sleep(250);
      asked = JSON.parse(
        (await cli(['pending', largeStart.result.stdout.trim(), '--stack', STACK, '--json'])).stdout,
      );
    }
    const fail = await checked(['respond', asked[0]!.interactionId, '--stack', STACK, '--fail']);
    expect(fail.result.code).toBe(0);
    expect(fail.beyond).toEqual([]);
    expect(fail.calls.map((call) => call.action)).toContain('states:SendTaskFailure');
    expect((await finished(largeStart.result.stdout.trim())).status).toBe('FAILED');
  }, 120_000);

  it('copy --stack writes the copy to the table: exactly the writes docs/deploy.md lists beyond the operator policy', async () => {
    const input = JSON.stringify({ topic: 'caching' });
    const started = await cli([
      'start',
      'fork-join-research',
      '--stack',
      STACK,
      '--name',
      'to-copy',
      '--input',
      input,
    ]);
    const done = await finished(started.stdout.trim());
    const { rootThreadId } = JSON.parse(done.output!) as { rootThreadId: string };
    const copy = await checked(['copy', rootThreadId, '--from', 'report', '--stack', STACK]);
    expect(copy.result.code).toBe(0);
    const table = stack.outputs.TableName!;
    // Its PutItems are within the policy since `cancel` needs PutItem (CancelRuns).
    expect(copy.beyond).toEqual([
      `dynamodb:BatchWriteItem arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}`,
    ]);
    // --set is checked against the deployed declarations, in the node table the definition names.
    const loop = await finished(
      (
        await cli([
          'start',
          'route-loop',
          '--stack',
          STACK,
          '--name',
          'to-copy-set',
          '--input',
          JSON.stringify(TICKETS),
        ])
      ).stdout.trim(),
    );
    const loopThread = (JSON.parse(loop.output!) as { rootThreadId: string }).rootThreadId;
    const refused = await checked([
      'copy',
      loopThread,
      '--from',
      'record',
      '--set',
      'escalated="x"',
      '--stack',
      STACK,
    ]);
    expect(refused.result.code).toBe(2);
    expect(refused.result.stderr).toMatch(/INVALID_VARIABLE: .*"escalated" \(thread\) is declared number/);
    expect(refused.beyond).toEqual([]);
    expect(refused.calls.map((call) => `${call.action} ${call.resources.join(' ')}`)).toContainEqual(
      expect.stringMatching(/^s3:GetObject arn:aws:s3:::[^/]+\/node-tables\/[0-9a-f]{12}\.json$/),
    );
  }, 120_000);

  /** Starts size-check on the stack with `size` (over its limit of 1: it fails at check); its root thread. */
  async function failedSizeCheck(name: string, size: number): Promise<string> {
    const started = await cli([
      'start',
      'size-check',
      '--stack',
      STACK,
      '--name',
      name,
      '--input',
      JSON.stringify({ size }),
    ]);
    expect(started.code).toBe(0);
    const executionArn = started.stdout.trim();
    expect((await finished(executionArn)).status).toBe('FAILED');
    return (await cloud.stores.executions.getExecution(executionArn)).rootThreadId;
  }

  /** The same copy made and run on the embedded runtime (`run --thread`): what the stack's must equal. */
  async function locallyCopied(size: number, edits: CopyEdit[]): Promise<string> {
    const workflow = workflows.get('size-check')!;
    const source = await e2e.runtime.prepare(workflow).run({ size });
    expect(source.status).toBe('FAILED');
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'check', edits, workflow });
    const run = await e2e.runtime
      .prepare(workflowForThread(workflow, copy), { startNodeId: 'check' })
      .runThread(copy.id);
    expect(run.status).toBe('COMPLETED');
    return copy.id;
  }

  it('copy --stack --from the failed node with a --set fix, then start --thread: the copy COMPLETES as the same copy does locally, within the operator policy', async () => {
    const rootThreadId = await failedSizeCheck('size-5', 5);
    const copy = await checked([
      'copy',
      rootThreadId,
      '--from',
      'check',
      '--set',
      'limit=100',
      '--stack',
      STACK,
    ]);
    expect(copy.result.code).toBe(0);
    const copyId = copy.result.stdout.trim();
    const start = await checked(['start', 'size-check', '--thread', copyId, '--stack', STACK]);
    expect([start.result.code, start.result.stderr]).toEqual([
      0,
      `starting thread ${copyId} from node check\n`,
    ]);
    expect(start.beyond).toEqual([]);
    expect(start.calls.map((call) => call.action)).toEqual(
      expect.arrayContaining(['states:DescribeStateMachine', 'states:StartExecution']),
    );
    const executionArn = start.result.stdout.trim();
    expect(executionArn).toMatch(/^arn:aws:states:us-east-1:123456789012:execution:stepthread-size-check:/);
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');
    expect(await cloud.stores.executions.getExecution(executionArn)).toMatchObject({
      rootThreadId: copyId,
      status: 'COMPLETED',
    });
    const local = await locallyCopied(5, [{ kind: 'variable', name: 'limit', value: 100 }]);
    expect(await runState(cloud, copyId)).toEqual(await runState(e2e.runtime, local));
    expect((await cloud.stores.threads.getThread(copyId)).thread.output).toEqual({ accepted: 5 });
    // Started once: a second start is refused before any execution starts.
    const again = await cli(['start', 'size-check', '--thread', copyId, '--stack', STACK]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/INVALID_STATUS_TRANSITION/);
  }, 120_000);

  it('a --node-config edit on the stack takes effect: the CODE handler runs the copy’s code, as the local copy compiled with it does', async () => {
    const rootThreadId = await failedSizeCheck('size-9', 9);
    const code = 'return { accepted: -input.size }';
    const copy = await cli([
      'copy',
      rootThreadId,
      '--from',
      'check',
      '--node-config',
      `check.code=${JSON.stringify(code)}`,
      '--stack',
      STACK,
    ]);
    expect([copy.code, copy.stderr]).toEqual([0, '']);
    const copyId = copy.stdout.trim();
    const started = await cli(['start', 'size-check', '--thread', copyId, '--stack', STACK]);
    expect((await finished(started.stdout.trim())).status).toBe('SUCCEEDED');
    expect((await cloud.stores.threads.getThread(copyId)).thread.output).toEqual({ accepted: -9 });
    const local = await locallyCopied(9, [{ kind: 'nodeConfig', nodeId: 'check', key: 'code', value: code }]);
    expect(await runState(cloud, copyId)).toEqual(await runState(e2e.runtime, local));
    // A key the state machine's shape decides is refused at copy time, naming what can be edited.
    const refused = await cli([
      'copy',
      rootThreadId,
      '--from',
      'check',
      '--node-config',
      'check.outputVariable="limit"',
      '--stack',
      STACK,
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /COPY_EDIT_NOT_DEPLOYABLE .*code, language, timeoutMs, memoryLimitMb, inputs can be edited there/,
    );
  }, 120_000);

  it('copy --stack --from a FORK of a finished run (nested forks) with a --set, then start --thread: the copy forks again and ends as the same copy does locally', async () => {
    const input = { topic: 'caching' };
    const started = await cli([
      'start',
      'nested-forks',
      '--stack',
      STACK,
      '--name',
      'to-copy-fork',
      '--input',
      JSON.stringify(input),
    ]);
    const source = started.stdout.trim();
    expect((await finished(source)).status).toBe('SUCCEEDED');
    const { rootThreadId } = await cloud.stores.executions.getExecution(source);
    const copy = await cli([
      'copy',
      rootThreadId,
      '--from',
      'outer',
      '--set',
      'sideNote="edited"',
      '--stack',
      STACK,
    ]);
    expect([copy.code, copy.stderr]).toEqual([0, '']);
    const copyId = copy.stdout.trim();
    const start = await cli(['start', 'nested-forks', '--thread', copyId, '--stack', STACK]);
    expect([start.code, start.stderr]).toEqual([0, `starting thread ${copyId} from node outer\n`]);
    const executionArn = start.stdout.trim();
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');

    const workflow = workflows.get('nested-forks')!;
    const local = await e2e.runtime.prepare(workflow).run(input);
    expect(local.status).toBe('COMPLETED');
    const localCopy = await e2e.runtime.copyThread(local.threadId, {
      fromNodeId: 'outer',
      edits: [{ kind: 'variable', name: 'sideNote', value: 'edited' }],
      workflow,
    });
    const rerun = await e2e.runtime
      .prepare(workflowForThread(workflow, localCopy), { startNodeId: 'outer' })
      .runThread(localCopy.id);
    expect(rerun.status).toBe('COMPLETED');
    expect(await runState(cloud, copyId)).toEqual(await runState(e2e.runtime, localCopy.id));
    // The branches ran again, on children of the copy: the parent keeps the edited variable.
    expect((await cloud.stores.threads.getThread(copyId)).thread.output).toMatchObject({
      sideNote: 'edited',
    });
    const children = async (runtime: LocalRuntime, executionId: string) =>
      (await runtime.stores.threads.listThreadsOfExecution(executionId))
        .map(({ thread }) => `${thread.metadata.forkPathId ?? '(root)'}:${thread.status}`)
        .sort();
    expect(await children(cloud, executionArn)).toEqual(await children(e2e.runtime, rerun.executionId));
  }, 120_000);

  it('rerun --failed --from check --stack: a dry run plans, --yes copies each failed run with the fix and starts it, FAILED → COMPLETED', async () => {
    // The test before failed a size-check run of its own: --since must leave it out.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const since = new Date(Date.now() - 100).toISOString();
    const sources = [];
    for (const size of [6, 7, 8]) sources.push(await failedSizeCheck(`rerun-size-${size}`, size));
    const args = [
      'rerun',
      '--failed',
      '--from',
      'check',
      '--workflow',
      'size-check',
      '--since',
      since,
      '--set',
      'limit=100',
      '--stack',
      STACK,
    ];
    const dry = await cli([...args, '--json']);
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    const plan = JSON.parse(dry.stdout) as RerunJson;
    expect(plan.runs.map((run) => run.rootThreadId).sort()).toEqual([...sources].sort());
    expect(plan.runs.every((run) => run.skipped === undefined && run.copyThreadId === undefined)).toBe(true);
    const done = await checked([...args, '--yes', '--json']);
    expect(done.result.code).toBe(0);
    const report = JSON.parse(done.result.stdout) as RerunJson;
    expect(report.runs.map((run) => [run.status, run.error?.code, run.newStatus])).toEqual(
      Array(3).fill(['FAILED', 'CODE_ERROR', 'COMPLETED']),
    );
    for (const run of report.runs) {
      const { thread } = await cloud.stores.threads.getThread(run.copyThreadId!);
      const source = await cloud.stores.threads.getThread(run.rootThreadId);
      expect(thread.output).toEqual({ accepted: (source.thread.input as { size: number }).size });
      expect(await cloud.stores.executions.getExecution(run.newExecutionId!)).toMatchObject({
        rootThreadId: run.copyThreadId,
        status: 'COMPLETED',
      });
    }
    // Within the operator policy: listing, reading, the copies' PutItems and UpdateItems (CancelRuns),
    // DescribeStateMachine, StartExecution, DescribeExecution. (These copies hold one node result, START's;
    // a copy holding more writes them with a BatchWriteItem, beyond the policy: the copy --stack test above.)
    expect(done.beyond).toEqual([]);
    expect(done.calls.map((call) => call.action)).toEqual(
      expect.arrayContaining(['states:ListExecutions', 'states:StartExecution', 'states:DescribeExecution']),
    );
  }, 240_000);

  it('--stack after a redeploy: a cached table that is gone is looked up again, and the command runs once more', async () => {
    const stackName = 'StepthreadRedeployed';
    const cloudformation = new CloudFormationClient(setup.clientConfig);
    const dynamo = new DynamoDBClient(setup.clientConfig);
    /** A stand-in stack whose TableName output names a new table, as a deploy after a delete gives. */
    const deploy = async (generation: number) => {
      const tableName = `${stackName}-table-${generation}`;
      const bucketName = `${stackName.toLowerCase()}-bucket-${generation}`;
      await dynamo.send(new CreateTableCommand(tableDefinition(tableName)));
      await s3.send(new CreateBucketCommand({ Bucket: bucketName }));
      const { StackId } = await cloudformation.send(
        new CreateStackCommand({
          StackName: stackName,
          TemplateBody: JSON.stringify({
            Resources: { Placeholder: { Type: 'AWS::CloudFormation::WaitConditionHandle' } },
            Outputs: { TableName: { Value: tableName }, BucketName: { Value: bucketName } },
          }),
        }),
      );
      return { tableName, bucketName, stackId: StackId! };
    };
    const cachedEntry = () => {
      const dir = join(setup.operatorEnv.STEPTHREAD_DATA_DIR!, 'stacks');
      const file = readdirSync(dir).find((name) => name.startsWith(`${stackName}-`))!;
      return JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
        stackId: string;
        outputs: Record<string, string>;
      };
    };
    const undeploy = async (deployed: { tableName: string; bucketName: string }) => {
      await cloudformation.send(new DeleteStackCommand({ StackName: stackName }));
      await dynamo.send(new DeleteTableCommand({ TableName: deployed.tableName }));
      await s3.send(new DeleteBucketCommand({ Bucket: deployed.bucketName }));
    };
    const describeStacks = () =>
      setup.operatorCalls.filter((call) => call.action === 'cloudformation:DescribeStacks').length;
    try {
      const first = await deploy(1);
      expect(await cli(['pending', '--stack', stackName, '--json'])).toMatchObject({
        code: 0,
        stdout: '[]\n',
      });
      expect(cachedEntry()).toMatchObject({
        stackId: first.stackId,
        outputs: { TableName: first.tableName },
      });

      // Deleted and deployed again: a new StackId, a new table; the cached entry names the old one.
      await undeploy(first);
      const second = await deploy(2);
      expect(second.stackId).not.toBe(first.stackId);
      const before = describeStacks();
      expect(await cli(['pending', '--stack', stackName, '--json'])).toMatchObject({
        code: 0,
        stdout: '[]\n',
      });
      expect(describeStacks() - before).toBe(1);
      expect(cachedEntry()).toMatchObject({
        stackId: second.stackId,
        outputs: { TableName: second.tableName },
      });

      // Cached from now on; --no-cache asks CloudFormation every time.
      const cached = describeStacks();
      expect((await cli(['pending', '--stack', stackName, '--json'])).code).toBe(0);
      expect(describeStacks()).toBe(cached);
      expect((await cli(['pending', '--stack', stackName, '--json', '--no-cache'])).code).toBe(0);
      expect((await cli(['pending', '--stack', stackName, '--json', '--no-cache'])).code).toBe(0);
      expect(describeStacks()).toBe(cached + 2);

      // start with a large input: its upload meets the cached bucket gone, and goes to the new one.
      await undeploy(second);
      const third = await deploy(3);
      const large = JSON.stringify({ detail: { subject: 'x'.repeat(10_000) } });
      const started = await cli([
        'start',
        'approval',
        '--stack',
        stackName,
        '--name',
        'redeployed',
        '--input',
        large,
      ]);
      expect(started.code).toBe(0);
      await sfn.send(new StopExecutionCommand({ executionArn: started.stdout.trim() })).catch(() => {});
      const uploaded = await s3.send(
        new ListObjectsV2Command({ Bucket: third.bucketName, Prefix: 'values/' }),
      );
      expect(uploaded.KeyCount).toBe(1);
      expect(cachedEntry()).toMatchObject({
        stackId: third.stackId,
        outputs: { BucketName: third.bucketName },
      });
    } finally {
      cloudformation.destroy();
      dynamo.destroy();
    }
  }, 120_000);

  it('start: the same name never starts a second run, and another input under that name is refused', async () => {
    const args = ['start', 'context-pipeline', '--stack', STACK, '--name', 'same-name', '--input', '{}'];
    const first = await cli(args);
    expect(first.code).toBe(0);
    const executionArn = first.stdout.trim();
    // While it runs, StartExecution with the same name and input answers with the same execution.
    expect((await cli(args)).stdout.trim()).toBe(executionArn);
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');
    // Once it ended, Step Functions refuses the name (ExecutionAlreadyExists): start reports that execution.
    const again = await cli(args);
    expect(again).toMatchObject({ code: 0, stdout: `${executionArn}\n` });
    expect(again.stderr).toContain('already started (SUCCEEDED)');
    const other = await cli([...args.slice(0, -1), '{"topic": "other"}']);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('different input');
    const machine = stack.stateMachines.get('stepthread-context-pipeline')!;
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn: machine }));
    expect(listed.executions?.filter((execution) => execution.name === 'same-name')).toHaveLength(1);
  }, 120_000);

  it('start: an input over 8 KB goes to the bucket under values/ and the execution starts with a reference to it', async () => {
    const input = { tickets: ['x'.repeat(300_000), ...TICKETS.tickets.slice(1)] };
    const started = await cli([
      'start',
      'route-loop',
      '--stack',
      STACK,
      '--name',
      'large-input',
      '--input',
      JSON.stringify(input),
    ]);
    expect(started.code).toBe(0);
    const done = await finished(started.stdout.trim());
    expect(done.status).toBe('SUCCEEDED');
    // StartExecution took a small reference, not the 300 KB (over its 256 KiB limit).
    expect(done.input!.length).toBeLessThan(1_000);
    expect(done.input).toContain('$stepthread:ref');
    const stored = await s3.send(
      new ListObjectsV2Command({ Bucket: stack.outputs.BucketName!, Prefix: 'values/' }),
    );
    expect(stored.KeyCount).toBeGreaterThan(0);
    // START resolved it: the first ticket reached the model whole, in classify's prompt.
    const { rootThreadId } = JSON.parse(done.output!) as { rootThreadId: string };
    const { thread } = await cloud.stores.threads.getThread(rootThreadId);
    const prompts = (await cloud.conversationOf(thread)).filter((message) => message.role === 'user');
    expect(String(prompts[0]!.content).includes(input.tickets[0]!)).toBe(true);
  }, 120_000);

  it('continue-as-new: a run continues in a new execution and ends as on the embedded runtime', async () => {
    const workflow = workflows.get('route-loop')!;
    // route-loop as `-c stepthread:continueAfterEvents=100` deploys it: only the threshold differs.
    const check = (threshold: number) => `{"Variable":"$.history","NumericGreaterThanEquals":${threshold}}`;
    const compiled = (threshold: number) =>
      JSON.stringify(compileForDeploy(workflow, { continueAfterEvents: threshold }).definition);
    expect(compiled(20_000).split(check(20_000)).join(check(100))).toBe(compiled(100));
    const deployed = await sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: stack.stateMachines.get('stepthread-route-loop')! }),
    );
    expect(deployed.definition!.split(check(20_000)).length - 1).toBe(2); // the ROUTE's and the LOOP_END's
    const { stateMachineArn } = await sfn.send(
      new CreateStateMachineCommand({
        name: 'stepthread-route-loop-continuing',
        definition: deployed.definition!.split(check(20_000)).join(check(100)),
        roleArn: deployed.roleArn!,
      }),
    );

    const local = await e2e.runtime
      .prepare(workflow, { continueAfterEvents: 100 })
      .run(TICKETS, { noRetryWaits: true });
    expect(local.status).toBe('COMPLETED');
    expect(local.executions.map((execution) => execution.status)).toEqual(['CONTINUED', 'SUCCEEDED']);

    const started = await cli([
      'start',
      'route-loop-continuing',
      '--stack',
      STACK,
      '--name',
      'long-run',
      '--input',
      JSON.stringify(TICKETS),
    ]);
    const first = started.stdout.trim();
    const ended = await finished(first);
    expect(ended.status).toBe('SUCCEEDED');
    const continued = JSON.parse(ended.output!) as {
      status: string;
      continuedAs: string;
      threadId: string;
      step: number;
    };
    expect(continued).toMatchObject({ status: 'CONTINUED' });
    const second = `${stateMachineArn!.replace(':stateMachine:', ':execution:')}:${continued.continuedAs}`;
    const successor = await finished(second);
    expect(successor.status).toBe('SUCCEEDED');
    const executions = await sfn.send(new ListExecutionsCommand({ stateMachineArn }));
    expect(executions.executions).toHaveLength(2);

    // The successor was started by the first (the console links them) with the envelope it continued at.
    const resume = JSON.parse(successor.input!) as {
      resume: { envelope: { step: number; history: number } };
      AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID: string;
    };
    expect(resume.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID).toBe(first);
    // It continued where the embedded runtime's run continued: the same step, the same estimate.
    const localResume = local.events.filter((event) => event.type === 'ExecutionStarted')[1]!.input as {
      resume: { envelope: { step: number; history: number } };
    };
    const { step, history: estimate } = localResume.resume.envelope;
    expect(resume.resume.envelope).toMatchObject({ step, history: estimate });
    expect(continued.step).toBe(step);
    // The estimate the first execution continued at, against the history Step Functions recorded for it.
    // moto records no TaskSubmitted for the request-response startExecution Task; Step Functions does.
    const recorded = await history(first);
    expect(recorded.filter((event) => event.type === 'TaskSubmitted')).toEqual([]);
    expect(recorded.length + 1).toBe(resume.resume.envelope.history + AFTER_CHECK);
    // Lambda Tasks: Entered, Scheduled, Started, Succeeded, Exited (5); Choices: Entered, Exited (2).
    const count = (type: string) => recorded.filter((event) => event.type === type).length;
    expect(count('LambdaFunctionScheduled')).toBe(count('TaskStateEntered') - 1);
    expect(count('ChoiceStateEntered')).toBe(count('ChoiceStateExited'));

    expect(await runState(cloud, continued.threadId)).toEqual(await runState(e2e.runtime, local.threadId));
    // inspect, given the first execution, shows the whole run.
    const inspected = JSON.parse((await cli(['inspect', first, '--stack', STACK, '--json'])).stdout) as {
      executions: { executionId: string; status: string }[];
    };
    expect(inspected.executions).toEqual([
      { executionId: first, status: 'CONTINUED' },
      { executionId: second, status: 'COMPLETED' },
    ]);
  }, 180_000);

  it('pinned runs: a run continues on the version it started on after a deploy; new runs start on the deployed one', async () => {
    // route-loop continuing after 100 events (as the continue-as-new test), as deploy 1 publishes it.
    const check = (threshold: number) => `{"Variable":"$.history","NumericGreaterThanEquals":${threshold}}`;
    const deployed = await sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: stack.stateMachines.get('stepthread-route-loop')! }),
    );
    const first = await sfn.send(
      new CreateStateMachineCommand({
        name: 'stepthread-route-loop-pinned',
        definition: deployed.definition!.split(check(20_000)).join(check(100)),
        roleArn: deployed.roleArn!,
        publish: true,
      }),
    );
    const machine = first.stateMachineArn!;
    const alias = await sfn.send(
      new CreateStateMachineAliasCommand({
        name: 'live',
        routingConfiguration: [{ stateMachineVersionArn: first.stateMachineVersionArn!, weight: 100 }],
      }),
    );
    const start = (name: string) =>
      cli([
        'start',
        'route-loop-pinned',
        '--stack',
        STACK,
        '--name',
        name,
        '--input',
        JSON.stringify(TICKETS),
      ]);
    // A run started on deploy 1 (on the alias, as `start` does): associated with version 1.
    const before = (await start('pinned-before')).stdout.trim();
    // Deploy 2 changes the definition (one that fails at once) and moves the alias to its version.
    const redeployed = JSON.stringify({
      StartAt: 'Redeployed',
      States: { Redeployed: { Type: 'Fail', Error: 'Redeployed', Cause: 'deploy 2' } },
    });
    const second = await sfn.send(
      new UpdateStateMachineCommand({ stateMachineArn: machine, definition: redeployed, publish: true }),
    );
    await sfn.send(
      new UpdateStateMachineAliasCommand({
        stateMachineAliasArn: alias.stateMachineAliasArn!,
        routingConfiguration: [{ stateMachineVersionArn: second.stateMachineVersionArn!, weight: 100 }],
      }),
    );
    // A run of version 1 that continues only now, after deploy 2: its successor starts
    // `$$.StateMachine.Id`, version 1, and finishes there (on deploy 2 it would fail with Redeployed).
    const onVersion1 = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: first.stateMachineVersionArn!,
        name: 'pinned-v1',
        input: JSON.stringify({ input: TICKETS }),
      }),
    );
    for (const executionArn of [before, onVersion1.executionArn!]) {
      const ended = await finished(executionArn);
      expect(ended).toMatchObject({
        status: 'SUCCEEDED',
        stateMachineVersionArn: first.stateMachineVersionArn,
      });
      const { continuedAs } = JSON.parse(ended.output!) as { status: string; continuedAs: string };
      const successor = await finished(`${machine.replace(':stateMachine:', ':execution:')}:${continuedAs}`);
      expect(successor.status).toBe('SUCCEEDED');
      expect(successor.stateMachineVersionArn).toBe(first.stateMachineVersionArn);
      expect(successor.stateMachineAliasArn).toBeUndefined();
    }
    expect(
      (await sfn.send(new DescribeExecutionCommand({ executionArn: before }))).stateMachineAliasArn,
    ).toBe(alias.stateMachineAliasArn);
    // A run started after deploy 2 runs it.
    const after = (await start('pinned-after')).stdout.trim();
    expect(await finished(after)).toMatchObject({
      status: 'FAILED',
      error: 'Redeployed',
      stateMachineVersionArn: second.stateMachineVersionArn,
    });
    // runs --stack shows the version each execution runs.
    const runs = JSON.parse(
      (await cli(['runs', '--stack', STACK, '--workflow', 'route-loop-pinned', '--json'])).stdout,
    ) as { executionId: string; stateMachineVersion?: number }[];
    const versionOf = (executionId: string) =>
      runs.find((run) => run.executionId === executionId)?.stateMachineVersion;
    expect([versionOf(before), versionOf(onVersion1.executionArn!), versionOf(after)]).toEqual([1, 1, 2]);
    // And inspect, given an execution.
    const inspected = JSON.parse((await cli(['inspect', before, '--stack', STACK, '--json'])).stdout) as {
      stateMachineVersion?: number;
    };
    expect(inspected.stateMachineVersion).toBe(1);
  }, 180_000);

  it('an inline Map (map-reduce) records 14 history events per item', async () => {
    const eventsFor = async (items: number) => {
      const documents = Array.from({ length: items }, (_unused, i) => ({ id: `d${i}`, text: `Text ${i}.` }));
      const started = await cli([
        'start',
        'map-reduce',
        '--stack',
        STACK,
        '--name',
        `items-${items}`,
        '--input',
        JSON.stringify({ documents }),
      ]);
      expect((await finished(started.stdout.trim())).status).toBe('SUCCEEDED');
      return (await history(started.stdout.trim())).length;
    };
    const [two, five] = [await eventsFor(2), await eventsFor(5)];
    // Per item: its 2 nodes' Lambda Tasks (5 events each; the last reports the item to the JOIN
    // itself and, the join being ALL_COMPLETED without a timeout, ends the item), its iteration's
    // start and end, the item's entry Pass (2).
    expect((five - two) / 3).toBe(14);
  }, 120_000);

  /** The map/ objects of the run whose item threads are `<base>-<index>`. */
  async function mapObjects(base: string): Promise<string[]> {
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: stack.outputs.BucketName!, Prefix: 'map/' }),
    );
    return (listed.Contents ?? []).flatMap(({ Key }) => (Key?.includes(base) ? [Key] : [])).sort();
  }

  /** The item threads of a run (every thread but its root), by index, and what they hold. */
  async function itemsOf(runtime: LocalRuntime, executionId: string, rootThreadId: string) {
    const threads = await runtime.stores.threads.listThreadsOfExecution(executionId);
    return threads
      .map(({ thread }) => thread)
      .filter((thread) => thread.id !== rootThreadId)
      .map((thread) => ({
        index: (thread.contextData.listItem as { index: number }).index,
        status: thread.status,
        base: thread.id.replace(/-\d+$/, ''),
      }))
      .sort((a, b) => a.index - b.index);
  }

  it('a Distributed Map runs in moto: its ItemReader reads the FORK’s list from S3, each item creates its own thread, the run ends as on the embedded runtime', async () => {
    const documents = Array.from({ length: 5 }, (_unused, i) => ({ id: `d${i}`, text: `Text ${i}.` }));
    const input = { documents };
    const started = await cli([
      'start',
      'distributed-summaries',
      '--stack',
      STACK,
      '--name',
      'distributed-5',
      '--input',
      JSON.stringify(input),
    ]);
    const executionArn = started.stdout.trim();
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');
    const events = await history(executionArn);
    const types = events.map((event) => event.type);
    // A map run (moto runs its items inside this execution: no child execution to list).
    expect(types).toEqual(expect.arrayContaining(['MapRunStarted', 'MapRunSucceeded', 'MapStateSucceeded']));
    expect(types).not.toContain('MapRunFailed');
    const { rootThreadId } = (await cloud.stores.executions.getExecution(executionArn))!;
    const items = await itemsOf(cloud, executionArn, rootThreadId!);
    expect(items.map(({ index, status }) => [index, status])).toEqual(
      documents.map((_document, index) => [index, 'COMPLETED']),
    );
    // The FORK wrote the item source and the range list; the items read the source, the ItemReader the list.
    const base = items[0]!.base;
    expect(await mapObjects(base)).toEqual([`map/items/${base}.json`, `map/sources/${base}.json`]);

    const local = await e2e.runtime.prepare(workflows.get('distributed-summaries')!).run(input);
    expect(local.status).toBe('COMPLETED');
    expect(await runState(cloud, rootThreadId!)).toEqual(await runState(e2e.runtime, local.threadId));
  }, 180_000);

  it('a Distributed Map whose join an item decides early: moto runs the items after it (ToleratedFailureCount has no effect there), each created CANCELLED, and the run ends as on the embedded runtime', async () => {
    const input = { items: [{ v: 'a' }, { fail: true }, { v: 'c' }, { v: 'd' }, { v: 'e' }] };
    const started = await cli([
      'start',
      'distributed-early',
      '--stack',
      STACK,
      '--name',
      'distributed-early',
      '--input',
      JSON.stringify(input),
    ]);
    const executionArn = started.stdout.trim();
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');
    const { rootThreadId } = (await cloud.stores.executions.getExecution(executionArn))!;
    const local = await e2e.runtime.prepare(workflows.get('distributed-early')!).run(input);
    expect(local.status).toBe('COMPLETED');
    const failed = { error: { code: 'EXPRESSION_ERROR', message: expect.any(String) } };
    // Item 2's completion reaches the threshold of 2: its report fails its item execution.
    const merged = { merged: ['item 0 = a', failed, 'item 2 = c', null, null] };
    expect(local.output).toEqual(merged);
    expect((await cloud.stores.threads.getThread(rootThreadId!)).thread.output).toEqual(merged);
    expect(await runState(cloud, rootThreadId!)).toEqual(await runState(e2e.runtime, local.threadId));
    // Embedded (and AWS): that failure stops the Map (ToleratedFailureCount 0): items 3 and 4 never start.
    const statuses = (items: { index: number; status: string }[]) =>
      items.map(({ index, status }) => [index, status]);
    expect(statuses(await itemsOf(e2e.runtime, local.executionId, local.threadId))).toEqual([
      [0, 'COMPLETED'],
      [1, 'FAILED'],
      [2, 'COMPLETED'],
    ]);
    // moto counts the failed item execution and runs on: items 3 and 4 start after the join closed, so
    // their first steps create them CANCELLED and run nothing; the JOIN's decision stands.
    expect(statuses(await itemsOf(cloud, executionArn, rootThreadId!))).toEqual([
      [0, 'COMPLETED'],
      [1, 'FAILED'],
      [2, 'COMPLETED'],
      [3, 'CANCELLED'],
      [4, 'CANCELLED'],
    ]);
  }, 180_000);

  it("a trigger rule matches the README's event and hands the run the whole event as `input`", async () => {
    const [trigger] = rules('WorkflowapprovalTrigger');
    const target = (trigger!.properties.Targets as { InputTransformer: Record<string, unknown> }[])[0]!;
    const observed = await queue('approval-trigger');
    await events.send(
      new PutTargetsCommand({
        Rule: trigger!.name,
        Targets: [{ Id: 'observed', Arn: observed.arn, InputTransformer: target.InputTransformer as never }],
      }),
    );
    // The README's `aws events put-events` example, and an event the pattern does not match.
    await events.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: 'stepthread.examples',
            DetailType: 'TicketCreated',
            Detail: '{"subject":"Password reset"}',
          },
          { Source: 'stepthread.examples', DetailType: 'TicketClosed', Detail: '{"subject":"Other"}' },
        ],
      }),
    );
    const delivered = await drain(observed.url);
    expect(delivered).toEqual([
      {
        input: expect.objectContaining({
          source: 'stepthread.examples',
          'detail-type': 'TicketCreated',
          detail: { subject: 'Password reset' },
        }),
      },
    ]);
  });

  it('forwards the status changes of stepthread-* state machines, and of no others, to the stepthread bus', async () => {
    const [forwarding] = rules('ExecutionStatusForwarding');
    const bus = await events.send(new DescribeEventBusCommand({ Name: 'stepthread-events' }));
    await events.send(
      new PutTargetsCommand({ Rule: forwarding!.name, Targets: [{ Id: 'bus', Arn: bus.Arn! }] }),
    );
    const observed = await observeBus('forwarded-status', 'observe-status', { source: ['aws.states'] });
    const status = (stateMachine: string) => ({
      Source: 'aws.states',
      DetailType: 'Step Functions Execution Status Change',
      Detail: JSON.stringify({
        stateMachineArn: `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${stateMachine}`,
        status: 'SUCCEEDED',
      }),
    });
    await events.send(
      new PutEventsCommand({ Entries: [status('stepthread-approval'), status('other-approval')] }),
    );
    const delivered = await drain(observed.url);
    expect(delivered.map((event) => (event.detail as { stateMachineArn: string }).stateMachineArn)).toEqual([
      `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:stepthread-approval`,
    ]);
  });

  it('the functions publish each thread and node event on the stepthread bus (source stepthread)', async () => {
    const observed = await observeBus('thread-events', 'observe-thread-events', { source: ['stepthread'] });
    const started = await cli([
      'start',
      'fork-join-research',
      '--stack',
      STACK,
      '--name',
      'published',
      '--input',
      '{"topic":"caching"}',
    ]);
    expect((await finished(started.stdout.trim())).status).toBe('SUCCEEDED');
    const threads = await cloud.stores.threads.listThreadsOfExecution(started.stdout.trim());
    expect(threads.length).toBeGreaterThan(1); // the root and the fork's children
    const key = (event: Record<string, unknown>) =>
      `${String(event.type)} ${String(event.threadId)} ${String(event.nodeId ?? '')}`;
    const recorded = new Set<string>();
    for (const { thread } of threads) {
      for (const event of (await cloud.stores.threads.readJournal(thread.id)).events) {
        recorded.add(key({ ...event, threadId: thread.id }));
      }
    }
    const published = (await drain(observed.url)).filter((event) =>
      threads.some(({ thread }) => thread.id === (event.detail as { threadId: string }).threadId),
    );
    for (const event of published) {
      expect(event['detail-type']).toBe((event.detail as { type: string }).type);
    }
    // At least once: every recorded event is on the bus (a retried step may publish one twice).
    expect(new Set(published.map((event) => key(event.detail as Record<string, unknown>)))).toEqual(recorded);
  }, 120_000);

  it('a question is on the bus (USER_INTERACTION_REQUESTED) while it waits, before anyone answers', async () => {
    const observed = await observeBus('asked-events', 'observe-asked', {
      source: ['stepthread'],
      'detail-type': ['USER_INTERACTION_REQUESTED'],
    });
    const input = JSON.stringify({ detail: { subject: 'Refund request' } });
    const started = await cli(['start', 'approval', '--stack', STACK, '--name', 'asked', '--input', input]);
    const executionArn = started.stdout.trim();
    let open: { interactionId: string; threadId: string; requestedAt: string }[] = [];
    while (open.length === 0) {
      await sleep(250);
      open = JSON.parse((await cli(['pending', executionArn, '--stack', STACK, '--json'])).stdout);
    }
    // The item is written first, then the event published: wait for the event, not the item.
    const asked = await eventsOfThread(observed.url, open[0]!.threadId);
    expect(asked).toEqual([
      expect.objectContaining({
        type: 'USER_INTERACTION_REQUESTED',
        nodeId: 'approve',
        at: open[0]!.requestedAt,
        interactionType: 'ask_for_approval',
      }),
    ]);
    expect((await cli(['respond', open[0]!.interactionId, '--stack', STACK, '--approve'])).code).toBe(0);
    expect((await finished(executionArn)).status).toBe('SUCCEEDED');
    // The answer's step records the same event and publishes it again (at least once).
    const again = await eventsOfThread(observed.url, open[0]!.threadId);
    expect(again).toEqual([
      expect.objectContaining({ type: 'USER_INTERACTION_REQUESTED', at: open[0]!.requestedAt }),
    ]);
  }, 120_000);
});
