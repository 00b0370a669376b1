/**
 * `copy --node-config <node>.<key>=<json>` and `--profile <id>=<json>` (issue 28): the copy runs the
 * workflow with the edit — through `run --thread`, a resume (with the unedited file given), and a
 * copy of the copy — records it (inspect shows it), and an edit a workflow file would be refused for
 * is a coded usage error at copy time that writes nothing. On a deployed stack (a Step Functions
 * stand-in) every edit is checked against the deployed definition (workflow edits only where a handler
 * alone reads the key) and recorded for the handlers.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { compileWorkflow } from '../../engine/asl/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { type AwsClients, createAwsClients, releaseAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { putNodeTable } from '../../functions/stores/node-tables.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess, envWithoutTarget } from '../support/cli-process.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TRIAGE = join(ROOT, 'examples', 'support-triage.json');
const TICKET = { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 };
const CODE_99 = 'compute-credit.code="return { amount: 99, currency: \'EUR\' }"';
const FRENCH = 'default={"provider": "scripted", "responses": ["Nous avons remboursé le double débit."]}';

let dir: string;
let source: RunJsonResult;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-copy-workflow-edits-'));
  const run = await cli(
    'run',
    TRIAGE,
    '--input',
    JSON.stringify({ ticket: TICKET }),
    '--answers',
    '{"approve-credit": false}',
    '--json',
  );
  expect(run.code).toBe(0);
  source = JSON.parse(run.stdout);
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const dataDir = () => join(dir, 'data');
const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir()], { cwd: dir });

async function copyOf(...args: string[]): Promise<string> {
  const copied = await cli('copy', source.threadId, ...args);
  expect(copied.stderr).toBe('');
  expect(copied.code).toBe(0);
  return copied.stdout.trim();
}

async function runCopy(copyId: string): Promise<RunJsonResult> {
  const run = await cli('run', TRIAGE, '--thread', copyId, '--json');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}

/** The data directory's stores, open for `work`. */
async function withClients<T>(work: (clients: AwsClients) => Promise<T>): Promise<T> {
  const services = await openDataDir(dataDir(), { create: false });
  try {
    return await work(createAwsClients(services.target, services.names));
  } finally {
    releaseAwsClients(services.target);
    await services.close();
  }
}

