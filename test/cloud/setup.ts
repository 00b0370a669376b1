/**
 * What both cloud suites stand up (run.sh synthesizes the stack first and names it here): the
 * synthesized template in moto (moto.ts), the embedded runtime to compare with, a runtime reading the
 * stack's table and bucket, and the CLI in-process with an operator's environment.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Workflow } from '../../engine/model/schema.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { type E2e, startE2e } from '../e2e/helpers.ts';
import { type CliResult, runCli } from '../support/cli.ts';
import { type MotoStack, REGION, startMotoStack, type Template } from './moto.ts';

export const ASSEMBLY = process.env.STEPTHREAD_CLOUD_ASSEMBLY;
export const WORKFLOWS = process.env.STEPTHREAD_CLOUD_WORKFLOWS;
export const STACK = process.env.STEPTHREAD_CLOUD_STACK ?? 'StepthreadCloud';
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
  return {
    stack,
    template,
    workflows,
    e2e,
    cloud,
    clientConfig,
    sfn: new SFNClient(clientConfig),
    operatorEnv,
    cli: (args, env = {}) =>
      runCli(args, {
        env: { ...process.env, ...operatorEnv, ...env },
        readFile: () => Promise.reject(new Error('no files')),
      }),
    async close() {
      try {
        await stack.close();
        await e2e.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
