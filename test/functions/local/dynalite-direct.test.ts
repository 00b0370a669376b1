/**
 * DynamoDB operations handed to dynalite as objects in this process (functions/local/dynalite-direct.ts)
 * against the same operations as JSON over a loopback socket: the same commands on two emulators give
 * the same answers and the same errors, for every kind of attribute value and every kind of refusal;
 * and in process, no JSON text of a request is parsed.
 */
import { DescribeTableCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
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
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDocumentClient } from '../../../functions/aws/dynamo-client.ts';
import { createWireDocumentClient } from '../../../functions/aws/wire-clients.ts';
import { wireForm } from '../../../functions/aws/wire-http.ts';
import { type LocalServices, startLocalServices } from '../../../functions/local/services.ts';

const names = { tableName: 'direct-test', bucketName: 'direct-test' };
const T = names.tableName;

/** What a send gives: its answer, or its error's every member (name, message, status, fields). */
async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return { answer: await promise };
  } catch (error) {
    const { stack, ...fields } = error as Error;
    return { error: { ...fields, name: (error as Error).name, message: (error as Error).message } };
  }
}

const bytes = new Uint8Array([0, 1, 2, 250, 255]);
const item = (pk: string) => ({
  pk,
  sk: 'A',
  zero: 0,
  negative: -1.5,
  tiny: 1e-7,
  large: 2 ** 53 - 1,
  text: 'héllo "quoted" \\ \u0000 end',
  empty: '',
  yes: true,
  no: false,
  nothing: null,
  dropped: undefined,
  bin: bytes,
  strings: new Set(['a', 'b']),
  numbers: new Set([1, 2.5, -3]),
  blobs: new Set([new Uint8Array([1]), new Uint8Array([2, 3])]),
  nested: {
    list: [1, 'two', { three: [3, null, true] }],
    map: { deep: { deeper: 'x' } },
    none: [],
    empty: {},
  },
});