/** How many items the data directory's table holds. */
function storedItems(): Promise<number> {
  return withClients(async (clients) => {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await clients.dynamo.send(
        new ScanCommand({ TableName: clients.tableName, Select: 'COUNT', ExclusiveStartKey: startKey }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return count;
  });
}

const triage = (): Workflow => JSON.parse(readFileSync(TRIAGE, 'utf8')) as Workflow;

describe('copy --node-config and --profile', () => {
  it('--node-config: the copy runs with the edited config, inspect shows the edit, and a copy of the copy keeps it', async () => {
    const copyId = await copyOf('--from', 'compute-credit', '--node-config', CODE_99);
    expect((await runCopy(copyId)).output).toMatchObject({ approved: false, credit: { amount: 99 } });
    const report = JSON.parse((await cli('inspect', copyId, '--json')).stdout);
    expect(report.threads[0].edits).toEqual([
      {
        kind: 'nodeConfig',
        nodeId: 'compute-credit',
        key: 'code',
        value: "return { amount: 99, currency: 'EUR' }",
        at: expect.any(String),
      },
    ]);
    expect((await cli('inspect', copyId)).stdout).toMatch(
      /\n {2}edited before its first step: node compute-credit config code = "return \{ amount: 99, currency: 'EUR' \}" \(\S+\)\n/,
    );
    // The source is unchanged, and a copy of the copy (no edits of its own) runs with the edit too.
    expect((await runCopy(await copyOf('--from', 'compute-credit'))).output).toMatchObject({
      credit: { amount: 0 },
    });
    const again = (await cli('copy', copyId, '--from', '1')).stdout.trim();
    expect(JSON.parse((await cli('inspect', again, '--json')).stdout).threads[0].edits).toBeUndefined();
    expect((await runCopy(again)).output).toMatchObject({ credit: { amount: 99 } });
  });

  it('--profile: the copy runs with the replaced profile (beside a --set)', async () => {
    const copyId = await copyOf('--from', 'compute-credit', '--set', 'approved=true', '--profile', FRENCH);
    expect((await runCopy(copyId)).output).toEqual({
      category: 'billing',
      approved: true,
      credit: { amount: 6, currency: 'EUR' },
      reply: 'Nous avons remboursé le double débit.',
    });
    const edits = JSON.parse((await cli('inspect', copyId, '--json')).stdout).threads[0].edits;
    expect(edits.map((edit: { kind: string }) => edit.kind)).toEqual(['variable', 'profile']);
  });

  it('a resume of an edited copy goes on with the edits, even given the unedited workflow file', async () => {
    const copyId = await copyOf('--from', 'approve-credit', '--node-config', CODE_99);
    // No terminal and no answer: the run stops at the question, resumable.
    const stopped = await cliProcess(['run', TRIAGE, '--thread', copyId, '--data-dir', dataDir()], {
      cwd: dir,
      env: envWithoutTarget() as Record<string, string>,
    });
    expect(stopped.stderr).toMatch(/the run stops here/);
    const resumed = await cli(
      'resume',
      copyId,
      '--workflow',
      TRIAGE,
      '--answers',
      '{"approve-credit": true}',
      '--json',
    );
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout).output).toMatchObject({ approved: true, credit: { amount: 99 } });
  });

  it('the runtime refuses to run an edited copy with the workflow as it was (INVALID_STATE_MACHINE)', async () => {
    const copyId = await copyOf('--from', 'compute-credit', '--node-config', CODE_99);
    const refused = await withClients((clients) =>
      createLocalRuntime({ clients })
        .prepare(triage(), { startNodeId: 'compute-credit' })
        .runThread(copyId)
        .catch((error: unknown) => error),
    );
    expect(refused).toBeInstanceOf(StepthreadError);
    expect((refused as StepthreadError).code).toBe('INVALID_STATE_MACHINE');
  });

  it.each([
    [
      ['--node-config', 'compute-credt.code="x"'],
      'NODE_NOT_FOUND',
      /no node "compute-credt"; did you mean "compute-credit"\?/,
    ],
    [
      ['--node-config', 'compute-credit.cod="x"'],
      'UNKNOWN_KEY',
      /no config key "cod"; did you mean "code"\?/,
    ],
    [['--node-config', 'compute-credit.code=5'], 'INVALID_NODE_CONFIG', /config\.code/],
    [['--node-config', 'compute-credit.code="return {"'], 'CODE_SYNTAX_ERROR', /does not compile/],
    [['--node-config', 'is-billing.defaultTargetNodeId="nowhere"'], 'UNKNOWN_ROUTE_TARGET', /"nowhere"/],
    [['--node-config', 'reply.prompt="{{custmer}}"'], 'UNKNOWN_VARIABLE_REFERENCE', /"custmer"/],
    [['--node-config', 'compute-credit=1'], 'INVALID_COPY_EDIT', /<nodeId>\.<key>/],
    [['--node-config', 'compute-credit.code=x'], 'INVALID_COPY_EDIT', /the value is not JSON/],
    [
      ['--profile', 'defaul={"provider": "scripted"}'],
      'UNKNOWN_PROFILE',
      /no profile "defaul"; did you mean "default"\?/,
    ],
    [['--profile', 'default={"provider": "nobody"}'], 'SCHEMA_INVALID', /profiles\.default\.provider/],
    [['--profile', 'default'], 'INVALID_COPY_EDIT', /give <id>=<json>/],
  ])('refuses %j with %s, exit 2, writing nothing', async (args, code, message) => {
    const items = await storedItems();
    const refused = await cli('copy', source.threadId, '--from', 'compute-credit', ...args);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toContain(`${code}`);
    expect(refused.stderr).toMatch(message);
    expect(await storedItems()).toBe(items);
  });
});

