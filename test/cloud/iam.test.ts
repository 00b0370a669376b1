/**
 * The IAM checker the cloud suite judges every SDK call with (iam.ts): what an SDK call needs, and
 * whether statements as CDK synthesizes them allow it.
 */
import { describe, expect, it } from 'vitest';
import { evaluate, type PolicyStatement, requestsOf, wildcardMatch } from './iam.ts';

const where = { account: '123456789012', region: 'us-east-1' };
const TABLE = 'arn:aws:dynamodb:us-east-1:123456789012:table/T';
const BUCKET = 'arn:aws:s3:::b';

const threadTable: PolicyStatement = {
  Sid: 'ThreadTable',
  Effect: 'Allow',
  Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query'],
  Resource: TABLE,
};
const values: PolicyStatement = {
  Sid: 'LargeValues',
  Effect: 'Allow',
  Action: ['s3:GetObject', 's3:PutObject'],
  Resource: `${BUCKET}/values/*`,
};

describe('requestsOf', () => {
  it('names the action and resource of a DynamoDB call, lib-dynamodb input or low-level, index included', () => {
    expect(
      requestsOf('DynamoDB', 'PutItemCommand', { TableName: 'T', Item: { pk: 'THREAD#1' } }, where),
    ).toEqual([
      { action: 'dynamodb:PutItem', resources: [TABLE], context: { 'dynamodb:LeadingKeys': ['THREAD#1'] } },
    ]);
    expect(
      requestsOf(
        'DynamoDB',
        'QueryCommand',
        {
          TableName: 'T',
          IndexName: 'gsi1',
          KeyConditionExpression: '#p = :p',
          ExpressionAttributeNames: { '#p': 'pk' },
          ExpressionAttributeValues: { ':p': { S: 'EXEC#1' } },
        },
        where,
      ),
    ).toEqual([
      {
        action: 'dynamodb:Query',
        resources: [`${TABLE}/index/gsi1`],
        context: { 'dynamodb:LeadingKeys': ['EXEC#1'] },
      },
    ]);
  });

  it('names a batch write by its tables, with every item’s partition key', () => {
    const input = {
      RequestItems: { T: [{ PutRequest: { Item: { pk: 'a' } } }, { PutRequest: { Item: { pk: 'b' } } }] },
    };
    expect(requestsOf('DynamoDB', 'BatchWriteItemCommand', input, where)).toEqual([
      {
        action: 'dynamodb:BatchWriteItem',
        resources: [TABLE],
        context: { 'dynamodb:LeadingKeys': ['a', 'b'] },
      },
    ]);
  });

  it('names S3 object calls by object ARN and listings by bucket, HeadObject as GetObject', () => {
    expect(requestsOf('S3', 'HeadObjectCommand', { Bucket: 'b', Key: 'values/x' }, where)).toEqual([
      { action: 's3:GetObject', resources: [`${BUCKET}/values/x`], context: {} },
    ]);
    expect(requestsOf('S3', 'ListObjectsV2Command', { Bucket: 'b', Prefix: 'values/' }, where)).toEqual([
      { action: 's3:ListBucket', resources: [BUCKET], context: { 's3:prefix': ['values/'] } },
    ]);
  });

  it('names PutEvents by its buses and a task-token answer by its action alone', () => {
    expect(
      requestsOf('EventBridge', 'PutEventsCommand', { Entries: [{ EventBusName: 'bus' }, {}] }, where),
    ).toEqual([
      {
        action: 'events:PutEvents',
        resources: [
          'arn:aws:events:us-east-1:123456789012:event-bus/bus',
          'arn:aws:events:us-east-1:123456789012:event-bus/default',
        ],
        context: {},
      },
    ]);
    expect(requestsOf('SFN', 'SendTaskSuccessCommand', { taskToken: 't' }, where)).toEqual([
      { action: 'states:SendTaskSuccess', resources: [], context: {} },
    ]);
  });

  it('authorises a start on an alias or version against the unqualified state machine, the qualifier as a condition key', () => {
    const machine = 'arn:aws:states:us-east-1:123456789012:stateMachine:stepthread-approval';
    const start = (stateMachineArn: string) =>
      requestsOf('SFN', 'StartExecutionCommand', { stateMachineArn, input: '{}' }, where);
    expect(start(`${machine}:live`)).toEqual([
      {
        action: 'states:StartExecution',
        resources: [machine],
        context: { 'states:StateMachineQualifier': ['live'] },
      },
    ]);
    expect(start(`${machine}:3`)).toEqual([
      {
        action: 'states:StartExecution',
        resources: [machine],
        context: { 'states:StateMachineQualifier': ['3'] },
      },
    ]);
    expect(start(machine)).toEqual([{ action: 'states:StartExecution', resources: [machine], context: {} }]);
    // So a grant on the state machine allows its alias, and a grant naming only the alias does not.
    const grant = (Resource: string): PolicyStatement => ({
      Sid: 'Start',
      Effect: 'Allow',
      Action: 'states:StartExecution',
      Resource,
    });
    expect(evaluate([grant(machine)], start(`${machine}:live`)[0]!).allowed).toBe(true);
    expect(evaluate([grant(`${machine}:live`)], start(`${machine}:live`)[0]!).allowed).toBe(false);
  });
});

