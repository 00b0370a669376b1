import { readFileSync } from 'node:fs';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { BucketDeployment } from 'aws-cdk-lib/aws-s3-deployment';
import { beforeAll, describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../engine/asl/index.ts';
import { NODE_TYPES, type NodeType } from '../../engine/model/schema.ts';
import { TTL_ATTRIBUTE, tableDefinition } from '../../functions/stores/table.ts';
import { HANDLER_SPECS } from '../../infra/handler-registry.ts';
import type { StepthreadStack } from '../../infra/stack.ts';
import { buildTestStack, testWorkflows } from './helpers.ts';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

let stack: StepthreadStack;
let template: Template;
let resources: Record<string, Resource>;

/** Logical id of a construct's CloudFormation resource. */
function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as never);
}

function functionLogicalId(type: NodeType): string {
  return logicalId(stack.runtime.functionFor(type));
}

/** Statements of the inline policy attached to a role. */
function roleStatements(roleLogicalId: string): Json[] {
  return Object.values(resources)
    .filter(
      (r) =>
        r.Type === 'AWS::IAM::Policy' &&
        (r.Properties.Roles as Json[]).some((ref) => ref.Ref === roleLogicalId),
    )
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Json[] }).Statement);
}

function functionStatements(type: NodeType): Json[] {
  const fn = resources[functionLogicalId(type)]!;
  const roleRef = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return roleStatements(roleRef);
}

function actionsOf(statements: Json[]): string[] {
  return statements.flatMap((s) => (Array.isArray(s.Action) ? (s.Action as string[]) : [s.Action as string]));
}

/** A bucket whose policy refuses plain HTTP and TLS older than 1.2. */
function expectTlsOnly(bucket: { node: { defaultChild?: unknown } }): void {
  template.hasResourceProperties('AWS::S3::BucketPolicy', {
    Bucket: { Ref: logicalId(bucket) },
    PolicyDocument: {
      Statement: Match.arrayWith([
        Match.objectLike({
          Effect: 'Deny',
          Action: 's3:*',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
        Match.objectLike({
          Effect: 'Deny',
          Action: 's3:*',
          Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } },
        }),
      ]),
    },
  });
}

beforeAll(() => {
  // A concrete account and region (as `cdk synth` with credentials sees them): acknowledgements must
  // match findings whether ARNs hold literal values or tokens (the config tests use tokens).
  ({ stack } = buildTestStack({ env: { account: '123456789012', region: 'eu-west-1' } }));
  // Synthesising runs cdk-nag: any unacknowledged AwsSolutions finding throws here.
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources as Record<string, Resource>;
}, 60_000); // a synth with cdk-nag: seconds, more on a busy machine

describe('shared runtime', () => {
  it('creates one function per node type, ESM-bundled for the newest Node.js runtime on arm64', () => {
    // And CDK's BucketDeployment handler, which stores the node tables at deploy time (Python).
    template.resourceCountIs('AWS::Lambda::Function', NODE_TYPES.length + 1);
    for (const type of NODE_TYPES) {
      const fn = resources[functionLogicalId(type)]!;
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        MemorySize: HANDLER_SPECS[type].memoryMb,
        Timeout: HANDLER_SPECS[type].timeoutSeconds,
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: expect.any(String) } },
        Environment: {
          Variables: {
            STEPTHREAD_TARGET: 'aws',
            STEPTHREAD_TABLE: { Ref: logicalId(stack.runtime.table) },
            STEPTHREAD_BUCKET: { Ref: logicalId(stack.runtime.bucket) },
            STEPTHREAD_EVENT_BUS: { Ref: logicalId(stack.runtime.eventBus) },
          },
        },
      });
    }
  });

  it('gives each of the 14 functions a log group of its own, kept 30 days, that only its role may write', () => {
    expect(NODE_TYPES).toHaveLength(14);
    const groups = NODE_TYPES.map(
      (type) =>
        (resources[functionLogicalId(type)]!.Properties.LoggingConfig as { LogGroup: { Ref: string } })
          .LogGroup.Ref,
    );
    expect(new Set(groups).size).toBe(NODE_TYPES.length);
    NODE_TYPES.forEach((type, i) => {
      expect(resources[groups[i]!]).toMatchObject({
        Type: 'AWS::Logs::LogGroup',
        Properties: { RetentionInDays: 30 },
      });
      const logs = functionStatements(type).filter((s) => actionsOf([s]).some((a) => a.startsWith('logs:')));
      expect(logs, type).toEqual([
        {
          Sid: 'WriteOwnLogs',
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [groups[i], 'Arn'] },
        },
      ]);
      // X-Ray: trace submission only, which has no resource-level permissions.
      const xray = functionStatements(type).filter((s) => actionsOf([s]).some((a) => a.startsWith('xray:')));
      expect(xray, type).toEqual([
        {
          Effect: 'Allow',
          Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
          Resource: '*',
        },
      ]);
    });
  });

  it('mirrors the table definition: keys, GSI, on-demand, PITR, encryption and TTL', () => {
    const definition = tableDefinition('x');
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: definition.KeySchema,
      AttributeDefinitions: Match.arrayWith(definition.AttributeDefinitions!),
      GlobalSecondaryIndexes: definition.GlobalSecondaryIndexes,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      DeletionProtectionEnabled: true,
    });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });

  it('protects the conversation bucket and never expires its objects', () => {
    const bucket = resources[logicalId(stack.runtime.bucket)]!.Properties;
    expect(bucket).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LoggingConfiguration: { DestinationBucketName: { Ref: logicalId(stack.runtime.accessLogsBucket) } },
    });
    // The one lifecycle rule cleans up unfinished multipart uploads; nothing stored ever expires.
    expect((bucket.LifecycleConfiguration as { Rules: Json[] }).Rules).toEqual([
      {
        Id: 'abort-incomplete-uploads',
        Status: 'Enabled',
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
      },
    ]);
    expectTlsOnly(stack.runtime.bucket);
    expect(resources[logicalId(stack.runtime.bucket)]).toMatchObject({ DeletionPolicy: 'Retain' });
  });

  it('keeps the access logs protected, for 365 days', () => {
    const logs = resources[logicalId(stack.runtime.accessLogsBucket)]!;
    expect(logs).toMatchObject({
      DeletionPolicy: 'Retain',
      Properties: {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        LifecycleConfiguration: { Rules: [{ ExpirationInDays: 365, Status: 'Enabled' }] },
      },
    });
    expectTlsOnly(stack.runtime.accessLogsBucket);
  });
});

