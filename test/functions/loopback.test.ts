/**
 * The embedded target's SDK clients (functions/aws/loopback.ts) and s3rver's store
 * (functions/local/s3-store.ts): the same answers and files as before, middleware resolved once per
 * command class, and a meter added after the first request still counting.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketCorsCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { meterClient } from '../../functions/aws/meter.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';

const names = { tableName: 'loopback-test', bucketName: 'loopback-test' };

describe('SDK clients of the embedded target', () => {
  let services: LocalServices;
  beforeAll(async () => {
    services = await startLocalServices({ ephemeral: true, names });
  });
  afterAll(() => services.close());

  it('send no user agent and no AWS-side middleware, and still sign', async () => {
    const { dynamo, s3 } = createAwsClients(services.target, names);
    for (const client of [dynamo, s3]) {
      const stack = client.middlewareStack.identify().join('\n');
      expect(stack).not.toMatch(/loggerMiddleware|getUserAgentMiddleware|recursionDetectionMiddleware/);
      expect(stack).toMatch(/httpSigningMiddleware/);
      expect(stack).toMatch(/retryMiddleware/);
    }
  });

  it('answer concurrent document commands each with its own item', async () => {
    const { dynamo } = createAwsClients(services.target, names);
    const keys = Array.from({ length: 40 }, (_, i) => ({ pk: `ITEM#${i}`, sk: 'A' }));
    await Promise.all(
      keys.map((key, i) =>
        dynamo.send(
          new PutCommand({
            TableName: names.tableName,
            Item: { ...key, n: i, nested: { list: [i, `${i}`] } },
          }),
        ),
      ),
    );
    const read = await Promise.all(
      keys.map((key) => dynamo.send(new GetCommand({ TableName: names.tableName, Key: key }))),
    );
    expect(read.map((r) => r.Item)).toEqual(
      keys.map((key, i) => ({ ...key, n: i, nested: { list: [i, `${i}`] } })),
    );
    const updated = await dynamo.send(
      new UpdateCommand({
        TableName: names.tableName,
        Key: keys[3],
        UpdateExpression: 'SET n = :n',
        ExpressionAttributeValues: { ':n': 33 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    expect(updated.Attributes).toMatchObject({ pk: 'ITEM#3', n: 33 });
    const queried = await dynamo.send(
      new QueryCommand({
        TableName: names.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': 'ITEM#5' },
      }),
    );
    expect(queried.Items).toEqual([{ pk: 'ITEM#5', sk: 'A', n: 5, nested: { list: [5, '5'] } }]);
  });

  it('count requests in a meter added after the first request of that command', async () => {
    const { dynamo, s3 } = createAwsClients(services.target, names);
    await dynamo.send(new GetCommand({ TableName: names.tableName, Key: { pk: 'ITEM#1', sk: 'A' } }));
    await s3.send(new PutObjectCommand({ Bucket: names.bucketName, Key: 'first', Body: 'x' }));
    const dynamoMeter = meterClient(dynamo);
    const s3Meter = meterClient(s3);
    dynamoMeter.reset();
    s3Meter.reset();
    await dynamo.send(new GetCommand({ TableName: names.tableName, Key: { pk: 'ITEM#1', sk: 'A' } }));
    await s3.send(new PutObjectCommand({ Bucket: names.bucketName, Key: 'second', Body: 'hello' }));
    expect(dynamoMeter.requests('GetItemCommand')).toBe(1);
    expect(s3Meter.requests('PutObjectCommand')).toBe(1);
    expect(s3Meter.bytes('PutObjectCommand')).toBe(5);
  });

  it('keep each bucket its own endpoint', async () => {
    const { s3 } = createAwsClients(services.target, names);
    await s3.send(new CreateBucketCommand({ Bucket: 'loopback-other' }));
    await Promise.all(
      ['loopback-test', 'loopback-other', 'loopback-test', 'loopback-other'].map((bucket, i) =>
        s3.send(new PutObjectCommand({ Bucket: bucket, Key: `k${i}`, Body: bucket })),
      ),
    );
    for (const [bucket, keys] of [
      ['loopback-test', ['k0', 'k2']],
      ['loopback-other', ['k1', 'k3']],
    ] as const) {
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'k' }));
      expect(listed.Contents?.map((object) => object.Key)).toEqual(keys);
    }
  });
});

describe("s3rver's store on the embedded target", () => {
  let services: LocalServices;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'stepthread-loopback-'));
    services = await startLocalServices({ dataDir, names });
  });
  afterAll(async () => {
    await services.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("writes s3rver's files: the object, its .md5 and its metadata.json", async () => {
    const { s3 } = createAwsClients(services.target, names);
    const body = JSON.stringify({ hello: 'world' });
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: names.bucketName,
        Key: 'segments/abc.json',
        Body: body,
        ContentType: 'application/json',
        Metadata: { origin: 'test' },
      }),
    );
    const dir = join(dataDir, 's3', names.bucketName, 'segments');
    expect((await readdir(dir)).sort()).toEqual([
      'abc.json._S3rver_metadata.json',
      'abc.json._S3rver_object',
      'abc.json._S3rver_object.md5',
    ]);
    expect(await readFile(join(dir, 'abc.json._S3rver_object'), 'utf8')).toBe(body);
    const md5 = createHash('md5').update(body).digest('hex');
    expect(await readFile(join(dir, 'abc.json._S3rver_object.md5'), 'utf8')).toBe(md5);
    expect(put.ETag).toBe(JSON.stringify(md5));
    expect(JSON.parse(await readFile(join(dir, 'abc.json._S3rver_metadata.json'), 'utf8'))).toEqual({
      'content-type': 'application/json',
      'x-amz-meta-origin': 'test',
    });

    const got = await s3.send(new GetObjectCommand({ Bucket: names.bucketName, Key: 'segments/abc.json' }));
    expect(await got.Body?.transformToString()).toBe(body);
    expect(got.ContentType).toBe('application/json');
    expect(got.Metadata).toEqual({ origin: 'test' });
    const head = await s3.send(new HeadObjectCommand({ Bucket: names.bucketName, Key: 'segments/abc.json' }));
    expect(head.ContentLength).toBe(body.length);
    await expect(
      s3.send(new GetObjectCommand({ Bucket: names.bucketName, Key: 'segments/missing.json' })),
    ).rejects.toMatchObject({ name: 'NoSuchKey' });

    await s3.send(new DeleteObjectCommand({ Bucket: names.bucketName, Key: 'segments/abc.json' }));
    await expect(
      s3.send(new HeadObjectCommand({ Bucket: names.bucketName, Key: 'segments/abc.json' })),
    ).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
  });

  it('sees a bucket configuration set through the API (read once, then from memory)', async () => {
    const { s3 } = createAwsClients(services.target, names);
    const preflight = () =>
      fetch(`${services.target.s3Endpoint}/${names.bucketName}/anything`, {
        method: 'OPTIONS',
        headers: { origin: 'http://example.test', 'access-control-request-method': 'GET' },
      });
    expect((await preflight()).status).toBe(403);
    await s3.send(
      new PutBucketCorsCommand({
        Bucket: names.bucketName,
        CORSConfiguration: {
          CORSRules: [{ AllowedOrigins: ['http://example.test'], AllowedMethods: ['GET'] }],
        },
      }),
    );
    const allowed = await preflight();
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBeTruthy();
  });
});
