/**
 * Opt-in end-to-end suite against LocalStack (`STEPTHREAD_LOCALSTACK=1`): deploys the `approval` workflow
 * with cdklocal, starts it with `stepthread start` (a named, idempotent StartExecution), waits for its
 * USER_INTERACTION, lists it with `stepthread pending`, answers it with `stepthread respond` (which only
 * reads the interaction and sends the task token), and checks that the workflow's `approve:answer` Task
 * committed it and the run finished. AWS_ENDPOINT_URL selects LocalStack for the CLI, as for every command.
 *
 * Needs: LocalStack running (default endpoint http://localhost:4566, override with AWS_ENDPOINT_URL; on an
 * x86 host with LAMBDA_IGNORE_ARCHITECTURE=1 for the arm64 functions). cdklocal is the project's own
 * (devDependency aws-cdk-local 3, which drives the project's aws-cdk); it needs AWS_ENDPOINT_URL_S3
 * besides AWS_ENDPOINT_URL to upload assets. The CLI finds the table and bucket from the stack's outputs
 * (STEPTHREAD_STACK_NAME), as an operator's would. Takes a few minutes; skipped otherwise.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeExecutionCommand, GetExecutionHistoryCommand, SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/handler-registry.ts';

const enabled = process.env.STEPTHREAD_LOCALSTACK === '1';
if (!enabled) {
  console.warn('LocalStack suite skipped: set STEPTHREAD_LOCALSTACK=1 (with LocalStack running) to run it.');
}

const STACK = 'StepthreadLocalstackTest';
const ENDPOINT = process.env.AWS_ENDPOINT_URL ?? 'http://localhost:4566';
const REGION = process.env.AWS_REGION ?? 'us-east-1';
const env = {
  ...process.env,
  AWS_ENDPOINT_URL: ENDPOINT,
  // cdklocal 3 with this aws-cdk uploads assets to S3 through this endpoint, not AWS_ENDPOINT_URL.
  AWS_ENDPOINT_URL_S3:
    process.env.AWS_ENDPOINT_URL_S3 ?? ENDPOINT.replace('://localhost', '://s3.localhost.localstack.cloud'),
  AWS_REGION: REGION,
  AWS_DEFAULT_REGION: REGION,
  AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'test',
  AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
};
const context = [
  '-c',
  'stepthread:workflowsDir=test/localstack/workflows',
  '-c',
  `stepthread:stackName=${STACK}`,
  '-c',
  'stepthread:removalPolicy=destroy',
];

function cdklocal(args: string[]): string {
  return execFileSync(join(PROJECT_ROOT, 'node_modules/.bin/cdklocal'), args, {
    cwd: PROJECT_ROOT,
    env,
    encoding: 'utf8',
    stdio: 'pipe',
  });
}

function stepthread(args: string[]): string {
  return execFileSync(process.execPath, [join(PROJECT_ROOT, 'bin/stepthread.js'), ...args], {
    cwd: PROJECT_ROOT,
    // The CLI finds the deployed table and bucket from the stack's outputs (DescribeStacks).
    env: { ...env, STEPTHREAD_STACK_NAME: STACK, STEPTHREAD_TABLE: '', STEPTHREAD_BUCKET: '' },
    encoding: 'utf8',
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

describe.skipIf(!enabled)('LocalStack: deploy, start, answer, finish', () => {
  const sfn = new SFNClient({
    endpoint: ENDPOINT,
    region: REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY },
  });
  let outputs: Record<string, string>;

  beforeAll(() => {
    const outputsFile = join(mkdtempSync(join(tmpdir(), 'stepthread-ls-')), 'outputs.json');
    cdklocal(['bootstrap', ...context]);
    cdklocal(['deploy', STACK, '--require-approval', 'never', '--outputs-file', outputsFile, ...context]);
    outputs = (JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Record<string, string>>)[
      STACK
    ]!;
  }, 600_000);

  afterAll(() => {
    if (outputs) cdklocal(['destroy', STACK, '--force', ...context]);
  }, 300_000);

  it('runs the approval workflow through a human answer', async () => {
    const stateMachineArn = outputs.ApprovalStateMachineArn!;
    expect(stateMachineArn).toMatch(/:stateMachine:stepthread-approval$/);
    const name = `ls-${Date.now()}`;
    const input = JSON.stringify({ detail: { subject: 'Password reset' } });
    const executionArn = stepthread(['start', 'approval', '--input', input, '--name', name]).trim();
    expect(executionArn).toBe(`${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`);
    // Starting the same name again is the same execution, not a second run.
    expect(stepthread(['start', stateMachineArn, '--input', input, '--name', name]).trim()).toBe(
      executionArn,
    );

    // The run parks on the USER_INTERACTION task until someone answers.
    await until('the approval task to wait for its token', async () => {
      const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn, reverseOrder: true }));
      return history.events?.some((e) => e.type === 'TaskSubmitted' || e.type === 'TaskScheduled') &&
        history.events.some((e) => e.stateEnteredEventDetails?.name === 'approve')
        ? true
        : undefined;
    });

    const pending = JSON.parse(stepthread(['pending', executionArn, '--json'])) as {
      nodeId: string;
      interactionId: string;
    }[];
    expect(pending.map((p) => p.nodeId)).toEqual(['approve']);
    const interactionId = pending[0]!.interactionId;
    // Without an argument: every open interaction, from the sparse index (a Query, no Scan).
    const everywhere = JSON.parse(stepthread(['pending', '--json'])) as { interactionId: string }[];
    expect(everywhere.map((p) => p.interactionId)).toContain(interactionId);
    stepthread(['respond', executionArn, '--node', 'approve', '--approve']);

    const done = await until('the execution to finish', async () => {
      const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      return execution.status === 'RUNNING' ? undefined : execution;
    });
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output ?? '{}')).toMatchObject({ last: { nodeId: 'end', status: 'COMPLETED' } });
    expect(JSON.parse(stepthread(['pending', executionArn, '--json']))).toEqual([]);
    // The workflow's own answer Task committed it, not the operator.
    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
    expect(history.events?.some((e) => e.stateEnteredEventDetails?.name === 'approve:answer')).toBe(true);
    // Answering again: the same answer is reported as already given, and nothing is sent.
    expect(JSON.parse(stepthread(['respond', interactionId, '--approve', '--json']))).toEqual({
      interactionId,
      result: 'already-answered',
    });
  }, 300_000);
});

if (!enabled) {
  describe('LocalStack suite', () => {
    it.skip('needs STEPTHREAD_LOCALSTACK=1 and LocalStack', () => {});
  });
}