/** The commands of a store's life, and the refusals dynalite gives: each answer compared. */
const commands = () => [
  new PutCommand({ TableName: T, Item: item('P#1') }),
  new PutCommand({ TableName: T, Item: item('P#2'), ReturnValues: 'ALL_OLD' }),
  new PutCommand({ TableName: T, Item: { ...item('P#2'), zero: 1 }, ReturnValues: 'ALL_OLD' }),
  new GetCommand({ TableName: T, Key: { pk: 'P#1', sk: 'A' }, ConsistentRead: true }),
  new GetCommand({ TableName: T, Key: { pk: 'P#missing', sk: 'A' } }),
  new GetCommand({
    TableName: T,
    Key: { pk: 'P#1', sk: 'A' },
    ProjectionExpression: '#n.#m, bin, numbers',
    ExpressionAttributeNames: { '#n': 'nested', '#m': 'map' },
  }),
  new UpdateCommand({
    TableName: T,
    Key: { pk: 'P#1', sk: 'A' },
    UpdateExpression:
      'SET zero = zero + :one, nested.added = :added, bin = :bin ADD numbers :more REMOVE tiny',
    ConditionExpression: 'zero = :zero AND attribute_exists(nested.#m)',
    ExpressionAttributeNames: { '#m': 'map' },
    ExpressionAttributeValues: {
      ':one': 1,
      ':zero': 0,
      ':added': { at: ['x'], n: 0.1 },
      ':bin': new Uint8Array([9]),
      ':more': new Set([7]),
    },
    ReturnValues: 'ALL_NEW',
  }),
  new UpdateCommand({
    TableName: T,
    Key: { pk: 'P#1', sk: 'A' },
    UpdateExpression: 'SET #t = :t',
    ExpressionAttributeNames: { '#t': 'text' },
    ExpressionAttributeValues: { ':t': 'new' },
    ReturnValues: 'UPDATED_OLD',
    ReturnConsumedCapacity: 'TOTAL',
  }),
  new QueryCommand({
    TableName: T,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': 'P#2' },
    ProjectionExpression: 'zero, strings, nested.#l',
    ExpressionAttributeNames: { '#l': 'list' },
  }),
  new BatchWriteCommand({
    RequestItems: {
      [T]: [{ PutRequest: { Item: item('P#3') } }, { DeleteRequest: { Key: { pk: 'P#2', sk: 'A' } } }],
    },
  }),
  new BatchGetCommand({ RequestItems: { [T]: { Keys: [{ pk: 'P#3', sk: 'A' }], ConsistentRead: true } } }),
  new ScanCommand({
    TableName: T,
    FilterExpression: 'begins_with(pk, :p)',
    ExpressionAttributeValues: { ':p': 'P#' },
  }),
  new DeleteCommand({ TableName: T, Key: { pk: 'P#3', sk: 'A' }, ReturnValues: 'ALL_OLD' }),
  new ListTablesCommand({}),
  // Refusals: a failed condition, validations of expressions, keys and values, types, a missing table.
  new PutCommand({ TableName: T, Item: item('P#1'), ConditionExpression: 'attribute_not_exists(pk)' }),
  new UpdateCommand({
    TableName: T,
    Key: { pk: 'P#1', sk: 'A' },
    UpdateExpression: 'SET a = :a',
    ConditionExpression: 'zero = :old',
    ExpressionAttributeValues: { ':a': 1, ':old': 99 },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  }),
  new UpdateCommand({
    TableName: T,
    Key: { pk: 'P#1', sk: 'A' },
    UpdateExpression: 'SET a = :a',
    ExpressionAttributeValues: { ':a': 1, ':unused': 2 },
  }),
  new UpdateCommand({ TableName: T, Key: { pk: 'P#1', sk: 'A' }, UpdateExpression: 'SET a = = 1' }),
  new UpdateCommand({
    TableName: T,
    Key: { pk: 'P#1', sk: 'A' },
    UpdateExpression: 'ADD #t :one',
    ExpressionAttributeNames: { '#t': 'text' },
    ExpressionAttributeValues: { ':one': 1 },
  }),
  new GetCommand({ TableName: T, Key: { pk: 'P#1' } }),
  new GetCommand({ TableName: T, Key: { pk: 1, sk: 'A' } }),
  new GetCommand({ TableName: T, Key: { pk: '', sk: 'A' } }),
  new PutCommand({ TableName: T, Item: { pk: 'P#4', sk: 'A', big: 'x'.repeat(410_000) } }),
  new QueryCommand({
    TableName: T,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': 'P#1' },
    Limit: 'many' as unknown as number,
  }),
  new QueryCommand({
    TableName: T,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': 'P#1' },
    Limit: 0,
  }),
  new GetCommand({ TableName: 'no-such-table', Key: { pk: 'P#1', sk: 'A' } }),
  new GetCommand({ TableName: 'bad name!', Key: { pk: 'P#1', sk: 'A' } }),
];