describe('node tables before definitions', () => {
  it('makes every state machine, its version and its live alias wait for the node tables to be stored', () => {
    const stored = Object.entries(resources).filter(([, r]) => r.Type === 'Custom::CDKBucketDeployment');
    expect(stored).toHaveLength(1);
    const [deployment] = stored[0]!;
    const definitions = Object.entries(
      template.toJSON().Resources as Record<string, Resource & { DependsOn?: string[] }>,
    ).filter(([, r]) =>
      [
        'AWS::StepFunctions::StateMachine',
        'AWS::StepFunctions::StateMachineVersion',
        'AWS::StepFunctions::StateMachineAlias',
      ].includes(r.Type),
    );
    expect(definitions.length).toBeGreaterThan(3 * 5);
    // A run started mid-deploy on a new definition would otherwise find no table: NODE_TABLE_NOT_FOUND.
    for (const [id, definition] of definitions) expect(definition.DependsOn ?? [], id).toContain(deployment);
  });
});

describe('least privilege', () => {
  it('grants no wildcard action anywhere', () => {
    // But CDK's BucketDeployment role's (its own grants; it runs only during deploys, docs/deploy.md).
    const deployment = stack.runtime.node.findChild('NodeTables') as BucketDeployment;
    const deploymentPolicy = deployment.handlerRole.node.findChild('DefaultPolicy').node.defaultChild;
    const statements = Object.entries(resources)
      .filter(([id]) => id !== logicalId({ node: { defaultChild: deploymentPolicy } }))
      .map(([, r]) => r)
      .filter((r) => r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy')
      .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Json[] }).Statement);
    expect(statements.length).toBeGreaterThan(NODE_TYPES.length);
    for (const action of actionsOf(statements.filter((s) => s.Effect === 'Allow'))) {
      expect(action).not.toContain('*');
    }
  });

  it('gives every handler a role of its own with no managed policies', () => {
    const roles = NODE_TYPES.map((type) => resources[functionLogicalId(type)]!.Properties.Role);
    expect(new Set(roles.map((r) => JSON.stringify(r))).size).toBe(NODE_TYPES.length);
    for (const role of roles) {
      const id = (role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      expect(resources[id]!.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('lets a VARIABLE handler touch only its thread’s items, large values and its own logs', () => {
    const actions = actionsOf(functionStatements('VARIABLE')).sort();
    expect(actions).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'events:PutEvents',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      // node-tables/ (read), segments/ (read), values/ (read, write), map/sources/ (read: a list item's first step)
      's3:GetObject',
      's3:GetObject',
      's3:GetObject',
      's3:GetObject',
      's3:ListBucket', // the bucket: a missing key is NoSuchKey, not AccessDenied
      's3:PutObject',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
  });

  it('lets every handler put events on the stepthread bus only, and nothing else of EventBridge', () => {
    const busArn = { 'Fn::GetAtt': [logicalId(stack.runtime.eventBus), 'Arn'] };
    for (const type of NODE_TYPES) {
      const statements = functionStatements(type).filter((s) =>
        actionsOf([s]).some((a) => a.startsWith('events:')),
      );
      expect(statements, type).toEqual([
        { Sid: 'PublishEvents', Effect: 'Allow', Action: 'events:PutEvents', Resource: busArn },
      ]);
    }
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'stepthread-events' });
  });

  it('scopes S3 objects to the segments/, values/ and map/ prefixes: segments written only by handlers that append', () => {
    const prefix = (path: string) => ({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.runtime.bucket), 'Arn'] }, path]],
    });
    for (const type of NODE_TYPES) {
      const s3 = functionStatements(type).filter((s) => actionsOf([s]).some((a) => a.startsWith('s3:')));
      const segments = s3.find((s) => s.Sid === 'ConversationSegments')!;
      const writes = ['read-write', 'write'].includes(HANDLER_SPECS[type].conversation);
      // Every handler reads segments: a large LLM output is stored as a reference to its message.
      expect(actionsOf([segments]).sort(), type).toEqual(
        writes ? ['s3:GetObject', 's3:PutObject'] : ['s3:GetObject'],
      );
      expect(segments.Resource).toEqual(prefix('/segments/*'));
      const values = s3.find((s) => s.Sid === 'LargeValues')!;
      expect(actionsOf([values]).sort(), type).toEqual(['s3:GetObject', 's3:PutObject']);
      expect(values.Resource).toEqual(prefix('/values/*'));
      // ListBucket on the bucket only, so that a missing key is 404 NoSuchKey on AWS, not 403 AccessDenied.
      const listing = s3.find((s) => s.Sid === 'MissingKeysAreNotFound')!;
      expect(listing).toMatchObject({
        Action: 's3:ListBucket',
        Resource: { 'Fn::GetAtt': [logicalId(stack.runtime.bucket), 'Arn'] },
      });
      // FORK alone writes the item sources and lists of FORKs over a list, only under map/sources/ and
      // map/items/; every handler reads item sources (an item's first step creates its thread).
      const lists = s3.find((s) => s.Sid === 'MapItemLists');
      if (type === 'FORK') {
        expect(lists).toMatchObject({
          Action: 's3:PutObject',
          Resource: [prefix('/map/sources/*'), prefix('/map/items/*')],
        });
      } else {
        expect(lists, type).toBeUndefined();
      }
      // Every handler reads the node tables its Tasks name, and nothing else under node-tables/.
      const tables = s3.find((s) => s.Sid === 'NodeTables');
      expect(tables, type).toMatchObject({ Action: 's3:GetObject', Resource: prefix('/node-tables/*') });
      expect(s3.find((s) => s.Sid === 'MapItemSources')).toMatchObject({
        Action: 's3:GetObject',
        Resource: prefix('/map/sources/*'),
      });
      expect(s3, type).toHaveLength(type === 'FORK' ? 6 : 5);
    }
  });

  it('lets every handler put items (step records) and query the table, but none delete, scan or use the index', () => {
    for (const type of NODE_TYPES) {
      const statements = functionStatements(type).filter((s) =>
        actionsOf([s]).some((a) => a.startsWith('dynamodb:')),
      );
      const actions = actionsOf(statements);
      expect(actions, type).toContain('dynamodb:PutItem');
      expect(actions, type).toContain('dynamodb:Query');
      expect(actions, type).not.toContain('dynamodb:DeleteItem');
      expect(actions, type).not.toContain('dynamodb:Scan');
      expect(JSON.stringify(statements.map((s) => s.Resource)), type).not.toContain('/index/');
    }
  });

  it('lets only the FORK and JOIN handlers batch-write: the children listed at once, the branch results later nodes read', () => {
    for (const type of NODE_TYPES) {
      const actions = actionsOf(functionStatements(type));
      if (type === 'FORK' || type === 'JOIN') expect(actions, type).toContain('dynamodb:BatchWriteItem');
      else expect(actions, type).not.toContain('dynamodb:BatchWriteItem');
    }
  });

  it('gives the LLM handler exactly the profiles’ secrets and Bedrock models', () => {
    const statements = functionStatements('LLM');
    const secrets = statements.find((s) => s.Sid === 'ProfileSecrets')!;
    expect(JSON.stringify(secrets.Resource)).toContain(':secret:stepthread/openai-key-??????');
    const bedrock = statements.find((s) => s.Sid === 'BedrockModels')!;
    const arns = JSON.stringify(bedrock.Resource);
    expect(arns).toContain('::foundation-model/amazon.nova-lite-v1:0');
    expect(arns).toContain(':inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0');
    expect(arns).toContain(':bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0');
    expect((bedrock.Resource as unknown[]).length).toBe(3);
    for (const type of NODE_TYPES.filter((t) => t !== 'LLM')) {
      const actions = actionsOf(functionStatements(type));
      expect(
        actions.some((a) => a.startsWith('bedrock:') || a.startsWith('secretsmanager:')),
        type,
      ).toBe(false);
    }
  });

  it('lets each state machine invoke only the functions its definition names', () => {
    for (const [id, wf] of stack.workflows) {
      const sm = resources[logicalId(wf.stateMachine)]!;
      const roleId = (sm.Properties.RoleArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const invoke = roleStatements(roleId).find((s) => s.Sid === 'InvokeNodeHandlers')!;
      // Any version of each (runs started before a deploy invoke theirs), no other function.
      const expected = wf.compiled.substitutionKeys.map((key) => ({
        'Fn::Join': ['', [{ 'Fn::GetAtt': [functionLogicalId(key.slice(3) as NodeType), 'Arn'] }, ':*']],
      }));
      expect(invoke.Resource, id).toEqual(expected.length === 1 ? expected[0] : expected);
    }
  });

  it('lets no function complete task tokens: only operators answer interactions', () => {
    const policies = Object.values(resources).filter(
      (r) => r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy',
    );
    const answering = policies.filter((p) =>
      actionsOf((p.Properties.PolicyDocument as { Statement: Json[] }).Statement).some((a) =>
        a.startsWith('states:SendTask'),
      ),
    );
    expect(answering.map((p) => p.Type)).toEqual(['AWS::IAM::ManagedPolicy']);
  });

  it('gives operators start, describe, the task-token answers, table reads, cancel and the bucket objects their commands use: no table writes but cancel’s, no Scan', () => {
    const policy = resources[logicalId(stack.runtime.operatorPolicy)]!;
    const statements = (policy.Properties.PolicyDocument as { Statement: Json[] }).Statement;
    const actions = new Set(actionsOf(statements));
    expect([...actions].sort()).toEqual([
      // `watch` and `dev --target aws` subscribe to streamed replies (infra/streaming.ts).
      'appsync:EventConnect',
      'appsync:EventSubscribe',
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      // `cancel` publishes its THREAD_CANCELLED events to the stack's bus.
      'events:PutEvents',
      's3:GetObject',
      's3:PutObject',
      'states:DescribeExecution',
      'states:DescribeStateMachine',
      'states:GetExecutionHistory',
      'states:ListExecutions',
      'states:ListStateMachines',
      'states:SendTaskFailure',
      'states:SendTaskSuccess',
      'states:StartExecution',
      'states:StopExecution',
    ]);
    // The table writes are cancel's alone (CancelRuns): no BatchWriteItem, no DeleteItem.
    const writes = statements.filter((st) => /dynamodb:(Put|Update)Item/.test(JSON.stringify(st.Action)));
    expect(writes.map((st) => st.Sid)).toEqual(['CancelRuns']);
    // Task tokens are accepted only for the stack's own state machines (all named stepthread-…), and
    // the policy is the same size whatever the number of workflows.
    const answers = statements.filter((st) => JSON.stringify(st.Action).includes('states:SendTask'));
    expect(answers).toHaveLength(1);
    expect(answers[0]!.Resource).toEqual({
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':states:eu-west-1:123456789012:stateMachine:stepthread-*'],
      ],
    });
  });
});

