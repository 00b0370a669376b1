/**
 * IAM for the cloud suite, as far as the stack's policies use it: which action and resources an AWS
 * SDK call needs (`requestsOf`), and whether a role's policy statements allow it (`evaluate`). moto
 * enforces no IAM on the calls the functions make, so the Lambda bridge checks each call the bundles
 * make against the calling function's role as synthesized, and the suite checks the CLI's calls
 * against the operator policy the same way. Pure: no I/O.
 *
 * Covered: Allow/Deny statements, Action/NotAction and Resource/NotResource with `*` and `?`
 * wildcards, and Condition operators StringEquals/StringLike (with ForAllValues:/ForAnyValue:) on the
 * keys a call carries here (`dynamodb:LeadingKeys`, `s3:prefix`). Not covered: anything else, which
 * denies (fail closed), so a policy that starts using it fails the suite instead of passing unchecked.
 */

import { parseStateMachineArn } from '../../functions/aws/state-machine-arns.ts';

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

/** One authorisation IAM makes for a call: an action on each resource, with the call's condition keys. */
export interface AwsRequest {
  action: string;
  /** Empty: the action's resource cannot be known from the call (a task token); the action alone is checked. */
  resources: string[];
  context: Record<string, string[]>;
}

export interface Where {
  account: string;
  region: string;
  partition?: string;
}

const list = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** IAM's wildcard match: `*` any run of characters (`/` included), `?` one character. */
export function wildcardMatch(pattern: string, value: string, caseInsensitive = false): boolean {
  const source = pattern
    .split('')
    .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, caseInsensitive ? 'is' : 's').test(value);
}

function conditionHolds(operator: string, key: string, wanted: string[], request: AwsRequest): boolean {
  const [qualifier, base] = operator.includes(':') ? operator.split(':', 2) : [undefined, operator];
  const compare =
    base === 'StringEquals'
      ? (a: string, b: string) => a === b
      : base === 'StringLike'
        ? (pattern: string, value: string) => wildcardMatch(pattern, value)
        : undefined;
  if (!compare) return false; // an operator this checker does not know: fail closed
  const values = request.context[key];
  const matches = (value: string) => wanted.some((pattern) => compare(pattern, value));
  if (qualifier === 'ForAllValues') return (values ?? []).every(matches);
  if (qualifier === 'ForAnyValue') return (values ?? []).some(matches);
  if (qualifier !== undefined) return false;
  // A single-valued operator on a key the request lacks does not match.
  return values !== undefined && values.length > 0 && values.every(matches);
}

function statementApplies(statement: PolicyStatement, request: AwsRequest, resource: string | undefined) {
  const actionMatches = (patterns: string[]) =>
    patterns.some((pattern) => wildcardMatch(pattern, request.action, true));
  if (statement.Action !== undefined && !actionMatches(list(statement.Action))) return false;
  if (statement.NotAction !== undefined && actionMatches(list(statement.NotAction))) return false;
  if (resource !== undefined) {
    const resourceMatches = (patterns: string[]) =>
      patterns.some((pattern) => wildcardMatch(pattern, resource));
    if (statement.Resource !== undefined && !resourceMatches(list(statement.Resource))) return false;
    if (statement.NotResource !== undefined && resourceMatches(list(statement.NotResource))) return false;
  }
  for (const [operator, keys] of Object.entries(statement.Condition ?? {})) {
    for (const [key, wanted] of Object.entries(keys)) {
      if (!conditionHolds(operator, key, list(wanted), request)) return false;
    }
  }
  return true;
}

export interface Decision {
  allowed: boolean;
  /** The Allow statements (by Sid, else `#<index>`) the request used, one per resource. */
  by: string[];
}

/** Whether the statements allow the request on every one of its resources (an explicit Deny wins). */
export function evaluate(statements: readonly PolicyStatement[], request: AwsRequest): Decision {
  const name = (statement: PolicyStatement) => statement.Sid ?? `#${statements.indexOf(statement)}`;
  const by: string[] = [];
  const resources: (string | undefined)[] = request.resources.length > 0 ? request.resources : [undefined];
  for (const resource of resources) {
    const applying = statements.filter((statement) => statementApplies(statement, request, resource));
    if (applying.some((statement) => statement.Effect === 'Deny')) return { allowed: false, by: [] };
    const allow = applying.find((statement) => statement.Effect === 'Allow');
    if (!allow) return { allowed: false, by: [] };
    by.push(name(allow));
  }
  return { allowed: true, by };
}