describe('DynamoDB operations handed to dynalite in process, against JSON over loopback', () => {
  let inProcess: LocalServices;
  let loopback: LocalServices;
  beforeAll(async () => {
    [inProcess, loopback] = await Promise.all([
      startLocalServices({ ephemeral: true, names }),
      startLocalServices({ ephemeral: true, names, serveInProcess: false }),
    ]);
  });
  afterAll(() => Promise.all([inProcess?.close(), loopback?.close()]));

  it('give the same answers and the same errors, member for member', async () => {
    const direct = createWireDocumentClient(inProcess.target.dynamoEndpoint);
    const wire = createWireDocumentClient(loopback.target.dynamoEndpoint);
    const viaDirect = [];
    const viaWire = [];
    for (const command of commands()) viaDirect.push(await outcome(direct.send(command as never)));
    for (const command of commands()) viaWire.push(await outcome(wire.send(command as never)));
    for (const [i, answer] of viaDirect.entries()) expect(answer, `command ${i}`).toStrictEqual(viaWire[i]);

    // What the comparison covers: values of every type came back, and each kind of refusal.
    expect(viaDirect[3]).toMatchObject({
      answer: {
        Item: {
          tiny: 1e-7,
          bin: Buffer.from(bytes).toString('base64'),
          strings: new Set(['a', 'b']),
          numbers: new Set([1, 2.5, -3]),
          blobs: new Set(['AQ==', 'AgM=']),
          nested: { list: [1, 'two', { three: [3, null, true] }], map: { deep: { deeper: 'x' } } },
        },
      },
    });
    const errors = viaDirect.flatMap((o) =>
      'error' in (o as object) ? [(o as { error: object }).error] : [],
    );
    expect(errors.map((e) => (e as { name: string }).name)).toEqual([
      'ConditionalCheckFailedException',
      'ConditionalCheckFailedException',
      'ValidationException',
      'ValidationException',
      'ValidationException',
      'ValidationException',
      'ValidationException',
      'ValidationException',
      'ValidationException',
      'SerializationException',
      'ValidationException',
      'ResourceNotFoundException',
      'ValidationException',
    ]);
    expect(errors[2]).toMatchObject({
      message: 'Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}',
      $metadata: { httpStatusCode: 400 },
      $fault: 'client',
    });
  });

  it('store binary values as the SDK sends them (base64 on the wire)', async () => {
    const direct = createWireDocumentClient(inProcess.target.dynamoEndpoint);
    const sdk = createDocumentClient(inProcess.target);
    await direct.send(
      new PutCommand({ TableName: T, Item: { pk: 'B#1', sk: 'A', bin: bytes, set: new Set([bytes]) } }),
    );
    const { Item } = await sdk.send(
      new GetCommand({ TableName: T, Key: { pk: 'B#1', sk: 'A' }, ConsistentRead: true }),
    );
    expect(Item?.bin).toEqual(bytes);
    expect(Item?.set).toEqual(new Set([bytes]));
  });

  it('parse no JSON text of a request in process (over loopback, dynalite parses its body)', async () => {
    const marker = 'marker-7f3a';
    const parsedMarker = async (services: LocalServices, pk: string) => {
      const client = createWireDocumentClient(services.target.dynamoEndpoint);
      const parse = vi.spyOn(JSON, 'parse');
      try {
        await client.send(new PutCommand({ TableName: T, Item: { pk, sk: 'A', text: marker } }));
        return parse.mock.calls.filter(([text]) => String(text).includes(marker)).length;
      } finally {
        parse.mockRestore();
      }
    };
    expect(await parsedMarker(inProcess, 'J#1')).toBe(0);
    expect(await parsedMarker(loopback, 'J#1')).toBe(1);
  });

  it('describe the table as over loopback', async () => {
    const describe = (services: LocalServices) =>
      createWireDocumentClient(services.target.dynamoEndpoint).send(
        new DescribeTableCommand({ TableName: T }) as never,
      );
    const strip = (output: unknown) => {
      const { Table } = output as { Table: Record<string, unknown> };
      // When each was created, and what each holds, differs.
      const { CreationDateTime, BillingModeSummary, TableId, ItemCount, TableSizeBytes, ...rest } = Table;
      return {
        ...rest,
        CreationDateTime: typeof CreationDateTime,
        TableId: typeof TableId,
        BillingModeSummary: typeof BillingModeSummary,
      };
    };
    expect(strip(await describe(inProcess))).toStrictEqual(strip(await describe(loopback)));
  });
});

describe('wireForm', () => {
  it('is what a JSON round trip gives, byte arrays as base64', () => {
    const values = [
      { a: 1, b: undefined, c: null, d: [undefined, () => 1, Number.NaN, Infinity], e: { f: '' } },
      [new Date(0), new Set([1]), new Map([[1, 2]]), { toJSON: () => 'custom' }],
      Object.assign(Object.create(null), { x: 'null prototype' }),
      'text',
      0,
      -0,
      true,
      [{ nested: { B: { not: 'bytes' } } }],
    ];
    for (const value of values) expect(wireForm(value)).toStrictEqual(JSON.parse(JSON.stringify(value)));
    expect(wireForm(undefined)).toBeUndefined();
    expect(wireForm({ B: new Uint8Array([1, 2, 3]), BS: [Buffer.from('hi')] })).toStrictEqual({
      B: 'AQID',
      BS: ['aGk='],
    });
    const nested = { m: { n: [1] } };
    const copy = wireForm(nested) as typeof nested;
    expect(copy.m).not.toBe(nested.m);
  });
});
