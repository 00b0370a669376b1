/**
 * Which table and bucket a deployed stack uses. CloudFormation gives them generated names, so the
 * commands that read a deployed stack (`start`, `pending`, `respond`, `inspect`, `copy`) find them:
 *   1. STEPTHREAD_TABLE / STEPTHREAD_BUCKET, when set, win;
 *   2. else the stack's `TableName` / `BucketName` outputs (and `EventBusName`, where a cancel's
 *      THREAD_CANCELLED events are published; STEPTHREAD_EVENT_BUS wins), the stack named by `--stack <name>` or
 *      $STEPTHREAD_STACK_NAME (the variable the CDK app reads too); read once with DescribeStacks and
 *      cached under the data directory (`stacks/`), keyed by stack, endpoint, region and credentials,
 *      with the StackId they were read from. A redeploy (a stack deleted and created again) gives new
 *      names: a command that meets a missing table or bucket refreshes the entry (`refresh`) and, when
 *      the names changed, runs once more (local-session.ts). `--no-cache` reads the outputs every time;
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
import { EVENT_BUS_ENV } from '../functions/events/publisher.ts';
import { awsAccessProblem } from './aws-errors.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** One stack as DescribeStacks gives it: its id (a new one per create) and its outputs. */
export interface StackDescription {
  readonly stackId?: string;
  readonly outputs: Record<string, string>;
}

/** DescribeStacks of one stack (injectable for tests). */
export type DescribeOutputs = (stackName: string, target: AwsTarget) => Promise<StackDescription>;

export const describeStackOutputs: DescribeOutputs = async (stackName, target) => {
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const client = new CloudFormationClient(clientConfig(target, 'cloudformation'));
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    const outputs: Record<string, string> = {};
    for (const output of Stacks?.[0]?.Outputs ?? []) {
      if (output.OutputKey && output.OutputValue) outputs[output.OutputKey] = output.OutputValue;
    }
    return { ...(Stacks?.[0]?.StackId ? { stackId: Stacks[0].StackId } : {}), outputs };
  } finally {
    client.destroy();
  }
};

export interface StackNamesOptions {
  readonly stack?: string;
  /** Where resolved outputs are cached (the data directory); no cache without it. */
  readonly cacheDir?: string;
  readonly describe?: DescribeOutputs;
  /** Ask CloudFormation even when the outputs are cached, and cache its answer (a name was not found). */
  readonly refresh?: boolean;
}

/** Names, and where they came from: a cached description may be stale (the stack was deployed again). */
export interface StackNames {
  readonly names: ResourceNames;
  /** The names came from the cache, not from CloudFormation just now. */
  readonly cached: boolean;
  /** The stack the outputs were read from (absent when the variables or defaults gave the names). */
  readonly stackId?: string;
}

export async function resolveStackNames(
  env: Env,
  target: AwsTarget,
  options: StackNamesOptions = {},
): Promise<StackNames> {
  const table = env.STEPTHREAD_TABLE?.trim();
  const bucket = env.STEPTHREAD_BUCKET?.trim();
  const bus = env[EVENT_BUS_ENV]?.trim();
  const stack = options.stack ?? env.STEPTHREAD_STACK_NAME?.trim();
  if ((table && bucket) || !stack) {
    return {
      names: {
        tableName: table || DEFAULT_TABLE_NAME,
        bucketName: bucket || DEFAULT_BUCKET_NAME,
        ...(bus ? { eventBusName: bus } : {}),
      },
      cached: false,
    };
  }
  const { description, cached } = await cachedDescription(stack, target, env, options);
  const tableName = table || description.outputs.TableName;
  const bucketName = bucket || description.outputs.BucketName;
  if (!tableName || !bucketName) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `stack ${stack} has no TableName/BucketName outputs: is it a stepthread stack? (or set STEPTHREAD_TABLE and STEPTHREAD_BUCKET)`,
    );
  }
  const eventBusName = bus || description.outputs.EventBusName;
  return {
    names: { tableName, bucketName, ...(eventBusName ? { eventBusName } : {}) },
    cached,
    ...(description.stackId ? { stackId: description.stackId } : {}),
  };
}