describe('the operator policy', () => {
  it('reaches only the stack’s own state machines (stepthread-*), their executions, and the table with its index', () => {
    const policy = resources[logicalId(stack.runtime.operatorPolicy)]!;
    const statements = (policy.Properties.PolicyDocument as { Statement: Json[] }).Statement;
    const arn = (resource: string) => ({
      'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:states:eu-west-1:123456789012:${resource}`]],
    });
    const table = { 'Fn::GetAtt': [logicalId(stack.runtime.table), 'Arn'] };
    const objects = (pattern: string) => ({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.runtime.bucket), 'Arn'] }, `/${pattern}`]],
    });
    const apiId = { 'Fn::GetAtt': [logicalId(stack.streaming!.api), 'ApiId'] };
    const appsync = (rest: string) => ({
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':appsync:eu-west-1:123456789012:apis/',
          apiId,
          ...(rest ? [rest] : []),
        ],
      ],
    });
    expect(statements.map(({ Sid, Action, Resource }) => ({ Sid, Action, Resource }))).toEqual([
      {
        Sid: 'ReadThreads',
        Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
        Resource: [table, { 'Fn::Join': ['', [table, '/index/gsi1']] }],
      },
      // `cancel`: the run's mark, its threads, questions and execution record; nothing else writes.
      { Sid: 'CancelRuns', Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem'], Resource: table },
      // `cancel`'s THREAD_CANCELLED events, on the stack's own bus only.
      {
        Sid: 'PublishCancelEvents',
        Action: 'events:PutEvents',
        Resource: { 'Fn::GetAtt': [logicalId(stack.runtime.eventBus), 'Arn'] },
      },
      // ListStateMachines has no resource-level scope.
      { Sid: 'FindStateMachines', Action: 'states:ListStateMachines', Resource: '*' },
      // `start` writes an input over 8 KB to values/; `inspect` and `dev --target aws` read
      // conversations and large values. No other key of the bucket, and no ListBucket.
      { Sid: 'WriteLargeInputs', Action: 's3:PutObject', Resource: objects('values/*') },
      {
        Sid: 'ReadConversations',
        Action: 's3:GetObject',
        Resource: [objects('values/*'), objects('segments/*')],
      },
      // `copy --stack --set` reads START's declarations from the node table the definition names.
      { Sid: 'ReadNodeTables', Action: 's3:GetObject', Resource: objects('node-tables/*') },
      // The stack's Events API: connect, and subscribe to the replies namespace (never publish).
      { Sid: 'WatchRepliesConnect', Action: 'appsync:EventConnect', Resource: appsync('') },
      {
        Sid: 'WatchRepliesSubscribe',
        Action: 'appsync:EventSubscribe',
        Resource: appsync('/channelNamespace/replies'),
      },
      {
        Sid: 'StartPrefixed',
        Action: ['states:StartExecution', 'states:DescribeStateMachine', 'states:ListExecutions'],
        Resource: arn('stateMachine:stepthread-*'),
      },
      {
        Sid: 'RespondPrefixed',
        Action: ['states:SendTaskSuccess', 'states:SendTaskFailure'],
        Resource: arn('stateMachine:stepthread-*'),
      },
      {
        Sid: 'ExecutionsPrefixed',
        Action: ['states:DescribeExecution', 'states:GetExecutionHistory'],
        Resource: arn('execution:stepthread-*'),
      },
      { Sid: 'StopPrefixed', Action: 'states:StopExecution', Resource: arn('execution:stepthread-*') },
    ]);
    // No CloudFormation: `--stack` needs DescribeStacks, which operators get elsewhere (or use the variables).
    expect(JSON.stringify(statements)).not.toContain('cloudformation:');
  });
});

