/**
 * dynalite's type checks compiled per request shape (functions/local/dynalite-types.ts) give what
 * dynalite's own `checkTypes` gives, member for member and in the same order, for the requests the
 * stores send and for generated ones with every kind of value dynalite converts or refuses; and a
 * refusal is dynalite's own.
 */
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { wireForm } from '../../../functions/aws/wire-http.ts';
import { checkRequestTypes } from '../../../functions/local/dynalite-types.ts';

const require = createRequire(import.meta.url);
const validations = require('dynalite/validations/index.js') as {
  checkTypes(data: Record<string, unknown>, types: object): Record<string, unknown>;
};
const { checkTypes } = validations;
const OPERATIONS = [
  'getItem',
  'putItem',
  'updateItem',
  'deleteItem',
  'query',
  'scan',
  'batchGetItem',
  'batchWriteItem',
] as const;
const types = Object.fromEntries(
  OPERATIONS.map((name) => [name, (require(`dynalite/validations/${name}.js`) as { types: object }).types]),
) as Record<(typeof OPERATIONS)[number], object>;

/** What a check gives: its result as JSON (members in order), or its error's status, body and message. */
function outcome(check: () => Record<string, unknown>): unknown {
  try {
    return { result: JSON.stringify(check()) };
  } catch (error) {
    const { statusCode, body, message } = error as { statusCode?: number; body?: unknown; message: string };
    return { statusCode, body, message };
  }
}

/** Ours on the request as marshalled, dynalite's on its JSON form; ours leaves the request as it was. */
function expectSame(request: Record<string, unknown>, operation: (typeof OPERATIONS)[number]): void {
  const before = JSON.stringify(wireForm(request));
  const ours = outcome(() => checkRequestTypes(request, types[operation]));
  expect(JSON.stringify(wireForm(request))).toBe(before);
  const json = wireForm(request) as Record<string, unknown>;
  expect(outcome(() => validations.checkTypes(json, types[operation]))).toEqual(ours);
}

const S = (s: string) => ({ S: s });
const N = (n: string) => ({ N: n });
const head = {
  pk: S('THREAD#t1'),
  sk: S('HEAD'),
  version: N('7'),
  meta: { M: { tags: { SS: ['a', 'b'] }, nums: { NS: ['1', '2.5'] }, bins: { BS: ['AAE=', 'Ag=='] } } },
  list: { L: [S('x'), { BOOL: true }, { NULL: true }, { M: { deep: { L: [N('1')] } } }] },
  bin: { B: 'AAECAw==' },
};