describe('evaluate', () => {
  const call = (command: string, input: Record<string, unknown>) =>
    requestsOf('DynamoDB', command, input, where)[0]!;

  it('allows what a statement grants on its resource, naming the statement', () => {
    expect(evaluate([threadTable], call('PutItemCommand', { TableName: 'T', Item: { pk: 'x' } }))).toEqual({
      allowed: true,
      by: ['ThreadTable'],
    });
  });

  it('refuses an action no statement grants (the JOIN’s BatchWriteItem before it was granted)', () => {
    const batch = call('BatchWriteItemCommand', {
      RequestItems: { T: [{ PutRequest: { Item: { pk: 'x' } } }] },
    });
    expect(evaluate([threadTable], batch).allowed).toBe(false);
    const granted = {
      ...threadTable,
      Action: [...(threadTable.Action as string[]), 'dynamodb:BatchWriteItem'],
    };
    expect(evaluate([granted], batch).allowed).toBe(true);
  });

  it('refuses another table, the table’s index, and an object outside the granted prefix', () => {
    expect(
      evaluate([threadTable], call('GetItemCommand', { TableName: 'Other', Key: { pk: 'x' } })).allowed,
    ).toBe(false);
    expect(evaluate([threadTable], call('QueryCommand', { TableName: 'T', IndexName: 'gsi1' })).allowed).toBe(
      false,
    );
    const object = (key: string) =>
      requestsOf('S3', 'PutObjectCommand', { Bucket: 'b', Key: key }, where)[0]!;
    expect(evaluate([values], object('values/abc')).allowed).toBe(true);
    expect(evaluate([values], object('segments/abc')).allowed).toBe(false);
  });

  it('lets an explicit Deny win and checks key-prefix conditions (dynamodb:LeadingKeys)', () => {
    const deny: PolicyStatement = { Effect: 'Deny', Action: 'dynamodb:*', Resource: '*' };
    const put = call('PutItemCommand', { TableName: 'T', Item: { pk: 'THREAD#1' } });
    expect(evaluate([threadTable, deny], put).allowed).toBe(false);
    const threadsOnly: PolicyStatement = {
      ...threadTable,
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['THREAD#*'] } },
    };
    expect(evaluate([threadsOnly], put).allowed).toBe(true);
    expect(
      evaluate([threadsOnly], call('PutItemCommand', { TableName: 'T', Item: { pk: 'EXEC#1' } })).allowed,
    ).toBe(false);
    // An operator this checker does not know refuses (fail closed).
    const unknown: PolicyStatement = {
      ...threadTable,
      Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } },
    };
    expect(evaluate([unknown], put).allowed).toBe(false);
  });

  it('matches IAM wildcards: * across slashes, ? one character, actions without case', () => {
    expect(wildcardMatch('arn:aws:s3:::b/values/*', 'arn:aws:s3:::b/values/a/b')).toBe(true);
    expect(wildcardMatch('secret:key-??????', 'secret:key-AbCdEf')).toBe(true);
    expect(wildcardMatch('secret:key-??????', 'secret:key-AbCdE')).toBe(false);
    expect(wildcardMatch('dynamodb:putitem', 'dynamodb:PutItem', true)).toBe(true);
  });
});
