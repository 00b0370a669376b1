/** Table and bucket of a deployed stack: variables, else the stack's outputs (cached), else defaults. */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStores } from '../../cli/local-session.ts';
import {
  type DescribeOutputs,
  deployedResourceNames,
  isMissingResource,
  resolveStackNames,
} from '../../cli/stack-names.ts';

const target = { kind: 'aws' } as const;
const OUTPUTS = { TableName: 'Agents-RuntimeTable1A2B', BucketName: 'agents-runtimeconversations3c4d' };

function recording(outputs: Record<string, string> = OUTPUTS) {
  const asked: string[] = [];
  const describe: DescribeOutputs = async (stack) => {
    asked.push(stack);
    return { stackId: `arn:aws:cloudformation:eu-west-1:123456789012:stack/${stack}/1`, outputs };
  };
  return { asked, describe };
}

describe('deployed table and bucket names', () => {
  it('reads the outputs of the stack named by --stack, once: later commands use the cache', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'stepthread-stack-'));
    const { asked, describe } = recording();
    expect(await deployedResourceNames({}, target, { stack: 'Agents', cacheDir, describe })).toEqual({
      tableName: OUTPUTS.TableName,
      bucketName: OUTPUTS.BucketName,
    });
    const again = await deployedResourceNames({}, target, { stack: 'Agents', cacheDir, describe });
    expect(again.tableName).toBe(OUTPUTS.TableName);
    expect(asked).toEqual(['Agents']);
  });

  it('caches per endpoint, region and credentials, with the StackId; refresh asks again and replaces the entry', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'stepthread-stack-'));
    const { asked, describe } = recording();
    const options = { stack: 'Agents', cacheDir, describe };
    const resolved = await resolveStackNames({ AWS_REGION: 'eu-west-1', AWS_PROFILE: 'a' }, target, options);
    expect(resolved).toMatchObject({ cached: false, stackId: expect.stringContaining(':stack/Agents/') });
    expect(
      (await resolveStackNames({ AWS_REGION: 'eu-west-1', AWS_PROFILE: 'a' }, target, options)).cached,
    ).toBe(true);
    // Another region, another account's credentials, another endpoint: another stack.
    await resolveStackNames({ AWS_REGION: 'us-east-1', AWS_PROFILE: 'a' }, target, options);
    await resolveStackNames({ AWS_REGION: 'eu-west-1', AWS_PROFILE: 'b' }, target, options);
    await resolveStackNames(
      { AWS_REGION: 'eu-west-1', AWS_PROFILE: 'a' },
      { kind: 'endpoint', endpoint: 'http://localhost:4566' },
      options,
    );
    expect(asked).toHaveLength(4);
    const refreshed = await resolveStackNames({ AWS_REGION: 'eu-west-1', AWS_PROFILE: 'a' }, target, {
      ...options,
      refresh: true,
    });
    expect(refreshed.cached).toBe(false);
    expect(asked).toHaveLength(5);
  });

  it('tells a missing table or bucket (a redeployed stack) from other errors, through causes', () => {
    const dynamo = Object.assign(new Error('Requested resource not found'), {
      name: 'ResourceNotFoundException',
    });
    const s3 = Object.assign(new Error('The specified bucket does not exist'), { name: 'NoSuchBucket' });
    expect(isMissingResource(dynamo)).toBe(true);
    expect(isMissingResource(s3)).toBe(true);
    expect(isMissingResource(new Error('reading the thread', { cause: dynamo }))).toBe(true);
    expect(
      isMissingResource(Object.assign(new Error('no'), { name: 'ConditionalCheckFailedException' })),
    ).toBe(false);
    expect(isMissingResource(undefined)).toBe(false);
  });

  it('takes the stack from STEPTHREAD_STACK_NAME; STEPTHREAD_TABLE and STEPTHREAD_BUCKET win', async () => {
    const { asked, describe } = recording();
    const fromEnv = await deployedResourceNames({ STEPTHREAD_STACK_NAME: 'Agents' }, target, { describe });
    expect(fromEnv.bucketName).toBe(OUTPUTS.BucketName);
    const explicit = await deployedResourceNames(
      { STEPTHREAD_STACK_NAME: 'Agents', STEPTHREAD_TABLE: 't', STEPTHREAD_BUCKET: 'b' },
      target,
      { describe },
    );
    expect(explicit).toEqual({ tableName: 't', bucketName: 'b' });
    expect(asked).toEqual(['Agents']);
  });

  it('falls back to the default names without a stack, and refuses a stack without the outputs', async () => {
    expect(await deployedResourceNames({}, target)).toEqual({
      tableName: 'stepthread',
      bucketName: 'stepthread-conversations',
    });
    const { describe } = recording({ Other: 'x' });
    await expect(deployedResourceNames({}, target, { stack: 'NotOurs', describe })).rejects.toMatchObject({
      code: 'DEPLOY_CONFIG_INVALID',
      message: expect.stringContaining('stack NotOurs has no TableName/BucketName outputs'),
    });
  });

  it('opens the deployed stack, never the local data directory, when --stack names one', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'stepthread-stack-')), 'absent');
    // No AWS_ENDPOINT_URL or STEPTHREAD_TARGET: --stack alone selects AWS (as for `runs` and `dev`).
    const env = { STEPTHREAD_TABLE: 't', STEPTHREAD_BUCKET: 'b', AWS_REGION: 'eu-west-1' };
    const session = await openStores({ stack: 'Agents', dataDir, mustExist: true }, {
      env,
      stdout: () => {},
      stderr: () => {},
    } as never);
    expect(session.location).toBe('AWS');
    expect(session.dataDir).toBeUndefined();
    expect(session.clients.tableName).toBe('t');
    expect(existsSync(dataDir)).toBe(false);
    await session.close();
  });
});