describe('compiled type checks', () => {
  it('give what dynalite gives for the requests the stores send, without its checks', () => {
    const dynalitesChecks = vi.spyOn(validations, 'checkTypes');
    expectSame({ TableName: 't', Item: head, ConditionExpression: 'attribute_not_exists(pk)' }, 'putItem');
    expectSame({ TableName: 't', Key: { pk: S('a'), sk: S('b') }, ConsistentRead: true }, 'getItem');
    expectSame(
      {
        TableName: 't',
        Key: { pk: S('a'), sk: S('HEAD') },
        UpdateExpression: 'SET #n0 = :v0',
        ConditionExpression: '#n1 = :v1',
        ExpressionAttributeNames: { '#n0': 'step', '#n1': 'version' },
        ExpressionAttributeValues: { ':v0': { M: head }, ':v1': N('6') },
        ReturnValues: 'ALL_NEW',
      },
      'updateItem',
    );
    expectSame(
      {
        TableName: 't',
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)',
        ExpressionAttributeValues: { ':p': S('a'), ':s': S('STEP#') },
        Limit: 25,
        ScanIndexForward: false,
        ExclusiveStartKey: { pk: S('a'), sk: S('STEP#1') },
      },
      'query',
    );
    expectSame(
      { RequestItems: { t: { Keys: [{ pk: S('a'), sk: S('HEAD') }], ConsistentRead: true } } },
      'batchGetItem',
    );
    expectSame(
      {
        RequestItems: {
          t: [{ PutRequest: { Item: head } }, { DeleteRequest: { Key: { pk: S('a'), sk: S('b') } } }],
        },
      },
      'batchWriteItem',
    );
    expectSame({ TableName: 't', Key: { pk: S('a'), sk: S('b') }, ReturnValues: 'ALL_OLD' }, 'deleteItem');
    expectSame({ TableName: 't', Segment: 0, TotalSegments: 2, Limit: 1.7 }, 'scan');
    // As the client marshals: byte arrays, undefined members and elements, -0.
    expectSame(
      {
        TableName: 't',
        Item: {
          pk: S('a'),
          bin: { B: new Uint8Array([0, 1, 250]) },
          bins: { BS: [new Uint8Array([1]), new Uint8Array(0)] },
          gone: undefined,
          list: { L: [S('x'), undefined, { M: { k: undefined, n: null } }] },
        },
        ReturnValues: undefined,
      },
      'putItem',
    );
    expectSame({ TableName: 't', Limit: -0, Segment: -0 }, 'scan');
    // Called once per request, by expectSame itself: the compiled checks took every one.
    expect(dynalitesChecks).toHaveBeenCalledTimes(10);
    dynalitesChecks.mockRestore();
  });

  it('leave conversions and refusals to dynalite, word for word', () => {
    const cases: [Record<string, unknown>, (typeof OPERATIONS)[number]][] = [
      [{ TableName: 't', Key: { pk: S('a') }, ConsistentRead: 'yes' }, 'getItem'],
      [{ TableName: 't', Key: { pk: S('a') }, ConsistentRead: 'perhaps' }, 'getItem'],
      [{ TableName: 't', Key: { pk: S('a') }, ConsistentRead: 1 }, 'getItem'],
      [{ TableName: 5, Key: { pk: S('a') } }, 'getItem'],
      [{ TableName: 't', Item: { pk: { S: 5 } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { B: 'abc' } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { B: 'ab=c' } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { B: 7 } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { L: { a: 1 } } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { M: [1] } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: [S('a')] } }, 'putItem'],
      [{ TableName: 't', Item: { pk: 'a' } }, 'putItem'],
      [{ TableName: 't', Item: [1] }, 'putItem'],
      [{ TableName: 't', Item: { pk: { SS: ['a', null] }, sk: null } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { M: { a: null, b: S('x') } } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: S('a'), extra: { S: 'x', Q: 1 } }, Unknown: 1 }, 'putItem'],
      [{ TableName: 't', Item: { pk: { BOOL: 'false', NULL: 'TRUE' } } }, 'putItem'],
      [{ TableName: 't', Limit: 'ten' }, 'query'],
      [{ TableName: 't', Limit: true }, 'query'],
      [{ TableName: 't', Limit: 2.9, ExclusiveStartKey: { pk: { N: 1 } } }, 'query'],
      [{ RequestItems: { t: [{ PutRequest: 'x' }] } }, 'batchWriteItem'],
      [{ RequestItems: { t: { Keys: 'x' } } }, 'batchGetItem'],
      [{ RequestItems: [] }, 'batchGetItem'],
      // Values JSON renders its own way: non-finite numbers, a Date, a Set, a class instance.
      [{ TableName: 't', Limit: Number.NaN }, 'query'],
      [{ TableName: 't', Limit: Number.POSITIVE_INFINITY }, 'query'],
      [{ TableName: 't', Item: { pk: { S: new Date(0) } } }, 'putItem'],
      [{ TableName: 't', Item: { pk: { SS: new Set(['a']) } } }, 'putItem'],
      [
        {
          TableName: 't',
          Item: {
            pk: new (class Value {
              S = 'a';
            })(),
          },
        },
        'putItem',
      ],
      [{ TableName: 't', Item: { pk: { S: 'a', toJSON: () => ({ N: '1' }) } } }, 'putItem'],
    ];
    for (const [request, operation] of cases) expectSame(request, operation);
  });

  it('give what dynalite gives for generated attribute values of every kind', () => {
    let seed = 29;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
    const scalars: unknown[] = [
      's',
      '',
      '1.5',
      'AAE=',
      'AA=',
      'true',
      'no',
      0,
      2.5,
      true,
      false,
      null,
      [],
      {},
    ];
    const value = (depth: number): unknown => {
      const roll = random();
      if (roll < 0.1) return pick(scalars);
      const type = pick(['S', 'N', 'B', 'BOOL', 'NULL', 'SS', 'NS', 'BS', 'L', 'M', 'S', 'N', 'M', 'L']);
      const many = <T>(make: () => T): T[] => Array.from({ length: Math.floor(random() * 4) }, make);
      switch (type) {
        case 'S':
        case 'N':
          return { [type]: random() < 0.9 ? String(Math.floor(random() * 100)) : pick(scalars) };
        case 'B':
          return { B: random() < 0.8 ? 'AAECAw==' : pick(scalars) };
        case 'BOOL':
        case 'NULL':
          return { [type]: random() < 0.8 ? random() < 0.5 : pick(scalars) };
        case 'SS':
        case 'NS':
          return { [type]: random() < 0.9 ? many(() => String(Math.floor(random() * 9))) : pick(scalars) };
        case 'BS':
          return { BS: random() < 0.9 ? many(() => pick(['AAE=', 'Ag==', 'AA=', null])) : pick(scalars) };
        case 'L':
          return { L: depth > 3 ? [] : many(() => value(depth + 1)) };
        default:
          return {
            M:
              depth > 3
                ? {}
                : Object.fromEntries(
                    many((): [string, unknown] => [`k${Math.floor(random() * 5)}`, value(depth + 1)]),
                  ),
          };
      }
    };
    let converted = 0;
    for (let i = 0; i < 2_000; i++) {
      const item = Object.fromEntries(
        Array.from({ length: 1 + Math.floor(random() * 5) }, (_, j) => [`a${j}`, value(0)]),
      );
      const request = { TableName: 't', Item: item, ReturnValues: pick(['ALL_OLD', 'NONE', 1, undefined]) };
      expectSame(request, 'putItem');
      const refused = outcome(() => checkTypes(wireForm(request) as never, types.putItem));
      if (JSON.stringify(refused).includes('message')) converted++;
    }
    // The generator reaches refusals as well as accepted requests.
    expect(converted).toBeGreaterThan(100);
    expect(converted).toBeLessThan(1_900);
  });
});
