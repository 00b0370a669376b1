import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, resolveAwsTarget, resolveResourceNames } from '../../functions/aws/clients.ts';
import { ensureResources } from '../../functions/aws/provision.ts';
import { startLocalServices } from '../../functions/local/services.ts';
import { GSI1_NAME, tableDefinition } from '../../functions/stores/table.ts';

const names = { tableName: 'stepthread-test', bucketName: 'stepthread-test-conversations' };

describe('resolveAwsTarget', () => {
  it('prefers AWS_ENDPOINT_URL, then STEPTHREAD_TARGET=aws, else embedded', () => {
    expect(resolveAwsTarget({ AWS_ENDPOINT_URL: 'http://localhost:4566', STEPTHREAD_TARGET: 'aws' })).toEqual(
      {
        kind: 'endpoint',
        endpoint: 'http://localhost:4566',
      },
    );
    expect(resolveAwsTarget({ STEPTHREAD_TARGET: 'aws' })).toEqual({ kind: 'aws' });
    expect(resolveAwsTarget({}, { dynamoEndpoint: 'http://a', s3Endpoint: 'http://b' })).toEqual({
      kind: 'embedded',
      dynamoEndpoint: 'http://a',
      s3Endpoint: 'http://b',
    });
  });

  it('reads table and bucket names from the environment, with defaults', () => {
    expect(resolveResourceNames({})).toEqual({
      tableName: 'stepthread',
      bucketName: 'stepthread-conversations',
    });
    expect(resolveResourceNames({ STEPTHREAD_TABLE: 't1', STEPTHREAD_BUCKET: 'b1' })).toEqual({
      tableName: 't1',
      bucketName: 'b1',
    });
  });

  it('reuses clients for the same target', () => {
    const target = { kind: 'endpoint', endpoint: 'http://localhost:4566' } as const;
    expect(createAwsClients(target, names)).toBe(createAwsClients({ ...target }, names));
    expect(createAwsClients(target, names)).not.toBe(
      createAwsClients(target, { ...names, tableName: 'other' }),
    );
  });
});

describe('startLocalServices (ephemeral)', () => {
  let services: Awaited<ReturnType<typeof startLocalServices>>;
  beforeAll(async () => {
    services = await startLocalServices({ ephemeral: true, names });
  });
  afterAll(() => services.close());

  // How fast it starts is bench/'s to print (bench/speed.ts), not a test's to time.
  it('starts with the table (and its GSI) and the bucket in place', async () => {
    const clients = createAwsClients(services.target, names);
    const { Table } = await clients.dynamo.send(new DescribeTableCommand({ TableName: names.tableName }));
    expect(Table?.TableStatus).toBe('ACTIVE');
    expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName)).toEqual([GSI1_NAME]);
    await expect(clients.s3.send(new HeadBucketCommand({ Bucket: names.bucketName }))).resolves.toBeDefined();
  });

  it('provisioning again is a no-op', async () => {
    const clients = createAwsClients(services.target, names);
    await expect(ensureResources(clients)).resolves.toBeUndefined();
    await expect(Promise.all([ensureResources(clients), ensureResources(clients)])).resolves.toHaveLength(2);
  });

  it('refuses a bucket name S3 refuses, as s3rver did, and leaves nothing running', async () => {
    for (const bucketName of ['Stepthread_Bucket', 'ab']) {
      await expect(
        startLocalServices({ ephemeral: true, names: { ...names, bucketName } }),
      ).rejects.toMatchObject({ name: 'InvalidBucketName' });
    }
  });

  it('closes under requests still under way in process: they end, and none crashes the process', async () => {
    const closing = await startLocalServices({ ephemeral: true, names });
    const { dynamo, s3 } = createAwsClients(closing.target, names);
    const writes = Array.from({ length: 20 }, (_, i) =>
      dynamo.send(new PutCommand({ TableName: names.tableName, Item: { pk: `c${i}`, sk: 'A' } })),
    );
    const puts = Array.from({ length: 20 }, (_, i) =>
      s3.send(new PutObjectCommand({ Bucket: names.bucketName, Key: `c${i}`, Body: 'x' })),
    );
    const settled = Promise.allSettled([...writes, ...puts]);
    await closing.close();
    const outcomes = await settled;
    // The writes were under way (sent in process) when the close began: it waited for them. dynalite,
    // closed under them, would have thrown an uncaught "Database is closed".
    expect(outcomes.slice(0, 20).map((outcome) => outcome.status)).toEqual(Array(20).fill('fulfilled'));
    // Every request ended: done, or refused as by a service that is gone.
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(Error);
    }
  });

  it('exports a table definition keyed by pk/sk with one GSI', () => {
    const definition = tableDefinition('t');
    expect(definition.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(definition.GlobalSecondaryIndexes).toHaveLength(1);
  });
});

describe('startLocalServices (persistent data directory)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'stepthread-services-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('keeps data across restarts', async () => {
    const first = await startLocalServices({ dataDir, names });
    const key = { pk: 'TEST#1', sk: 'TEST' };
    await createAwsClients(first.target, names).dynamo.send(
      new PutCommand({ TableName: names.tableName, Item: { ...key, value: 42 } }),
    );
    await first.close();

    const second = await startLocalServices({ dataDir, names });
    try {
      const { Item } = await createAwsClients(second.target, names).dynamo.send(
        new GetCommand({ TableName: names.tableName, Key: key }),
      );
      expect(Item?.value).toBe(42);
    } finally {
      await second.close();
    }
  });

  it('refuses a data directory another process holds, with a coded error', async () => {
    const running = await startLocalServices({ dataDir, names });
    try {
      await expect(startLocalServices({ dataDir, names })).rejects.toMatchObject({
        code: 'LOCAL_DATA_LOCKED',
      });
    } finally {
      await running.close();
    }
    // Released on close: it can start again.
    const again = await startLocalServices({ dataDir, names });
    await again.close();
  });

  it('takes over a stale lock whose pid now belongs to another process (after a reboot)', async () => {
    // This test's own pid, live, but stamped as a process of another boot.
    await writeFile(join(dataDir, 'stepthread.lock'), `${process.pid} 00000000-another-boot:12345`);
    const services = await startLocalServices({ dataDir, names });
    await services.close();
  });

  it('takes over a stale lock left by a process that is gone', async () => {
    // Pids are bounded by pid_max (≤ 2^22 on Linux), so this one cannot be running.
    await writeFile(join(dataDir, 'stepthread.lock'), '99999999');
    const services = await startLocalServices({ dataDir, names });
    await services.close();
  });
});
