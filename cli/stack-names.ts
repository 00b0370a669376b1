/**
 * Which table and bucket a deployed stack uses. CloudFormation gives them generated names, so the
 * commands that read a deployed stack (`start`, `pending`, `respond`, `inspect`, `copy`) find them:
 *   1. STEPTHREAD_TABLE / STEPTHREAD_BUCKET, when set, win;
 *   2. else the stack's `TableName` / `BucketName` outputs, the stack named by `--stack <name>` or
 *      $STEPTHREAD_STACK_NAME (the variable the CDK app reads too); read once with DescribeStacks and
 *      cached under the data directory (`stacks/`);
 *   3. else the defaults (`stepthread`, `stepthread-conversations`).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StepthreadError } from '../engine/errors.ts';
import {
  type AwsTarget,
  clientConfig,
  DEFAULT_BUCKET_NAME,
  DEFAULT_TABLE_NAME,
  type ResourceNames,
} from '../functions/aws/target.ts';
import { awsAccessProblem } from './aws-errors.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** DescribeStacks' outputs of one stack (injectable for tests). */
export type DescribeOutputs = (stackName: string, target: AwsTarget) => Promise<Record<string, string>>;

export const describeStackOutputs: DescribeOutputs = async (stackName, target) => {
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const client = new CloudFormationClient(clientConfig(target, 'cloudformation'));
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    const outputs: Record<string, string> = {};
    for (const output of Stacks?.[0]?.Outputs ?? []) {
      if (output.OutputKey && output.OutputValue) outputs[output.OutputKey] = output.OutputValue;
    }
    return outputs;
  } finally {
    client.destroy();
  }
};

export interface StackNamesOptions {
  readonly stack?: string;
  /** Where resolved outputs are cached (the data directory); no cache without it. */
  readonly cacheDir?: string;
  readonly describe?: DescribeOutputs;
}

export async function deployedResourceNames(
  env: Env,
  target: AwsTarget,
  options: StackNamesOptions = {},
): Promise<ResourceNames> {
  const table = env.STEPTHREAD_TABLE?.trim();
  const bucket = env.STEPTHREAD_BUCKET?.trim();
  const stack = options.stack ?? env.STEPTHREAD_STACK_NAME?.trim();
  if ((table && bucket) || !stack) {
    return { tableName: table || DEFAULT_TABLE_NAME, bucketName: bucket || DEFAULT_BUCKET_NAME };
  }
  const outputs = await cachedOutputs(stack, target, env, options);
  const tableName = table || outputs.TableName;
  const bucketName = bucket || outputs.BucketName;
  if (!tableName || !bucketName) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `stack ${stack} has no TableName/BucketName outputs: is it a stepthread stack? (or set STEPTHREAD_TABLE and STEPTHREAD_BUCKET)`,
    );
  }
  return { tableName, bucketName };
}

async function cachedOutputs(
  stack: string,
  target: AwsTarget,
  env: Env,
  options: StackNamesOptions,
): Promise<Record<string, string>> {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? '';
  const where = target.kind === 'endpoint' ? target.endpoint : 'aws';
  const key = createHash('sha256')
    .update(JSON.stringify([where, region, stack]))
    .digest('hex')
    .slice(0, 16);
  const file = options.cacheDir ? join(options.cacheDir, 'stacks', `${stack}-${key}.json`) : undefined;
  if (file) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    } catch {
      // not cached yet (or unreadable): ask CloudFormation
    }
  }
  let outputs: Record<string, string>;
  try {
    outputs = await (options.describe ?? describeStackOutputs)(stack, target);
  } catch (error) {
    throw outputsUnreadable(error, stack, target, env);
  }
  if (file && outputs.TableName && outputs.BucketName) {
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, `${JSON.stringify(outputs, null, 2)}\n`);
  }
  return outputs;
}

/** Why DescribeStacks failed, coded for what to do: start or name the endpoint, set a region, deploy. */
function outputsUnreadable(error: unknown, stack: string, target: AwsTarget, env: Env): StepthreadError {
  const access = awsAccessProblem(error, env);
  if (access)
    return new StepthreadError(access.code, `cannot read the outputs of stack ${stack}: ${access.message}`);
  const message = error instanceof Error ? error.message : String(error);
  if (/does not exist/i.test(message)) {
    const where =
      target.kind === 'endpoint'
        ? `at ${target.endpoint}`
        : `in region ${env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'of your AWS profile'}`;
    return new StepthreadError(
      'STACK_NOT_FOUND',
      `stack ${stack} does not exist ${where}: deploy it (npm run deploy), or name the deployed one with --stack or STEPTHREAD_STACK_NAME`,
    );
  }
  return new StepthreadError('AWS_REQUEST_FAILED', `cannot read the outputs of stack ${stack}: ${message}`);
}
