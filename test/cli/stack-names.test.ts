/** Table and bucket of a deployed stack: variables, else the stack's outputs (cached), else defaults. */
import { existsSync, mkdtempSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStores } from '../../cli/local-session.ts';
import { type DescribeOutputs, isMissingResource, resolveStackNames } from '../../cli/stack-names.ts';
import { cliProcessSync, envWithoutTarget } from '../support/cli-process.ts';

/** The table and bucket names alone. */
const deployedResourceNames = async (...args: Parameters<typeof resolveStackNames>) =>
  (await resolveStackNames(...args)).names;

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

  it("takes the event bus from the stack's EventBusName output, cached with the others; STEPTHREAD_EVENT_BUS wins", async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'stepthread-stack-'));
    const { asked, describe } = recording({ ...OUTPUTS, EventBusName: 'agents-events' });
    const options = { stack: 'Agents', cacheDir, describe };
    expect((await deployedResourceNames({}, target, options)).eventBusName).toBe('agents-events');
    const cached = await resolveStackNames({}, target, options);
    expect(cached).toMatchObject({ cached: true, names: { eventBusName: 'agents-events' } });
    expect(asked).toEqual(['Agents']);
    const named = await deployedResourceNames({ STEPTHREAD_EVENT_BUS: 'other-bus' }, target, options);
    expect(named.eventBusName).toBe('other-bus');
    // The table and bucket from variables, no stack: the bus only from its variable.
    const variables = { STEPTHREAD_TABLE: 't', STEPTHREAD_BUCKET: 'b' };
    expect(await deployedResourceNames(variables, target)).toEqual({ tableName: 't', bucketName: 'b' });
    expect(await deployedResourceNames({ ...variables, STEPTHREAD_EVENT_BUS: 'other-bus' }, target)).toEqual({
      tableName: 't',
      bucketName: 'b',
      eventBusName: 'other-bus',
    });
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

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The environment without any AWS setting of this machine's, plus `extra`. */
function bareEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = envWithoutTarget();
  for (const name of Object.keys(env))
    if (name.startsWith('AWS_') || name.startsWith('STEPTHREAD_')) delete env[name];
  return { ...env, AWS_CONFIG_FILE: '/nonexistent', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', ...extra };
}

describe('a deployed stack that cannot be read', () => {
  it('is AWS_ENDPOINT_UNREACHABLE naming the endpoint when nothing listens there (not DEPLOY_CONFIG_INVALID)', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const env = { AWS_ENDPOINT_URL: endpoint, AWS_REGION: 'us-east-1' };
    await expect(
      deployedResourceNames(env, { kind: 'endpoint', endpoint }, { stack: 'Agents' }),
    ).rejects.toMatchObject({
      code: 'AWS_ENDPOINT_UNREACHABLE',
      message: `cannot read the outputs of stack Agents: cannot reach ${endpoint} (AWS_ENDPOINT_URL): ECONNREFUSED. Is LocalStack (or whatever serves it) running there? Start it, or set AWS_ENDPOINT_URL to where it listens; unset it to use AWS`,
    });
  });

  it('is STACK_NOT_FOUND when CloudFormation has no such stack, saying where it looked', async () => {
    const missing: DescribeOutputs = async (stack) => {
      throw Object.assign(new Error(`Stack with id ${stack} does not exist`), { name: 'ValidationError' });
    };
    await expect(
      deployedResourceNames({ AWS_REGION: 'eu-west-1' }, target, { stack: 'Agents', describe: missing }),
    ).rejects.toMatchObject({
      code: 'STACK_NOT_FOUND',
      message:
        'stack Agents does not exist in region eu-west-1: deploy it (npm run deploy), or name the deployed one with --stack or STEPTHREAD_STACK_NAME',
    });
  });

  it('is AWS_REGION_MISSING saying to set AWS_REGION, from pending --stack and start (real processes)', () => {
    const env = bareEnv({ STEPTHREAD_TARGET: 'aws', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' });
    const pending = cliProcessSync(['pending', '--stack', 'Agents'], { env, timeout: 60_000 });
    expect(pending.status).toBe(1);
    expect(pending.stderr).toBe(
      'stepthread: cannot open the stores\n  AWS_REGION_MISSING: cannot read the outputs of stack Agents: no AWS region is set: set AWS_REGION (for example `export AWS_REGION=us-east-1`), or a region in your AWS profile\n',
    );
    const start = cliProcessSync(['start', 'triage'], { env, timeout: 60_000 });
    expect(start.status).toBe(1);
    expect(start.stderr).toMatch(
      /^stepthread: cannot start triage\n {2}AWS_REGION_MISSING: no AWS region is set: /,
    );
  }, 120_000);

  it('is AWS_ENDPOINT_UNREACHABLE from start and pending when LocalStack is not running (real processes)', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const env = bareEnv({ AWS_ENDPOINT_URL: endpoint });
    const start = cliProcessSync(['start', 'triage'], { env, timeout: 60_000 });
    expect(start.status).toBe(1);
    expect(start.stderr).toMatch(
      new RegExp(
        `^stepthread: cannot start triage\\n {2}AWS_ENDPOINT_UNREACHABLE: cannot reach ${endpoint} \\(AWS_ENDPOINT_URL\\): ECONNREFUSED\\.`,
      ),
    );
    // Without a stack: the table itself is where the refusal comes from (it read NODE_EXECUTION_FAILED).
    const pending = cliProcessSync(['pending'], { env, timeout: 60_000 });
    expect(pending.status).toBe(1);
    expect(pending.stderr).toContain(`AWS_ENDPOINT_UNREACHABLE: cannot reach ${endpoint} (AWS_ENDPOINT_URL)`);
  }, 120_000);
});
