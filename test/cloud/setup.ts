/**
 * What both cloud suites stand up (run.sh synthesizes the stack first and names it here): the
 * synthesized template in moto (moto.ts), the embedded runtime to compare with, a runtime reading the
 * stack's table and bucket, and the CLI in-process with an operator's environment.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Workflow } from '../../engine/model/schema.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { type E2e, startE2e } from '../e2e/helpers.ts';
import { type CliResult, runCli } from '../support/cli.ts';
import type { Checked } from './grants.ts';
import type { PolicyStatement } from './iam.ts';
import { ACCOUNT, type MotoStack, REGION, startMotoStack, type Template } from './moto.ts';
import { checkCall, interceptSdkCalls } from './sdk-calls.ts';

export const ASSEMBLY = process.env.STEPTHREAD_CLOUD_ASSEMBLY;
export const WORKFLOWS = process.env.STEPTHREAD_CLOUD_WORKFLOWS;
export const STACK = process.env.STEPTHREAD_CLOUD_STACK ?? 'StepthreadCloud';
/**
 * Where each suite leaves the SDK calls its functions and its CLI commands made, each checked against
 * the caller's policy (`<suite>.json`); permissions.suite.ts reads them all once both suites ran.
 */
export const CALLS_DIR = ASSEMBLY ? join(ASSEMBLY, '..', 'calls') : undefined;
export interface CallsFile {
  roles: [string, { logicalId: string; roleLogicalId: string; statements: PolicyStatement[] }][];
  operatorStatements: PolicyStatement[];
  functions: Checked[];
  operator: Checked[];
}
/** False outside `npm run test:cloud`: the suites are skipped. */
export const SYNTHESIZED = Boolean(ASSEMBLY && WORKFLOWS);

export interface Cloud {
  stack: MotoStack;
  /** The synthesized template the stack was stood up from. */
  template: Template;
  /** The deployed folder's workflows, by id. */
  workflows: Map<string, Workflow>;
  /** The embedded runtime, to run the same workflows on. */
  e2e: E2e;
  /** A runtime over the stack's table and bucket: reads what the deployed functions wrote. */
  cloud: LocalRuntime;
  /** How an SDK client reaches moto. */
  clientConfig: {
    endpoint: string;
    region: string;
    credentials: { accessKeyId: string; secretAccessKey: string };
  };
  sfn: SFNClient;
  /** An operator's environment on top of this process's: moto's endpoint and credentials, a data directory. */
  operatorEnv: Record<string, string>;
  /**
   * The SDK calls the in-process CLI made so far, each checked against the operator policy (recorded,
   * not refused: `--stack` reads CloudFormation, which the policy leaves out on purpose).
   */
  operatorCalls: Checked[];
  /**
   * `stepthread ...args` in-process, with `operatorEnv` (`--stack` finds the table and bucket from the
   * stack's outputs, not from variables), plus `env`.
   */
  cli(args: string[], env?: Record<string, string>): Promise<CliResult>;
  close(): Promise<void>;
}

/** Stands it all up; `name` keeps this suite's embedded table and bucket apart. */
export async function startCloud(name: string): Promise<Cloud> {
  const workflows = new Map<string, Workflow>();
  for (const { workflow } of loadWorkflowsFromDir(WORKFLOWS!)) workflows.set(workflow.id, workflow);
  const template = JSON.parse(readFileSync(join(ASSEMBLY!, `${STACK}.template.json`), 'utf8')) as Template;
  const stack = await startMotoStack(ASSEMBLY!, STACK);
  let e2e: E2e;
  try {
    e2e = await startE2e(name);
  } catch (error) {
    await stack.close();
    throw error;
  }
  const clientConfig = {
    endpoint: stack.endpoint,
    region: REGION,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  };
  const cloud = createLocalRuntime({
    clients: createAwsClients(
      { kind: 'endpoint', endpoint: stack.endpoint },
      { tableName: stack.outputs.TableName!, bucketName: stack.outputs.BucketName! },
    ),
  });
  // The CLI caches the stack's outputs here.
  const dataDir = mkdtempSync(join(tmpdir(), `stepthread-${name}-`));
  const operatorEnv = { ...stack.env, STEPTHREAD_DATA_DIR: dataDir };
  // The CLI's calls, attributed by async context (the suite's own clients are not an operator's).
  const operatorCalls: Checked[] = [];
  const operating = new AsyncLocalStorage<boolean>();
  const stopIntercepting = interceptSdkCalls((call) => {
    if (!operating.getStore()) return undefined;
    checkCall('operator', stack.operatorStatements, call, { account: ACCOUNT, region: REGION }, (checked) => {
      operatorCalls.push({ ...checked, count: 1 });
    });
    return undefined;
  });
  return {
    stack,
    template,
    workflows,
    e2e,
    cloud,
    clientConfig,
    sfn: new SFNClient(clientConfig),
    operatorEnv,
    operatorCalls,
    cli: (args, env = {}) =>
      operating.run(true, () =>
        runCli(args, {
          env: { ...process.env, ...operatorEnv, ...env },
          readFile: () => Promise.reject(new Error('no files')),
        }),
      ),
    async close() {
      try {
        stopIntercepting();
        if (CALLS_DIR) {
          mkdirSync(CALLS_DIR, { recursive: true });
          const calls: CallsFile = {
            roles: [...stack.roles],
            operatorStatements: stack.operatorStatements,
            functions: await stack.calls(),
            operator: operatorCalls,
          };
          writeFileSync(join(CALLS_DIR, `${name}.json`), JSON.stringify(calls));
        }
        await stack.close();
        await e2e.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