describe('cdk-nag acknowledgements', () => {
  /** Every AwsSolutions acknowledgement in the stack, with the path of the construct that makes it. */
  function acknowledgements(): { rule: string; path: string }[] {
    return stack.node.findAll().flatMap((construct) =>
      construct.node.metadata
        .filter((entry) => entry.type === 'aws:cdk:acknowledged-rules')
        .flatMap((entry) => Object.keys(entry.data as Record<string, string>))
        // CDK records an acknowledged warning under its annotation id.
        .map((rule) => ({ rule: rule.replace(/^Annotation::/, ''), path: construct.node.path }))
        // CDK's own (e.g. CloudFormation-Validate::W3045 on the access-log bucket) are not cdk-nag's.
        .filter(({ rule }) => rule.startsWith('AwsSolutions-')),
    );
  }

  /**
   * The list in docs/deploy.md ("The acknowledgements, each made next to its resource"): every acknowledgement
   * the stack makes is one of these, and each of these is made.
   */
  const DOCUMENTED: { readme: string; matches: (ack: { rule: string; path: string }) => boolean }[] = [
    {
      readme: 'S1 on the access-log bucket',
      matches: ({ rule, path }) => rule === 'AwsSolutions-S1' && path.endsWith('/AccessLogs'),
    },
    {
      readme: 'SQS3 on each trigger DLQ',
      matches: ({ rule, path }) => rule === 'AwsSolutions-SQS3' && path.endsWith('/TriggerDeadLetters'),
    },
    {
      readme:
        'IAM5 `Resource::*` for X-Ray (functions and state machines) and CloudWatch Logs delivery (state machines)',
      matches: ({ rule, path }) =>
        rule === 'AwsSolutions-IAM5[Resource::*]' && (/Role$/.test(path) || path.endsWith('/StateMachine')),
    },
    {
      readme: '`states:ListStateMachines` (operator policy)',
      matches: ({ rule, path }) =>
        rule === 'AwsSolutions-IAM5[Resource::*]' && path.endsWith('/OperatorPolicy'),
    },
    {
      readme: 'IAM5 on `<bucket>/segments/*` and `<bucket>/values/*`',
      matches: ({ rule, path }) =>
        (/Role$/.test(path) || path.endsWith('/OperatorPolicy')) && /\/(segments|values)\/\*\]$/.test(rule),
    },
    {
      readme: 'IAM5 on `stateMachine:stepthread-*` and `execution:stepthread-*` in the operator policy',
      matches: ({ rule, path }) =>
        path.endsWith('/OperatorPolicy') && /:(stateMachine|execution):stepthread-\*\]$/.test(rule),
    },
    {
      readme: 'IAM5 on `<function ARN>:*` (each state machine',
      matches: ({ rule, path }) =>
        /\/StateMachine$/.test(path) && rule.startsWith('AwsSolutions-IAM5[') && rule.endsWith('Arn>:*]'),
    },
    {
      readme: 'IAM5 on `<bucket>/node-tables/*` (every function',
      matches: ({ rule, path }) =>
        (/Role$/.test(path) || path.endsWith('/OperatorPolicy')) && rule.endsWith('/node-tables/*]'),
    },
    {
      readme: "IAM4, IAM5 and L1 on CDK's BucketDeployment",
      matches: ({ rule, path }) =>
        path.includes('/NodeTables/') || path.includes('/Custom::CDKBucketDeployment')
          ? /^AwsSolutions-(IAM4|IAM5|L1)/.test(rule)
          : false,
    },
    {
      readme: 'IAM5 on `<bucket>/map/sources/*` (every function',
      matches: ({ rule, path }) => /Role$/.test(path) && rule.endsWith('/map/sources/*]'),
    },
    {
      readme: 'IAM5 on `<bucket>/map/items/*` (the FORK function',
      matches: ({ rule, path }) => path.endsWith('/ForkRole') && rule.endsWith('/map/items/*]'),
    },
    {
      readme: 'IAM5 on a Distributed Map',
      matches: ({ rule, path }) =>
        path.endsWith('/StateMachine') &&
        (/\/map\/(items|results)\/\*\]$/.test(rule) || /:execution:stepthread-[^:]+\/\*\]$/.test(rule)),
    },
    {
      readme: 'IAM5 on `arn:aws:bedrock:*::foundation-model/<model>`',
      matches: ({ rule, path }) =>
        path.endsWith('/LlmRole') &&
        /^AwsSolutions-IAM5\[Resource::arn:.*:bedrock:\*::foundation-model\//.test(rule),
    },
  ];

  it('makes only the acknowledgements docs/deploy.md lists, and every one it lists', () => {
    // Compared with the document's line breaks folded into spaces.
    const readme = readFileSync('docs/deploy.md', 'utf8').replace(/\s+/g, ' ');
    const made = acknowledgements();
    expect(made.length).toBeGreaterThan(NODE_TYPES.length);
    for (const ack of made) {
      expect(
        DOCUMENTED.filter(({ matches }) => matches(ack)).map(({ readme: text }) => text),
        `${ack.rule} on ${ack.path}`,
      ).toHaveLength(1);
    }
    for (const { readme: text, matches } of DOCUMENTED) {
      expect(readme.includes(text), `docs/deploy.md lists: ${text}`).toBe(true);
      expect(made.some(matches), text).toBe(true);
    }
  });
});