/**
 * The names the stack's outputs give now, read past the cache, when they differ from `previous`: a
 * command whose cached names met a gone table or bucket (the stack was deployed again) runs once more
 * with them. Undefined when they are the same (the resource is gone for another reason).
 */
export async function namesAfterRedeploy(
  env: Env,
  target: AwsTarget,
  options: StackNamesOptions,
  previous: ResourceNames,
): Promise<ResourceNames | undefined> {
  const { names } = await resolveStackNames(env, target, { ...options, refresh: true });
  const same = names.tableName === previous.tableName && names.bucketName === previous.bucketName;
  return same ? undefined : names;
}

/**
 * The outputs of the stack `--stack` (or $STEPTHREAD_STACK_NAME) names, read and cached as the table
 * and bucket are; read again past the cache when it lacks one of `wanted` (the stack was deployed
 * again since, with more outputs). Undefined when no stack is named.
 */
export async function stackOutputs(
  env: Env,
  target: AwsTarget,
  options: StackNamesOptions,
  wanted: readonly string[],
): Promise<Record<string, string> | undefined> {
  const stack = options.stack ?? env.STEPTHREAD_STACK_NAME?.trim();
  if (!stack) return undefined;
  let { description, cached } = await cachedDescription(stack, target, env, options);
  if (cached && wanted.some((name) => description.outputs[name] === undefined)) {
    ({ description, cached } = await cachedDescription(stack, target, env, { ...options, refresh: true }));
  }
  return description.outputs;
}

/**
 * The cache file of a stack as these credentials see it: the same stack name on another endpoint, in
 * another region or account (told apart by profile or access key, as no call names the account) is
 * another stack.
 */
export function stackCacheFile(cacheDir: string, stack: string, target: AwsTarget, env: Env): string {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? '';
  const where = target.kind === 'endpoint' ? target.endpoint : 'aws';
  const identity = env.AWS_PROFILE ?? env.AWS_ACCESS_KEY_ID ?? '';
  const key = createHash('sha256')
    .update(JSON.stringify([where, region, identity, stack]))
    .digest('hex')
    .slice(0, 16);
  return join(cacheDir, 'stacks', `${stack}-${key}.json`);
}

async function cachedDescription(
  stack: string,
  target: AwsTarget,
  env: Env,
  options: StackNamesOptions,
): Promise<{ description: StackDescription; cached: boolean }> {
  const file = options.cacheDir ? stackCacheFile(options.cacheDir, stack, target, env) : undefined;
  if (file && !options.refresh) {
    try {
      const entry = JSON.parse(readFileSync(file, 'utf8')) as Partial<StackDescription>;
      if (entry.outputs && typeof entry.outputs === 'object') {
        return { description: entry as StackDescription, cached: true };
      }
    } catch {
      // not cached yet (or unreadable): ask CloudFormation
    }
  }
  let description: StackDescription;
  try {
    description = await (options.describe ?? describeStackOutputs)(stack, target);
  } catch (error) {
    throw outputsUnreadable(error, stack, target, env);
  }
  if (file && description.outputs.TableName && description.outputs.BucketName) {
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, `${JSON.stringify(description, null, 2)}\n`);
  }
  return { description, cached: false };
}

/**
 * Whether an error says the table or bucket does not exist (DynamoDB's ResourceNotFoundException,
 * "Requested resource not found"; S3's NoSuchBucket), here or in its causes.
 */
export function isMissingResource(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth += 1) {
    const { name, message, Code } = current as { name?: unknown; message?: unknown; Code?: unknown };
    if (name === 'ResourceNotFoundException' || name === 'NoSuchBucket' || Code === 'NoSuchBucket')
      return true;
    if (
      typeof message === 'string' &&
      /Requested resource not found|specified bucket does not exist/.test(message)
    ) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
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