describe('copy on a deployed stack', () => {
  /**
   * A stand-in for Step Functions whose state machine declares `credit` an array (locally an object);
   * its node table, where START's declarations are, is in the stack's bucket as a deploy stores it.
   */
  async function deployedSfn({ stored = true, initial = [] as unknown[] } = {}) {
    const workflow = triage();
    workflow.variables = workflow.variables!.map((declaration) =>
      declaration.name === 'credit' ? { ...declaration, type: 'array', initial } : declaration,
    );
    const compiled = compileWorkflow(workflow);
    if (stored) {
      await withClients((clients) => putNodeTable(clients.s3, clients.bucketName, compiled.nodeTable));
    }
    const definition = JSON.stringify(compiled.definition);
    return recordingSfn((name) => {
      if (name === 'DescribeExecutionCommand')
        return { stateMachineArn: 'arn:aws:states:::stateMachine:demo' };
      if (name === 'DescribeStateMachineCommand') return { definition };
      throw new Error(`unexpected ${name}`);
    });
  }

  it('checks node config and profile edits against the deployed definition and records them for the handlers', async () => {
    const sfn = await deployedSfn();
    const copied = await runCli(
      [
        'copy',
        source.threadId,
        '--from',
        'compute-credit',
        '--node-config',
        CODE_99,
        '--profile',
        FRENCH,
        '--data-dir',
        dataDir(),
      ],
      { cwd: dir, services: { sfn } },
    );
    expect([copied.code, copied.stderr]).toEqual([0, '']);
    // One read of the definition serves both checks.
    expect(sfn.sent.map((sent) => sent.name)).toEqual([
      'DescribeExecutionCommand',
      'DescribeStateMachineCommand',
    ]);
    const copy = await withClients((clients) =>
      createLocalRuntime({ clients }).stores.threads.getThread(copied.stdout.trim()),
    );
    expect(copy.thread.metadata.workflowEdits).toEqual([
      {
        kind: 'profile',
        profileId: 'default',
        value: { provider: 'scripted', responses: ['Nous avons remboursé le double débit.'] },
        at: expect.any(String),
      },
      {
        kind: 'nodeConfig',
        nodeId: 'compute-credit',
        key: 'code',
        value: "return { amount: 99, currency: 'EUR' }",
        at: expect.any(String),
      },
    ]);
  });

  it.each([
    [
      ['--node-config', 'compute-credit.outputVariable="other"'],
      'COPY_EDIT_NOT_DEPLOYABLE',
      /code, language, timeoutMs, memoryLimitMb, inputs can be edited there/,
    ],
    [
      ['--node-config', 'is-billing.defaultTargetNodeId="end"'],
      'COPY_EDIT_NOT_DEPLOYABLE',
      /routes can be edited there/,
    ],
    [
      ['--node-config', 'is-billing.routes=[{"condition": "true", "targetNodeId": "end"}]'],
      'COPY_EDIT_NOT_DEPLOYABLE',
      /routes is-billing to approve-credit, reply only, not to end/,
    ],
    [['--node-config', 'reply.profileId="other"'], 'COPY_EDIT_NOT_DEPLOYABLE', /--profile 'other=<json>'/],
    [['--node-config', 'compute-credt.code="1"'], 'NODE_NOT_FOUND', /did you mean "compute-credit"/],
    [
      ['--node-config', 'compute-credit.code="return {"'],
      'CODE_SYNTAX_ERROR',
      /config code: .*does not compile/,
    ],
    [['--node-config', 'compute-credit.timeoutMs="soon"'], 'INVALID_NODE_CONFIG', /timeoutMs/],
    [['--profile', 'defaul={"provider": "scripted"}'], 'UNKNOWN_PROFILE', /did you mean "default"/],
    [['--profile', 'default={"provider": "nobody"}'], 'SCHEMA_INVALID', /profile default/],
  ])('refuses %j on the stack with %s, exit 2, writing nothing', async (args, code, message) => {
    const items = await storedItems();
    const refused = await runCli(
      ['copy', source.threadId, '--from', 'compute-credit', ...args, '--data-dir', dataDir()],
      { cwd: dir, services: { sfn: await deployedSfn() } },
    );
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toContain(code);
    expect(refused.stderr).toMatch(message);
    expect(await storedItems()).toBe(items);
  });

  it("checks --set against the deployed definition's declarations", async () => {
    const sfn = await deployedSfn();
    const copy = (set: string) =>
      runCli(['copy', source.threadId, '--from', 'compute-credit', '--set', set, '--data-dir', dataDir()], {
        cwd: dir,
        services: { sfn },
      });
    const refused = await copy('credit={"amount": 5, "currency": "EUR"}');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /INVALID_VARIABLE: .*"credit" \(thread\) is declared array but was given object/,
    );
    expect(sfn.sent.map((sent) => sent.name)).toEqual([
      'DescribeExecutionCommand',
      'DescribeStateMachineCommand',
    ]);
    expect(sfn.sent[0]!.input).toEqual({ executionArn: source.executionId });
    const accepted = await copy('credit=[]');
    expect([accepted.code, accepted.stderr]).toEqual([0, '']);
  });

  it('says when the node table the deployed definition names cannot be read, and checks against the thread', async () => {
    // Another table (its own ref) than the one stored above, never stored itself.
    const sfn = await deployedSfn({ stored: false, initial: [1] });
    const copied = await runCli(
      [
        'copy',
        source.threadId,
        '--from',
        'compute-credit',
        '--set',
        'credit={"amount": 5}',
        '--data-dir',
        dataDir(),
      ],
      { cwd: dir, services: { sfn } },
    );
    expect(copied.code).toBe(0);
    expect(copied.stderr).toMatch(
      /note: the deployed workflow's variable declarations could not be read \(node table [0-9a-f]{12}, .*node-tables\/[0-9a-f]{12}\.json does not exist/,
    );
  });

  it('refuses node config edits when the node table the deployed definition names cannot be read', async () => {
    const items = await storedItems();
    const refused = await runCli(
      [
        'copy',
        source.threadId,
        '--from',
        'compute-credit',
        '--node-config',
        CODE_99,
        '--data-dir',
        dataDir(),
      ],
      { cwd: dir, services: { sfn: await deployedSfn({ stored: false, initial: [2] }) } },
    );
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toMatch(/COPY_EDIT_NOT_DEPLOYABLE: .*could not be read/);
    expect(await storedItems()).toBe(items);
  });
});