/** `{S: "x"}` (the low-level client) or `"x"` (lib-dynamodb): the string either way. */
function attributeString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { S?: unknown }).S === 'string') {
    return (value as { S: string }).S;
  }
  return undefined;
}

/** The partition keys (`pk`) an item, key or query names: IAM's `dynamodb:LeadingKeys`. */
function leadingKeys(input: Record<string, unknown>): string[] {
  const keys: string[] = [];
  const add = (record: unknown) => {
    const pk = attributeString((record as Record<string, unknown> | undefined)?.pk);
    if (pk !== undefined) keys.push(pk);
  };
  add(input.Key);
  add(input.Item);
  const condition = typeof input.KeyConditionExpression === 'string' ? input.KeyConditionExpression : '';
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  for (const [, name, placeholder] of condition.matchAll(/(#?\w+)\s*=\s*(:\w+)/g)) {
    if ((names[name!] ?? name) === 'pk') {
      const value = attributeString(values[placeholder!]);
      if (value !== undefined) keys.push(value);
    }
  }
  return keys;
}

const arn = (where: Where, service: string, regional: boolean, withAccount: boolean, resource: string) =>
  `arn:${where.partition ?? 'aws'}:${service}:${regional ? where.region : ''}:${withAccount ? where.account : ''}:${resource}`;

function dynamoRequests(operation: string, input: Record<string, unknown>, where: Where): AwsRequest[] {
  const table = (name: string, index?: unknown) =>
    name.startsWith('arn:')
      ? name
      : arn(
          where,
          'dynamodb',
          true,
          true,
          `table/${name}${typeof index === 'string' ? `/index/${index}` : ''}`,
        );
  const action = `dynamodb:${operation}`;
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    const requestItems = (input.RequestItems ?? {}) as Record<string, unknown>;
    return Object.entries(requestItems).map(([name, items]) => {
      const records =
        operation === 'BatchGetItem'
          ? ((items as { Keys?: unknown[] }).Keys ?? [])
          : (items as { PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }[]).map(
              (request) => request.PutRequest?.Item ?? request.DeleteRequest?.Key,
            );
      const keys = records.flatMap((record) => leadingKeys({ Key: record }));
      return { action, resources: [table(name)], context: { 'dynamodb:LeadingKeys': keys } };
    });
  }
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    // IAM authorises each item of a transaction as its own action.
    const items = (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[];
    return items.flatMap((item) =>
      Object.entries(item).map(([kind, inner]) => {
        const itemAction = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', Get: 'GetItem' }[
          kind
        ];
        return {
          action: `dynamodb:${itemAction ?? 'ConditionCheckItem'}`,
          resources: [table(String(inner.TableName))],
          context: { 'dynamodb:LeadingKeys': leadingKeys(inner) },
        };
      }),
    );
  }
  return [
    {
      action,
      resources: [table(String(input.TableName), input.IndexName)],
      context: { 'dynamodb:LeadingKeys': leadingKeys(input) },
    },
  ];
}

function s3Requests(operation: string, input: Record<string, unknown>, where: Where): AwsRequest[] {
  const bucket = arn(where, 's3', false, false, String(input.Bucket));
  const object = `${bucket}/${String(input.Key)}`;
  const objectAction: Record<string, string> = {
    GetObject: 's3:GetObject',
    HeadObject: 's3:GetObject',
    PutObject: 's3:PutObject',
    CreateMultipartUpload: 's3:PutObject',
    UploadPart: 's3:PutObject',
    CompleteMultipartUpload: 's3:PutObject',
    AbortMultipartUpload: 's3:AbortMultipartUpload',
    DeleteObject: 's3:DeleteObject',
  };
  if (objectAction[operation])
    return [{ action: objectAction[operation]!, resources: [object], context: {} }];
  if (operation === 'ListObjectsV2' || operation === 'ListObjects' || operation === 'HeadBucket') {
    const prefix: Record<string, string[]> =
      typeof input.Prefix === 'string' ? { 's3:prefix': [input.Prefix] } : {};
    return [{ action: 's3:ListBucket', resources: [bucket], context: prefix }];
  }
  return [{ action: `s3:${operation}`, resources: [bucket], context: {} }];
}

