/**
 * The embedded target's wire clients (functions/aws/wire-clients.ts) against the SDK's on the same
 * emulators: the same commands give the same answers, the same errors and the same request bodies;
 * and s3rver's store (functions/local/s3-store.ts) writes s3rver's files.
 */
import { createHash } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutBucketCorsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createDocumentClient, type DocumentClient } from '../../functions/aws/dynamo-client.ts';
import { aroundCommands, meterClient } from '../../functions/aws/meter.ts';
import { clientConfig } from '../../functions/aws/target.ts';
import { isWireClient } from '../../functions/aws/wire-clients.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';

const names = { tableName: 'wire-test', bucketName: 'wire-test' };

/** Drops what only says how the answer came (`$metadata`), keeping what the stores read. */
function answer(output: unknown): unknown {
  const { $metadata, ...rest } = output as Record<string, unknown>;
  return rest;
}

async function failure(promise: Promise<unknown>): Promise<{ name: string; status?: number }> {
  try {
    await promise;
  } catch (error) {
    const { name, $metadata } = error as Error & { $metadata?: { httpStatusCode?: number } };
    return { name, ...($metadata?.httpStatusCode === undefined ? {} : { status: $metadata.httpStatusCode }) };
  }
  throw new Error('expected a failure');
}

describe.each([
  { transport: 'in process', serveInProcess: true },
  { transport: 'over loopback', serveInProcess: false },
])('wire clients of the embedded target ($transport), against the SDK', ({ serveInProcess }) => {
  let services: LocalServices;
  beforeAll(async () => {
    services = await startLocalServices({ ephemeral: true, names, serveInProcess });
  });
  afterAll(() => services.close());

  it(`reach the emulators ${serveInProcess ? 'without' : 'through'} an HTTP connection`, async () => {
    const { dynamo, s3 } = createAwsClients(services.target, names);
    const sent: string[] = [];
    const onRequest = (message: unknown) => {
      sent.push((message as { request: { method: string } }).request.method);
    };
    diagnostics.subscribe('http.client.request.start', onRequest);
    try {
      await dynamo.send(new PutCommand({ TableName: names.tableName, Item: { pk: 'T', sk: 'A' } }));
      await s3.send(new PutObjectCommand({ Bucket: names.bucketName, Key: 't.json', Body: '{}' }));
      const got = await s3.send(new GetObjectCommand({ Bucket: names.bucketName, Key: 't.json' }));
      expect(await got.Body?.transformToString('utf-8')).toBe('{}');
    } finally {
      diagnostics.unsubscribe('http.client.request.start', onRequest);
    }
    expect(sent).toEqual(serveInProcess ? [] : ['POST', 'PUT', 'GET']);
  });

  it('are what createAwsClients gives for the embedded target', () => {
    const { dynamo, s3 } = createAwsClients(services.target, names);
    expect(isWireClient(dynamo)).toBe(true);
    expect(isWireClient(s3)).toBe(true);
  });

  it('answer every document command the stores send as the SDK does, with the same request bodies', async () => {
    const wire = createAwsClients(services.target, names).dynamo;
    const sdk = createDocumentClient(services.target);
    const wireMeter = meterClient(wire);
    const sdkMeter = meterClient(sdk);
    const item = (pk: string) => ({
      pk,
      sk: 'A',
      n: 7,
      big: 2 ** 40,
      ratio: 0.25,
      text: 'héllo',
      yes: true,
      nothing: null,
      dropped: undefined,
      nested: { list: [1, 'two', { three: [3] }], empty: {}, none: [] },
    });
    const commands = (prefix: string) => [
      new PutCommand({ TableName: names.tableName, Item: item(`${prefix}#1`) }),
      new PutCommand({ TableName: names.tableName, Item: item(`${prefix}#2`), ReturnValues: 'ALL_OLD' }),
      new GetCommand({
        TableName: names.tableName,
        Key: { pk: `${prefix}#1`, sk: 'A' },
        ConsistentRead: true,
      }),
      new GetCommand({ TableName: names.tableName, Key: { pk: `${prefix}#missing`, sk: 'A' } }),
      new UpdateCommand({
        TableName: names.tableName,
        Key: { pk: `${prefix}#1`, sk: 'A' },
        UpdateExpression: 'SET n = n + :one, nested.added = :added',
        ConditionExpression: 'n = :seven',
        ExpressionAttributeValues: { ':one': 1, ':seven': 7, ':added': { at: [`${prefix}#x`] } },
        ReturnValues: 'ALL_NEW',
      }),
      new QueryCommand({
        TableName: names.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `${prefix}#2` },
        ProjectionExpression: '#n, nested.#l',
        ExpressionAttributeNames: { '#n': 'n', '#l': 'list' },
      }),
      new BatchWriteCommand({
        RequestItems: {
          [names.tableName]: [
            { PutRequest: { Item: item(`${prefix}#3`) } },
            { DeleteRequest: { Key: { pk: `${prefix}#2`, sk: 'A' } } },
          ],
        },
      }),
      new BatchGetCommand({
        RequestItems: {
          [names.tableName]: {
            Keys: [{ pk: `${prefix}#3`, sk: 'A' }],
            ConsistentRead: true,
          },
        },
      }),
      new DeleteCommand({
        TableName: names.tableName,
        Key: { pk: `${prefix}#3`, sk: 'A' },
        ReturnValues: 'ALL_OLD',
      }),
      new ScanCommand({
        TableName: names.tableName,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': `${prefix}#` },
      }),
    ];
    const viaSdk = [];
    for (const command of commands('P')) viaSdk.push(answer(await sdk.send(command as never)));
    const viaWire = [];
    // A scan reads the other prefix's items too: how many it read differs.
    const scanned = (answers: unknown[]) =>
      answers.map((a, i) => (i === 9 ? { ...(a as object), ScannedCount: 0 } : a));
    // The same commands on other keys: the answers differ only by the key prefix.
    for (const command of commands('Q')) viaWire.push(answer(await wire.send(command as never)));
    expect(JSON.parse(JSON.stringify(scanned(viaWire)).replaceAll('Q#', 'P#'))).toEqual(
      JSON.parse(JSON.stringify(scanned(viaSdk))),
    );
    expect(viaWire[2]).toMatchObject({
      Item: { pk: 'Q#1', big: 2 ** 40, nested: { list: [1, 'two', { three: [3] }] } },
    });
    expect(viaWire[2]).not.toHaveProperty('Item.dropped');
    expect(wireMeter.snapshot()).toEqual(sdkMeter.snapshot());
  });

  it('fail as the SDK fails: the exception name and status, the service error shape', async () => {
    const wire = createAwsClients(services.target, names).dynamo;
    const sdk = createDocumentClient(services.target);
    await wire.send(new PutCommand({ TableName: names.tableName, Item: { pk: 'F', sk: 'A', v: 1 } }));
    const conditional = new PutCommand({
      TableName: names.tableName,
      Item: { pk: 'F', sk: 'A', v: 2 },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
    const missingTable = new GetCommand({ TableName: 'no-such-table', Key: { pk: 'F', sk: 'A' } });
    const badKey = new GetCommand({ TableName: names.tableName, Key: { pk: 'F' } });
    for (const command of [conditional, missingTable, badKey]) {
      expect(await failure(wire.send(command as never))).toEqual(await failure(sdk.send(command as never)));
    }
    expect(await failure(wire.send(conditional))).toEqual({
      name: 'ConditionalCheckFailedException',
      status: 400,
    });
    // Commands the stores never send are refused by name, not sent half-understood.
    await expect(wire.send(new ListObjectsV2Command({ Bucket: names.bucketName }) as never)).rejects.toThrow(
      /ListObjectsV2Command is not sent by the embedded DynamoDB client/,
    );
  });

  it('put, get, head and delete objects as the SDK does', async () => {
    const wire = createAwsClients(services.target, names).s3;
    const sdk = new S3Client(clientConfig(services.target, 's3'));
    const wireMeter = meterClient(wire);
    const sdkMeter = meterClient(sdk);
    for (const [client, key] of [
      [sdk, 'sdk1/ü one.json'],
      [wire, 'wire/ü one.json'],
    ] as const) {
      const body = JSON.stringify({ key, text: 'x'.repeat(3000) });
      await client.send(
        new PutObjectCommand({
          Bucket: names.bucketName,
          Key: key,
          Body: body,
          ContentType: 'application/json',
        }),
      );
      for (const reader of [sdk, wire]) {
        const got = await reader.send(new GetObjectCommand({ Bucket: names.bucketName, Key: key }));
        expect(await got.Body?.transformToString('utf-8')).toBe(body);
        expect(got.ContentType).toBe('application/json');
        const head = await reader.send(new HeadObjectCommand({ Bucket: names.bucketName, Key: key }));
        expect(head.ContentLength).toBe(Buffer.byteLength(body));
      }
    }
    const missing = { Bucket: names.bucketName, Key: 'nothing/here.json' };
    expect(await failure(wire.send(new GetObjectCommand(missing)))).toEqual(
      await failure(sdk.send(new GetObjectCommand(missing))),
    );
    expect(await failure(wire.send(new HeadObjectCommand(missing)))).toEqual({
      name: 'NotFound',
      status: 404,
    });
    const noBucket = { Bucket: 'no-such-bucket', Key: 'a' };
    expect(await failure(wire.send(new GetObjectCommand(noBucket)))).toEqual(
      await failure(sdk.send(new GetObjectCommand(noBucket))),
    );
    await wire.send(new DeleteObjectCommand({ Bucket: names.bucketName, Key: 'wire/ü one.json' }));
    expect(
      await failure(sdk.send(new HeadObjectCommand({ Bucket: names.bucketName, Key: 'wire/ü one.json' }))),
    ).toEqual({
      name: 'NotFound',
      status: 404,
    });
    expect(wireMeter.snapshot().PutObjectCommand).toEqual(sdkMeter.snapshot().PutObjectCommand);
    await expect(
      wire.send(
        new PutObjectCommand({ Bucket: names.bucketName, Key: 'm', Body: 'x', Metadata: { a: 'b' } }),
      ),
    ).rejects.toThrow(/Metadata not supported/);
    await expect(wire.send(new ListObjectsV2Command({ Bucket: names.bucketName }) as never)).rejects.toThrow(
      /ListObjectsV2Command is not sent by the embedded S3 client/,
    );
  });

  it('lists objects as the SDK does, page by page (what prune reads)', async () => {
    const wire = createAwsClients(services.target, names).s3;
    const sdk = new S3Client(clientConfig(services.target, 's3'));
    for (const key of ['list/a & b.json', 'list/b.json', 'list/c.json', 'other/d.json']) {
      await wire.send(new PutObjectCommand({ Bucket: names.bucketName, Key: key, Body: key }));
    }
    const pages = async (client: typeof wire | S3Client) => {
      const seen: { Key?: string; Size?: number; LastModified?: Date }[][] = [];
      let marker: string | undefined;
      for (let more = true; more; ) {
        const page = await client.send(
          new ListObjectsCommand({ Bucket: names.bucketName, Prefix: 'list/', MaxKeys: 2, Marker: marker }),
        );
        seen.push((page.Contents ?? []).map(({ Key, Size, LastModified }) => ({ Key, Size, LastModified })));
        marker = page.Contents?.at(-1)?.Key;
        more = page.IsTruncated === true;
      }
      return seen;
    };
    const listed = await pages(wire);
    expect(listed).toEqual(await pages(sdk));
    expect(listed.map((page) => page.map((object) => [object.Key, object.Size]))).toEqual([
      [
        ['list/a & b.json', 15],
        ['list/b.json', 11],
      ],
      [['list/c.json', 11]],
    ]);
  });

  it('let a counter around each call see it once, in order, on both kinds of client', async () => {
    const wire = createAwsClients(services.target, names).dynamo;
    const sdk = createDocumentClient(services.target);
    const clients: DocumentClient[] = [wire, sdk];
    for (const client of clients) {
      const seen: string[] = [];
      aroundCommands(client, async ({ commandName }, next) => {
        seen.push(`${commandName}>`);
        const result = await next();
        seen.push(`<${commandName}`);
        return result;
      });
      await client.send(new GetCommand({ TableName: names.tableName, Key: { pk: 'F', sk: 'A' } }));
      await client.send(new PutCommand({ TableName: names.tableName, Item: { pk: 'G', sk: 'A' } }));
      expect(seen).toEqual(['GetItemCommand>', '<GetItemCommand', 'PutItemCommand>', '<PutItemCommand']);
    }
  });
});

describe("s3rver's store on the embedded target", () => {
  let services: LocalServices;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'stepthread-wire-'));
    services = await startLocalServices({ dataDir, names });
  });
  afterAll(async () => {
    await services.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("writes s3rver's files: the object, its .md5 and its metadata.json", async () => {
    const s3 = new S3Client(clientConfig(services.target, 's3'));
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
    const s3 = new S3Client(clientConfig(services.target, 's3'));
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