describe('state machines', () => {
  it('deploys one STANDARD state machine per workflow, logging ALL and traced', () => {
    const workflows = testWorkflows();
    template.resourceCountIs('AWS::StepFunctions::StateMachine', workflows.length);
    for (const { workflow } of workflows) {
      template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
        StateMachineName: `stepthread-${workflow.id}`,
        StateMachineType: 'STANDARD',
        LoggingConfiguration: Match.objectLike({ Level: 'ALL', IncludeExecutionData: true }),
        TracingConfiguration: { Enabled: true },
      });
    }
  });

  it('logs each state machine to /aws/vendedlogs/states/<name>, kept 30 days', () => {
    for (const [id, wf] of stack.workflows) {
      const sm = resources[logicalId(wf.stateMachine)]!;
      const group = logicalId(wf.logGroup);
      expect(sm.Properties.LoggingConfiguration, id).toEqual({
        Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [group, 'Arn'] } } }],
        IncludeExecutionData: true,
        Level: 'ALL',
      });
      expect(resources[group]!.Properties, id).toEqual({
        LogGroupName: `/aws/vendedlogs/states/stepthread-${id}`,
        RetentionInDays: 30,
      });
    }
  });

  it('lets a state machine that continues runs start itself, and nothing else: StartExecution on its own ARN', () => {
    const continuing: string[] = [];
    for (const [id, wf] of stack.workflows) {
      const sm = resources[logicalId(wf.stateMachine)]!;
      const roleId = (sm.Properties.RoleArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const statement = roleStatements(roleId).find((s) => s.Sid === 'ContinueAsNew');
      const continues = JSON.stringify(sm.Properties.DefinitionString).includes(
        'arn:aws:states:::states:startExecution',
      );
      if (!continues) {
        expect(statement, id).toBeUndefined();
        continue;
      }
      continuing.push(id);
      expect(statement, id).toMatchObject({ Effect: 'Allow', Action: 'states:StartExecution' });
      // Built from the name (a Ref to the state machine would make a dependency cycle with its role),
      // it is exactly the ARN the state machine gets.
      expect(statement!.Resource, id).toEqual({
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            `:states:eu-west-1:123456789012:stateMachine:${wf.stateMachineName}`,
          ],
        ],
      });
      expect(JSON.stringify(statement), id).not.toContain(logicalId(wf.stateMachine));
    }
    // Of the examples and fixtures, the ones with a top-level loop.
    expect(continuing.sort()).toEqual(['route-loop']);
  });

  it('lets a state machine with a Distributed Map start its own child executions and use only map/ in the bucket', () => {
    const withMaps: string[] = [];
    for (const [id, wf] of stack.workflows) {
      const sm = resources[logicalId(wf.stateMachine)]!;
      const roleId = (sm.Properties.RoleArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const statements = roleStatements(roleId);
      const sid = (name: string) => statements.find((s) => s.Sid === name);
      const [, parts] = (sm.Properties.DefinitionString as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
      const body = parts.filter((part) => typeof part === 'string').join('');
      const distributed = body.includes('"Mode":"DISTRIBUTED"');
      if (!distributed) {
        expect(sid('DistributedMapChildren'), id).toBeUndefined();
        expect(sid('DistributedMapItems'), id).toBeUndefined();
        continue;
      }
      withMaps.push(id);
      const arn = (resource: string) => ({
        'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:states:eu-west-1:123456789012:${resource}`]],
      });
      expect(sid('DistributedMapChildren')).toMatchObject({
        Action: 'states:StartExecution',
        Resource: arn(`stateMachine:${wf.stateMachineName}`),
      });
      expect(sid('DistributedMapRuns')).toMatchObject({
        Action: ['states:DescribeExecution', 'states:StopExecution'],
        Resource: arn(`execution:${wf.stateMachineName}/*`),
      });
      const bucket = { 'Fn::GetAtt': [logicalId(stack.runtime.bucket), 'Arn'] };
      expect(sid('DistributedMapItems')).toMatchObject({
        Action: 's3:GetObject',
        Resource: { 'Fn::Join': ['', [bucket, '/map/items/*']] },
      });
      expect(sid('DistributedMapResults')).toMatchObject({
        Action: ['s3:PutObject', 's3:ListMultipartUploadParts', 's3:AbortMultipartUpload'],
        Resource: { 'Fn::Join': ['', [bucket, '/map/results/*']] },
      });
      const definition = JSON.parse(body) as {
        States: Record<string, Record<string, unknown>>;
      };
      expect(definition.States['each:items']).toMatchObject({
        Type: 'Map',
        ItemReader: { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON' } },
        ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'EXPRESS' } },
        MaxConcurrency: 100,
        ToleratedFailureCount: 0,
        ResultWriter: { Resource: 'arn:aws:states:::s3:putObject' },
        ResultPath: null,
      });
    }
    expect(withMaps).toEqual(['distributed-map']);
  });

  it('deploys the definition as an Fn::Join of its text and its functions’ version ARNs (definition.test.ts resolves it)', () => {
    for (const { workflow } of testWorkflows()) {
      const compiled = compileWorkflow(workflow);
      const sm = resources[logicalId(stack.workflows.get(workflow.id)!.stateMachine)]!;
      expect(sm.Properties.DefinitionSubstitutions).toBeUndefined();
      const [separator, parts] = (sm.Properties.DefinitionString as { 'Fn::Join': [string, unknown[]] })[
        'Fn::Join'
      ];
      expect(separator).toBe('');
      // Each a Ref to the function version of this deploy (CDK suffixes its logical id with a code hash).
      const refs = parts
        .filter((part) => typeof part !== 'string')
        .map((part) => (part as { Ref: string }).Ref);
      const versions = compiled.substitutionKeys.map((key) =>
        logicalId(stack.runtime.versionFor(key.slice(3) as NodeType)),
      );
      expect(new Set(refs.map((ref) => versions.find((id) => ref.startsWith(id))))).toEqual(
        new Set(versions),
      );
      for (const ref of refs) {
        expect(resources[ref]?.Type, ref).toBe('AWS::Lambda::Version');
        // Kept when a later deploy publishes the next one: a waiting run still invokes it.
        expect((resources[ref] as { DeletionPolicy?: string }).DeletionPolicy, ref).toBe('Retain');
      }
    }
  });

  it('publishes a version per deploy (a new one when the definition changes, the old one kept) and points the live alias at it', () => {
    template.resourceCountIs('AWS::StepFunctions::StateMachineVersion', stack.workflows.size);
    template.resourceCountIs('AWS::StepFunctions::StateMachineAlias', stack.workflows.size);
    const raw = template.toJSON().Resources as Record<string, Json>;
    for (const [id, wf] of stack.workflows) {
      const machine = logicalId(wf.stateMachine);
      const version = raw[stack.getLogicalId(wf.version)]!;
      expect(version.Properties, id).toMatchObject({
        StateMachineArn: { Ref: machine },
        // The revision changes with the definition: CloudFormation replaces the version, publishing anew.
        StateMachineRevisionId: { 'Fn::GetAtt': [machine, 'StateMachineRevisionId'] },
      });
      // Replaced, not deleted: a run continuing in a new execution can still start its version.
      expect(version, id).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
      expect(raw[stack.getLogicalId(wf.alias)]!.Properties, id).toMatchObject({
        Name: 'live',
        RoutingConfiguration: [
          { StateMachineVersionArn: { 'Fn::GetAtt': [stack.getLogicalId(wf.version), 'Arn'] }, Weight: 100 },
        ],
      });
    }
  });

  it('lets a trigger start the alias: its role may StartExecution on the state machine, whose ARN IAM checks for an alias', () => {
    const wf = stack.workflows.get('approval')!;
    const [rule] = wf.triggers;
    const target = (resources[logicalId(rule!)]!.Properties.Targets as Json[])[0]!;
    const roleId = (target.RoleArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    expect(roleStatements(roleId)).toEqual([
      expect.objectContaining({
        Action: 'states:StartExecution',
        Effect: 'Allow',
        Resource: { Ref: logicalId(wf.stateMachine) },
      }),
    ]);
  });

  it('turns each trigger into a rule that starts the machine with the event as input, with a DLQ', () => {
    const triggered = testWorkflows().filter(({ workflow }) => workflow.triggers?.length);
    expect(triggered.map(({ workflow }) => workflow.id).sort()).toEqual(['approval', 'model-calls']);
    for (const { workflow } of triggered) {
      const wf = stack.workflows.get(workflow.id)!;
      expect(wf.triggers).toHaveLength(workflow.triggers!.length);
      workflow.triggers!.forEach((trigger, i) => {
        const rule = resources[logicalId(wf.triggers[i]!)]!.Properties;
        expect(rule.EventPattern).toEqual(trigger.eventPattern);
        expect(rule.EventBusName).toBe('default');
        // The trigger starts the `live` alias: the run is pinned to the deploy's version.
        expect(rule.Targets).toEqual([
          expect.objectContaining({
            Arn: { 'Fn::GetAtt': [stack.getLogicalId(wf.alias), 'Arn'] },
            DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(wf.deadLetterQueue!), 'Arn'] } },
            InputTransformer: { InputPathsMap: { f1: '$' }, InputTemplate: '{"input":<f1>}' },
            RetryPolicy: { MaximumEventAgeInSeconds: 86400, MaximumRetryAttempts: 8 },
          }),
        ]);
      });
    }
    // One rule per trigger plus the status-change forwarding rule.
    const triggerCount = triggered.reduce((n, { workflow }) => n + workflow.triggers!.length, 0);
    template.resourceCountIs('AWS::Events::Rule', triggerCount + 1);
    template.resourceCountIs('AWS::SQS::Queue', triggered.length);
    // Each dead-letter queue: SSE, TLS only, 14 days.
    for (const { workflow } of triggered) {
      const queue = stack.workflows.get(workflow.id)!.deadLetterQueue!;
      expect(resources[logicalId(queue)]!.Properties).toEqual({
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
      });
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: logicalId(queue) }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      });
    }
  });

  it('forwards the status changes of every stepthread execution to the stepthread bus', () => {
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'stepthread-events' });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.states'],
        'detail-type': ['Step Functions Execution Status Change'],
        // A prefix match: the pattern does not grow with the number of workflows (scale.test.ts).
        detail: {
          stateMachineArn: [
            {
              prefix: {
                'Fn::Join': [
                  '',
                  [
                    'arn:',
                    { Ref: 'AWS::Partition' },
                    ':states:eu-west-1:123456789012:stateMachine:stepthread-',
                  ],
                ],
              },
            },
          ],
        },
      },
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(stack.runtime.eventBus), 'Arn'] } })],
    });
  });

  it('outputs what the CLI needs', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining([
        'TableName',
        'BucketName',
        'EventBusName',
        'OperatorPolicyArn',
        'ApprovalStateMachineArn',
      ]),
    );
    expect(outputs.ApprovalStateMachineArn!.Value).toEqual({
      Ref: logicalId(stack.workflows.get('approval')!.stateMachine),
    });
  });
});