function sfnRequests(operation: string, input: Record<string, unknown>, where: Where): AwsRequest[] {
  const action = `states:${operation}`;
  if (typeof input.stateMachineArn === 'string') {
    // A call on a version or alias is authorised against the state machine's own ARN, the version or
    // alias name in the condition key states:StateMachineQualifier (Step Functions' "Authorization
    // for versions and aliases").
    const parsed = parseStateMachineArn(input.stateMachineArn);
    if (parsed?.qualifier !== undefined) {
      return [
        {
          action,
          resources: [parsed.unqualified],
          context: { 'states:StateMachineQualifier': [parsed.qualifier] },
        },
      ];
    }
    return [{ action, resources: [input.stateMachineArn], context: {} }];
  }
  if (typeof input.executionArn === 'string')
    return [{ action, resources: [input.executionArn], context: {} }];
  if (operation === 'ListStateMachines') {
    return [{ action, resources: [arn(where, 'states', true, true, 'stateMachine:*')], context: {} }];
  }
  // SendTaskSuccess/Failure/Heartbeat: the token names its state machine only to Step Functions.
  return [{ action, resources: [], context: {} }];
}

function eventsRequests(operation: string, input: Record<string, unknown>, where: Where): AwsRequest[] {
  if (operation !== 'PutEvents') return [{ action: `events:${operation}`, resources: ['*'], context: {} }];
  const entries = (input.Entries ?? []) as { EventBusName?: string }[];
  const buses = [...new Set(entries.map((entry) => entry.EventBusName ?? 'default'))];
  return [
    {
      action: 'events:PutEvents',
      resources: buses.map((bus) =>
        bus.startsWith('arn:') ? bus : arn(where, 'events', true, true, `event-bus/${bus}`),
      ),
      context: {},
    },
  ];
}

/**
 * The authorisations an SDK call needs: `serviceId` is the client's (`config.serviceId`), `command`
 * the command's class name (a lib-dynamodb command as its low-level one, e.g. PutItemCommand).
 */
export function requestsOf(
  serviceId: string,
  command: string,
  input: Record<string, unknown>,
  where: Where,
): AwsRequest[] {
  const operation = command.replace(/Command$/, '');
  switch (serviceId) {
    case 'DynamoDB':
      return dynamoRequests(operation, input, where);
    case 'S3':
      return s3Requests(operation, input, where);
    case 'SFN':
      return sfnRequests(operation, input, where);
    case 'EventBridge':
      return eventsRequests(operation, input, where);
    case 'Lambda': {
      const name = String(input.FunctionName);
      const resource = name.startsWith('arn:') ? name : arn(where, 'lambda', true, true, `function:${name}`);
      return [
        {
          action: `lambda:${operation === 'Invoke' ? 'InvokeFunction' : operation}`,
          resources: [resource],
          context: {},
        },
      ];
    }
    case 'Secrets Manager': {
      const id = String(input.SecretId);
      // A secret's ARN ends in its name and six random characters.
      const resource = id.startsWith('arn:')
        ? id
        : arn(where, 'secretsmanager', true, true, `secret:${id}-AbCdEf`);
      return [{ action: `secretsmanager:${operation}`, resources: [resource], context: {} }];
    }
    case 'SSM': {
      const name = String(input.Name).replace(/^\//, '');
      return [
        {
          action: `ssm:${operation}`,
          resources: [arn(where, 'ssm', true, true, `parameter/${name}`)],
          context: {},
        },
      ];
    }
    case 'Bedrock Runtime': {
      const model = String(input.modelId);
      const resource = model.startsWith('arn:')
        ? model
        : /^(us|eu|apac|global)\./.test(model)
          ? arn(where, 'bedrock', true, true, `inference-profile/${model}`)
          : arn(where, 'bedrock', true, false, `foundation-model/${model}`);
      const action = operation.endsWith('Stream')
        ? 'bedrock:InvokeModelWithResponseStream'
        : 'bedrock:InvokeModel';
      return [{ action, resources: [resource], context: {} }];
    }
    case 'CloudFormation': {
      const name = String(input.StackName);
      const resource = name.startsWith('arn:')
        ? name
        : arn(where, 'cloudformation', true, true, `stack/${name}/*`);
      return [{ action: `cloudformation:${operation}`, resources: [resource], context: {} }];
    }
    default:
      return [
        {
          action: `${serviceId.toLowerCase().replace(/\s+/g, '')}:${operation}`,
          resources: ['*'],
          context: {},
        },
      ];
  }
}
