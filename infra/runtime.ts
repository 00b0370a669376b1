/**
 * The shared runtime every workflow of a stack runs on: the DynamoDB table, the conversation bucket,
 * one Lambda per node type (each with its own least-privilege role), the stepthread event bus, and a
 * managed policy for operators (`stepthread start | pending | respond`).
 */
import { ArnFormat, Aspects, CfnOutput, Duration, Lazy, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, type IEventBus, Rule } from 'aws-cdk-lib/aws-events';
import { EventBus as EventBusTarget } from 'aws-cdk-lib/aws-events-targets';
import { Effect, ManagedPolicy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  Code,
  type ILayerVersion,
  type IVersion,
  Function as LambdaFunction,
  LayerVersion,
  LoggingFormat,
  Tracing,
} from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, Source } from 'aws-cdk-lib/aws-s3-deployment';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { NodeType } from '../engine/model/schema.ts';
import { SEGMENT_PREFIX } from '../functions/stores/conversation-store.ts';
import { ITEM_LIST_PREFIX, ITEM_SOURCE_PREFIX, MAP_PREFIX } from '../functions/stores/item-lists.ts';
import { NODE_TABLE_PREFIX } from '../functions/stores/node-tables.ts';
import { RETENTION_DAYS_ENV } from '../functions/stores/retention.ts';
import { GSI1_NAME, TTL_ATTRIBUTE, tableDefinition } from '../functions/stores/table.ts';
import { VALUES_PREFIX } from '../functions/stores/value-store.ts';
import type { ToolRequirements } from '../functions/tools/requirements.ts';
import { LAMBDA_ARCHITECTURE, LAMBDA_RUNTIME, lambdaBundling } from './bundling.ts';
import {
  availableHandlerTypes,
  HANDLER_SPECS,
  type HandlerSpec,
  handlerEntryPath,
  PROJECT_ROOT,
  prebuiltBundleDir,
} from './handler-registry.ts';
import { bedrockResources, type ModelAccess } from './model-access.ts';
import { acknowledge, acknowledgePolicyWildcards, acknowledgeWildcardResources } from './nag.ts';
import { checkOpenTelemetry, type OpenTelemetryProps } from './open-telemetry.ts';
import { sandboxWorkerHooks } from './sandbox-bundling.ts';
import { NO_TOOL_ACCESS, type ToolAccess, type ToolCallingType } from './tool-access.ts';

/** Context key asking for esbuild's report of each bundle (quiet by default: infra/bundling.ts). */
export const VERBOSE_BUNDLING_CONTEXT = 'stepthread:verboseBundling';

function isTrue(value: unknown): boolean {
  return value === true || (typeof value === 'string' && /^(1|true|yes)$/i.test(value.trim()));
}

export interface StepthreadRuntimeProps {
  /** Secrets and Bedrock models the LLM handler may use; derive them with `collectModelAccess(workflows)`. */
  readonly modelAccess?: ModelAccess;
  /** Lambda functions and secrets the LLM and TOOL handlers' tools use; derive with `collectToolAccess(workflows)`. */
  readonly toolAccess?: ToolAccess;
  /** Node types to deploy a function for (default: every type whose handler module exists). */
  readonly nodeTypes?: readonly NodeType[];
  /** Bus that workflow triggers listen on (default: the account's default event bus). */
  readonly triggerBus?: IEventBus;
  /** Prefix of physical names: state machines, the event bus (default `stepthread`). */
  readonly namePrefix?: string;
  /** Table and buckets outlive the stack by default: they hold every thread and conversation. */
  readonly removalPolicy?: RemovalPolicy;
  readonly logRetention?: RetentionDays;
  /**
   * Reserved concurrency per node type's function (default none: the account's unreserved pool).
   * Reserving guarantees those functions capacity and caps them, so a burst of one type cannot
   * starve the others; a Task throttled at the cap is retried with backoff (Lambda.TooManyRequestsException).
   */
  readonly reservedConcurrency?: Readonly<Partial<Record<NodeType, number>>>;
  /** X-Ray on every function (default true; state machines always trace). */
  readonly tracing?: boolean;
  /**
   * Root the handler entries are bundled from with esbuild (NodejsFunction). Default: the installed
   * package's prebuilt bundles (`dist/lambda/`), or this repository's sources when run from them.
   */
  readonly projectRoot?: string;
  /**
   * Days an ended run is kept (default: forever). When a run ends, its END function sets DynamoDB's
   * TTL on the run's items, this many days after the end; a lifecycle rule expires the distributed
   * FORKs' item lists and result files under `map/` after as many days. Conversation segments and
   * large values are shared between threads and never expire (functions/stores/README.md, "Retention").
   */
  readonly retentionDays?: number;
  /**
   * Add the outputs `stepthread … --stack <name>` reads to the runtime's stack (default true):
   * `TableName`, `BucketName`, `EventBusName` and `OperatorPolicyArn`, under those names. A stack
   * holds them once: give a second runtime in the same stack `false`.
   */
  readonly stackOutputs?: boolean;
  /**
   * OpenTelemetry traces (docs/deploy.md): the `OTEL_*` variables every function gets (a trace
   * endpoint among them) and layers to add (an ADOT collector); the workflows on this runtime then
   * carry the trace context into fork branches and Map items. Default: no traces.
   */
  readonly openTelemetry?: OpenTelemetryProps;
}

/** The output names the CLI finds a deployed stack's table and bucket by (cli/stack-names.ts). */
export const STACK_OUTPUT_NAMES = ['TableName', 'BucketName', 'EventBusName', 'OperatorPolicyArn'] as const;

export class StepthreadRuntime extends Construct {
  readonly table: Table;
  readonly bucket: Bucket;
  readonly accessLogsBucket: Bucket;
  /** Receives the execution status changes of every registered workflow (and, later, thread events). */
  readonly eventBus: EventBus;
  readonly triggerBus: IEventBus;
  /** Attach to the people or CI roles that run `stepthread start | pending | respond`. */
  readonly operatorPolicy: ManagedPolicy;
  readonly namePrefix: string;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Whether the functions export traces: workflows compile with the trace context then. */
  readonly traceContext: boolean;
  private readonly telemetry: { environment: Record<string, string>; layers: ILayerVersion[] } | undefined;
  readonly retentionDays: number | undefined;
  private readonly functions = new Map<NodeType, LambdaFunction>();
  /** State machines registered under a name outside `<namePrefix>-…` (user CDK apps). */
  private readonly otherStateMachineArns: string[] = [];
  private statusForwarding: Rule | undefined;
  /** Copies the workflows' node tables into the bucket; made with the first table. */
  private nodeTables: BucketDeployment | undefined;
  private readonly storedTables = new Set<string>();

  constructor(scope: Construct, id: string, props: StepthreadRuntimeProps = {}) {
    super(scope, id);
    this.namePrefix = props.namePrefix ?? 'stepthread';
    this.logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    this.removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    if (
      props.retentionDays !== undefined &&
      !(Number.isSafeInteger(props.retentionDays) && props.retentionDays >= 1)
    ) {
      throw new Error(`retentionDays must be a whole number of days from 1, not ${props.retentionDays}`);
    }
    this.retentionDays = props.retentionDays;
    const root = props.projectRoot ?? PROJECT_ROOT;
    const prebuilt = props.projectRoot === undefined;
    this.traceContext = props.openTelemetry !== undefined;
    this.telemetry = props.openTelemetry && {
      environment: checkOpenTelemetry(props.openTelemetry),
      layers: (props.openTelemetry.layerArns ?? []).map((arn, i) =>
        LayerVersion.fromLayerVersionArn(this, `OpenTelemetryLayer${i + 1}`, arn),
      ),
    };

    this.table = this.createTable();
    this.accessLogsBucket = this.createAccessLogsBucket();
    this.bucket = this.createConversationBucket();
    this.eventBus = new EventBus(this, 'EventBus', { eventBusName: `${this.namePrefix}-events` });
    this.triggerBus = props.triggerBus ?? EventBus.fromEventBusName(this, 'DefaultBus', 'default');
    this.operatorPolicy = this.createOperatorPolicy();
    if (props.stackOutputs ?? true) this.addStackOutputs();

    const modelAccess = props.modelAccess ?? { secretNames: [], bedrockModels: [] };
    const toolAccess = props.toolAccess ?? NO_TOOL_ACCESS;
    for (const type of props.nodeTypes ?? availableHandlerTypes(root)) {
      this.functions.set(
        type,
        this.createFunction(
          HANDLER_SPECS[type],
          root,
          prebuilt,
          modelAccess,
          toolAccess,
          props.tracing ?? true,
          props.reservedConcurrency?.[type],
        ),
      );
    }
  }

  /**
   * On the stack itself, so the outputs' names are exactly these (a construct's own would get a
   * path-derived name), in the repository's stack and a user's own alike.
   */
  private addStackOutputs(): void {
    const stack = Stack.of(this);
    const taken = STACK_OUTPUT_NAMES.filter((name) => stack.node.tryFindChild(name) !== undefined);
    if (taken.length > 0) {
      throw new Error(
        `stack ${stack.node.path} already has ${taken.join(', ')}: a second StepthreadRuntime in it? ` +
          'Give the others stackOutputs: false',
      );
    }
    const values: Record<(typeof STACK_OUTPUT_NAMES)[number], { value: string; description?: string }> = {
      TableName: { value: this.table.tableName },
      BucketName: { value: this.bucket.bucketName },
      EventBusName: { value: this.eventBus.eventBusName },
      OperatorPolicyArn: {
        value: this.operatorPolicy.managedPolicyArn,
        description: 'Attach to whoever runs stepthread start | pending | respond',
      },
    };
    for (const name of STACK_OUTPUT_NAMES) new CfnOutput(stack, name, values[name]);
  }

  /** Node types this runtime has a function for. */
  get nodeTypes(): NodeType[] {
    return [...this.functions.keys()];
  }

  /** The function of a node type; throws when this runtime was built without it. */
  functionFor(type: NodeType): LambdaFunction {
    const fn = this.functions.get(type);
    if (!fn) {
      throw new Error(
        `stepthread runtime has no function for node type ${type} (missing ${HANDLER_SPECS[type].entry}?)`,
      );
    }
    return fn;
  }

  /**
   * The function version a state machine invokes for a node type: published when its code or
   * configuration changes, kept after later deploys (so a run finishes on the code it started with).
   */
  versionFor(type: NodeType): IVersion {
    return this.functionFor(type).currentVersion;
  }

  /**
   * Stores a compiled workflow's node table (engine/asl/node-table.ts) in the bucket as
   * `node-tables/<ref>.json` with this deploy, for the functions to read. One BucketDeployment takes
   * every workflow's table; it never deletes one (no prune, kept when the stack goes), so a run pinned
   * to an older definition still finds the table it names. Tables are named by content: two workflows
   * with the same table, or a redeploy of an unchanged one, store it once. Returns the deployment, which
   * every definition naming a table must wait for (StepthreadWorkflow).
   */
  storeNodeTable(table: { readonly ref: string; readonly json: string }): BucketDeployment {
    if (this.nodeTables !== undefined && this.storedTables.has(table.ref)) return this.nodeTables;
    this.storedTables.add(table.ref);
    const source = Source.data(`${table.ref}.json`, table.json);
    if (this.nodeTables !== undefined) {
      this.nodeTables.addSource(source);
      return this.nodeTables;
    }
    this.nodeTables = new BucketDeployment(this, 'NodeTables', {
      sources: [source],
      destinationBucket: this.bucket,
      destinationKeyPrefix: NODE_TABLE_PREFIX,
      prune: false,
      retainOnDelete: true,
      contentType: 'application/json',
      memoryLimit: 512,
    });
    const reason =
      "CDK's BucketDeployment copies the node tables from the CDK asset bucket into the stepthread bucket at deploy time; its handler (CDK's own, with the AWS CLI layer) and role are generated by CDK, and it runs only during deploys.";
    const role = this.nodeTables.handlerRole;
    acknowledge(
      role,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason,
    );
    // CDK pins the handler's Python runtime; a newer one is CDK's to pick.
    const handler = Stack.of(this).node.children.find((child) =>
      child.node.id.startsWith('Custom::CDKBucketDeployment'),
    );
    if (handler) acknowledge(handler, 'AwsSolutions-L1', reason);
    // Its grants grow with each source (addSource): acknowledged once the role's policy is complete.
    Aspects.of(role).add({
      visit(construct) {
        if (construct === role) acknowledgePolicyWildcards(role, reason);
      },
    });
    return this.nodeTables;
  }

  /**
   * Wires a workflow's state machine into the runtime: its status changes reach the stepthread bus and
   * the operator policy may start it, read its executions and answer its interactions. A state machine
   * named `<namePrefix>-…` is covered by the prefix-wide rule pattern and policy statements, so neither
   * grows with the number of workflows (EventBridge patterns are limited to 2,048 characters, managed
   * policies to 6,144); another name is listed on its own.
   */
  registerStateMachine(stateMachine: IStateMachine, stateMachineName: string): void {
    this.ensureOperatorAccess();
    if (stateMachineName.startsWith(`${this.namePrefix}-`)) return;
    this.otherStateMachineArns.push(stateMachine.stateMachineArn);
    const executions = this.executionArnOf(`${stateMachineName}:*`);
    this.grantOperator(`Other${this.otherStateMachineArns.length}`, stateMachine.stateMachineArn, executions);
    acknowledgeWildcardResources(
      this.operatorPolicy,
      [executions],
      'Execution ARNs end in the execution name, chosen at start time; the wildcard covers executions of this one state machine only.',
    );
  }

  /** The ARN of a state machine of this stack's account and region, by name (a `*` is kept). */
  private stateMachineArnOf(name: string): string {
    return Stack.of(this).formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: name,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  private executionArnOf(name: string): string {
    return Stack.of(this).formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: name,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  private ensureOperatorAccess(): void {
    if (this.statusForwarding) return;
    // `<prefix>-*`: every state machine this runtime names (the prefix-wide scope is acknowledged below).
    const prefixed = this.stateMachineArnOf(`${this.namePrefix}-*`);
    const executions = this.executionArnOf(`${this.namePrefix}-*`);
    this.grantOperator('Prefixed', prefixed, executions);
    acknowledgeWildcardResources(
      this.operatorPolicy,
      [prefixed, executions],
      `State machines are named ${this.namePrefix}-<workflow id> and execution names are chosen at start time; the wildcards cover this prefix only, so the policy stays the same size however many workflows are deployed.`,
    );
    // Step Functions publishes status changes to the default bus only; forward ours to the stepthread
    // bus. A prefix match keeps the pattern one line long for any number of workflows.
    const arnPrefix = this.stateMachineArnOf(`${this.namePrefix}-`);
    this.statusForwarding = new Rule(this, 'ExecutionStatusForwarding', {
      description: 'Forwards status changes of stepthread executions to the stepthread event bus.',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: {
          stateMachineArn: Lazy.any({
            produce: () => [{ prefix: arnPrefix }, ...this.otherStateMachineArns],
          }) as unknown as string[],
        },
      },
      targets: [new EventBusTarget(this.eventBus)],
    });
  }

  private grantOperator(sid: string, stateMachines: string, executions: string): void {
    this.operatorPolicy.addStatements(
      new PolicyStatement({
        sid: `Start${sid}`,
        actions: ['states:StartExecution', 'states:DescribeStateMachine', 'states:ListExecutions'],
        resources: [stateMachines],
      }),
      // `respond` hands the answer over with the task token; the workflow's `<node>:answer` Task
      // commits it. Tokens are authorised against the state machine that issued them.
      new PolicyStatement({
        sid: `Respond${sid}`,
        actions: ['states:SendTaskSuccess', 'states:SendTaskFailure'],
        resources: [stateMachines],
      }),
      new PolicyStatement({
        sid: `Executions${sid}`,
        actions: ['states:DescribeExecution', 'states:GetExecutionHistory'],
        resources: [executions],
      }),
      // `cancel` stops the execution; its records are cancelled in the table (CancelRuns).
      new PolicyStatement({ sid: `Stop${sid}`, actions: ['states:StopExecution'], resources: [executions] }),
    );
    // No Step Functions grant for the USER_INTERACTION function: interactions that need nobody
    // compile to plain Tasks, so it never completes a task token itself.
  }

  private createTable(): Table {
    // Mirror the definition the embedded runtime creates, so local and AWS never drift apart.
    const definition = tableDefinition('mirror');
    const attributeType = (name: string): AttributeType => {
      const declared = definition.AttributeDefinitions?.find((a) => a.AttributeName === name);
      if (declared?.AttributeType !== 'S') throw new Error(`table attribute ${name} must be a string key`);
      return AttributeType.STRING;
    };
    const key = (schema: typeof definition.KeySchema, keyType: 'HASH' | 'RANGE') => {
      const name = schema?.find((k) => k.KeyType === keyType)?.AttributeName;
      if (!name) throw new Error(`table definition lacks a ${keyType} key`);
      return { name, type: attributeType(name) };
    };
    const table = new Table(this, 'Table', {
      partitionKey: key(definition.KeySchema, 'HASH'),
      sortKey: key(definition.KeySchema, 'RANGE'),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      // Pending interactions and idempotency records carry an expiry; everything else has none.
      timeToLiveAttribute: TTL_ATTRIBUTE,
      deletionProtection: this.removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy: this.removalPolicy,
    });
    for (const gsi of definition.GlobalSecondaryIndexes ?? []) {
      if (gsi.Projection?.ProjectionType !== 'ALL') throw new Error(`GSI ${gsi.IndexName} must project ALL`);
      table.addGlobalSecondaryIndex({
        indexName: gsi.IndexName!,
        partitionKey: key(gsi.KeySchema, 'HASH'),
        sortKey: key(gsi.KeySchema, 'RANGE'),
        projectionType: ProjectionType.ALL,
      });
    }
    return table;
  }

  private createAccessLogsBucket(): Bucket {
    const bucket = new Bucket(this, 'AccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      // Server access log delivery only supports SSE-S3 on the target bucket.
      encryption: BucketEncryption.S3_MANAGED,
      // Ownership is left to CDK: log delivery needs ACLs or a bucket policy, by feature flag.
      // Only logs live here, so expiring them never touches a conversation.
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
      removalPolicy: this.removalPolicy,
      autoDeleteObjects: false,
    });
    acknowledge(
      bucket,
      'AwsSolutions-S1',
      'This is the access-log destination of the conversation bucket; logging it into itself would loop.',
    );
    return bucket;
  }

  private createConversationBucket(): Bucket {
    // No expiration rule: segments are immutable and shared by pointer between threads, forks and
    // copies, so no object's age says whether a live thread still points to it.
    return new Bucket(this, 'Conversations', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'conversations/',
      // Cleans up uploads that never completed. With retentionDays, a distributed FORK's item list and
      // result files (`map/`, read only by the Map state that starts right after the FORK) expire too;
      // segments and values never do: they are shared, and their age says nothing about their use.
      lifecycleRules: [
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...(this.retentionDays === undefined
          ? []
          : [
              {
                id: 'expire-fork-item-lists',
                prefix: MAP_PREFIX,
                expiration: Duration.days(this.retentionDays),
              },
            ]),
      ],
      removalPolicy: this.removalPolicy,
    });
  }

  private createOperatorPolicy(): ManagedPolicy {
    const policy = new ManagedPolicy(this, 'OperatorPolicy', {
      description:
        'stepthread operators: start executions, list pending interactions, answer them, cancel runs.',
    });
    // Reads only: `pending` and `respond` Query/GetItem interaction items (open ones sit in a
    // sparse GSI1 partition, so no Scan); the answer is committed by the workflow's own function.
    policy.addStatements(
      new PolicyStatement({
        sid: 'ReadThreads',
        actions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
        resources: [this.table.tableArn, `${this.table.tableArn}/index/${GSI1_NAME}`],
      }),
      // `cancel` writes the run's cancel mark (PutItem) and moves its threads, open questions and
      // execution record to CANCELLED (conditional UpdateItems; a thread's earlier events batch moves
      // off its head with a PutItem). The only table writes an operator makes.
      new PolicyStatement({
        sid: 'CancelRuns',
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resources: [this.table.tableArn],
      }),
      // `cancel` publishes the THREAD_CANCELLED events it records to the stack's bus, as the functions
      // publish every other thread event (functions/events/publisher.ts).
      new PolicyStatement({
        sid: 'PublishCancelEvents',
        actions: ['events:PutEvents'],
        resources: [this.eventBus.eventBusArn],
      }),
      // `start <workflowId>` finds the state machine by name; the action has no resource-level scope.
      new PolicyStatement({
        sid: 'FindStateMachines',
        actions: ['states:ListStateMachines'],
        resources: ['*'],
      }),
    );
    acknowledgeWildcardResources(policy, ['*'], 'states:ListStateMachines supports no resource scope.');
    // `start` writes an input over 8 KB as a content-addressed value and starts with its reference;
    // `inspect` and `dev --target aws` read conversations and large values. Nothing else in the bucket.
    const values = this.bucket.arnForObjects('values/*');
    const segments = this.bucket.arnForObjects('segments/*');
    policy.addStatements(
      new PolicyStatement({ sid: 'WriteLargeInputs', actions: ['s3:PutObject'], resources: [values] }),
      new PolicyStatement({
        sid: 'ReadConversations',
        actions: ['s3:GetObject'],
        resources: [values, segments],
      }),
    );
    acknowledgeWildcardResources(
      policy,
      [values, segments],
      'Objects under values/ and segments/ are named by the SHA-256 of their content, so no name is known ahead; the wildcards cover those two prefixes of the conversation bucket only.',
    );
    // `copy --stack --set` checks an edit against START's declarations, in the node table the deployed
    // definition names (cli/deployed/workflow-declarations.ts).
    const nodeTables = this.bucket.arnForObjects(`${NODE_TABLE_PREFIX}*`);
    policy.addStatements(
      new PolicyStatement({ sid: 'ReadNodeTables', actions: ['s3:GetObject'], resources: [nodeTables] }),
    );
    acknowledgeWildcardResources(
      policy,
      [nodeTables],
      'Node tables are named by the SHA-256 of their content, one per compiled workflow; reads are limited to the node-tables/ prefix.',
    );
    return policy;
  }

  private createFunction(
    spec: HandlerSpec,
    root: string,
    prebuilt: boolean,
    modelAccess: ModelAccess,
    toolAccess: ToolAccess,
    tracing: boolean,
    reservedConcurrency: number | undefined,
  ): LambdaFunction {
    const name = pascalCase(spec.type);
    const logGroup = new LogGroup(this, `${name}Logs`, {
      retention: this.logRetention,
      removalPolicy: this.removalPolicy,
    });
    // A role per function, with no managed policies: each handler gets only what its node type uses.
    const role = new Role(this, `${name}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `stepthread ${spec.type} node handler`,
    });
    role.addToPolicy(
      new PolicyStatement({
        sid: 'WriteOwnLogs',
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupArn],
      }),
    );
    // Committed thread and node events go to the stepthread bus (functions/events/publisher.ts).
    role.addToPolicy(
      new PolicyStatement({
        sid: 'PublishEvents',
        actions: ['events:PutEvents'],
        resources: [this.eventBus.eventBusArn],
      }),
    );
    this.grantTable(role, spec);
    this.grantConversation(role, spec);
    if (spec.callsModels) this.grantModels(role, modelAccess);
    if (spec.callsTools) this.grantTools(role, toolAccess[spec.type as ToolCallingType]);

    const props = {
      runtime: LAMBDA_RUNTIME,
      architecture: LAMBDA_ARCHITECTURE,
      memorySize: spec.memoryMb,
      timeout: Duration.seconds(spec.timeoutSeconds),
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      ...(reservedConcurrency === undefined ? {} : { reservedConcurrentExecutions: reservedConcurrency }),
      description: `stepthread ${spec.type} node handler`,
      // State machines invoke the version published with each deploy (versionFor), and a run waiting a
      // year for an answer still invokes the one it started with: old versions are kept, not deleted.
      currentVersionOptions: {
        removalPolicy: RemovalPolicy.RETAIN,
        description: `stepthread ${spec.type} node handler, as deployed`,
      },
      environment: {
        STEPTHREAD_TARGET: 'aws',
        STEPTHREAD_TABLE: this.table.tableName,
        STEPTHREAD_BUCKET: this.bucket.bucketName,
        STEPTHREAD_EVENT_BUS: this.eventBus.eventBusName,
        POWERTOOLS_SERVICE_NAME: 'stepthread',
        ...this.telemetry?.environment,
        ...(this.retentionDays === undefined ? {} : { [RETENTION_DAYS_ENV]: String(this.retentionDays) }),
      },
      ...(this.telemetry?.layers.length ? { layers: this.telemetry.layers } : {}),
    };
    // The installed package ships its handlers prebuilt (esbuild at pack time, the same settings); from
    // the sources, NodejsFunction bundles them with the project's esbuild and lock file.
    const bundleDir = prebuilt ? prebuiltBundleDir(spec.type) : undefined;
    const verbose = isTrue(this.node.tryGetContext(VERBOSE_BUNDLING_CONTEXT));
    const fn = bundleDir
      ? new LambdaFunction(this, `${name}Function`, {
          ...props,
          code: Code.fromAsset(bundleDir),
          handler: 'index.handler',
        })
      : new NodejsFunction(this, `${name}Function`, {
          ...props,
          entry: handlerEntryPath(spec.type, root),
          projectRoot: root,
          depsLockFilePath: `${root.replace(/\/$/, '')}/package-lock.json`,
          handler: 'handler',
          bundling: spec.sandboxWorker
            ? { ...lambdaBundling(verbose), commandHooks: sandboxWorkerHooks(verbose) }
            : lambdaBundling(verbose),
        });
    if (tracing) {
      acknowledgeWildcardResources(
        role,
        ['*'],
        'X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions; the actions are write-only trace submission.',
      );
    }
    return fn;
  }

  private grantTable(role: Role, spec: HandlerSpec): void {
    // The table only, never its index: a handler's Query reads one thread's own partition (its step
    // records and latest node results), it never lists threads.
    role.addToPolicy(
      new PolicyStatement({ sid: 'ThreadTable', actions: [...spec.table], resources: [this.table.tableArn] }),
    );
    // With retentionDays, END (which ends runs, and fails them) lists a run's threads to expire them.
    if (this.retentionDays !== undefined && spec.type === 'END') {
      role.addToPolicy(
        new PolicyStatement({
          sid: 'ListThreadsOfEndedRuns',
          actions: ['dynamodb:Query'],
          resources: [`${this.table.tableArn}/index/${GSI1_NAME}`],
        }),
      );
    }
  }

  private grantConversation(role: Role, spec: HandlerSpec): void {
    const actions = {
      none: [],
      read: ['s3:GetObject'],
      write: ['s3:PutObject'],
      'read-write': ['s3:GetObject', 's3:PutObject'],
    }[spec.conversation];
    // Every handler may read segments: a large LLM output is stored as a reference to its message.
    const segmentActions = [...new Set(['s3:GetObject', ...actions])];
    const segments = this.bucket.arnForObjects(`${SEGMENT_PREFIX}*`);
    const values = this.bucket.arnForObjects(`${VALUES_PREFIX}*`);
    role.addToPolicy(
      new PolicyStatement({ sid: 'ConversationSegments', actions: segmentActions, resources: [segments] }),
    );
    // Every handler reads and writes large values by reference (claim check), under values/ only.
    role.addToPolicy(
      new PolicyStatement({
        sid: 'LargeValues',
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [values],
      }),
    );
    // Every handler reads the node tables its Tasks name (engine/asl/node-table.ts), and nothing else
    // under node-tables/: the deploy writes them, no function does.
    const nodeTables = this.bucket.arnForObjects(`${NODE_TABLE_PREFIX}*`);
    role.addToPolicy(
      new PolicyStatement({ sid: 'NodeTables', actions: ['s3:GetObject'], resources: [nodeTables] }),
    );
    acknowledgeWildcardResources(
      role,
      [nodeTables],
      'Node tables are named by the SHA-256 of their content, one per compiled workflow; reads are limited to the node-tables/ prefix.',
    );
    // Without s3:ListBucket, S3 answers a GetObject of a missing key with 403 AccessDenied instead of 404
    // NoSuchKey, and the stores could not tell a missing segment or value from a denied one. The grant
    // cannot be narrowed by an s3:prefix condition (GetObject's existence check carries no prefix), and
    // this bucket holds nothing but segments/, values/ and the map/ objects of FORKs over a list.
    role.addToPolicy(
      new PolicyStatement({
        sid: 'MissingKeysAreNotFound',
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
      }),
    );
    acknowledgeWildcardResources(
      role,
      [segments, values],
      'Segment and value keys are content hashes known only at run time; access is limited to the segments/ and values/ prefixes of the conversation bucket.',
    );
    // An item of a FORK over a list creates its thread on its first step, whatever its node type (or
    // in its branch's failure report, JOIN), from two range reads of the FORK's item source.
    const itemSources = this.bucket.arnForObjects(`${ITEM_SOURCE_PREFIX}*`);
    role.addToPolicy(
      new PolicyStatement({ sid: 'MapItemSources', actions: ['s3:GetObject'], resources: [itemSources] }),
    );
    acknowledgeWildcardResources(
      role,
      [itemSources],
      'Item source keys derive from thread ids known only at run time; reads are limited to the map/sources/ prefix.',
    );
    if (spec.type === 'FORK') {
      // A FORK over a list writes its item source, and when distributed the item list its Distributed
      // Map reads (ItemReader).
      const itemLists = this.bucket.arnForObjects(`${ITEM_LIST_PREFIX}*`);
      role.addToPolicy(
        new PolicyStatement({
          sid: 'MapItemLists',
          actions: ['s3:PutObject'],
          resources: [itemSources, itemLists],
        }),
      );
      acknowledgeWildcardResources(
        role,
        [itemLists],
        'Item list keys derive from thread ids known only at run time; writes are limited to the map/sources/ and map/items/ prefixes.',
      );
    }
  }

  private grantModels(role: Role, access: ModelAccess): void {
    const { partition, region, account } = Stack.of(this);
    if (access.secretNames.length > 0) {
      role.addToPolicy(
        new PolicyStatement({
          sid: 'ProfileSecrets',
          actions: ['secretsmanager:GetSecretValue'],
          // Secrets Manager appends six random characters to a secret's name in its ARN.
          resources: access.secretNames.map(
            (name) => `arn:${partition}:secretsmanager:${region}:${account}:secret:${name}-??????`,
          ),
        }),
      );
    }
    const parameters = access.ssmParameterNames ?? [];
    if (parameters.length > 0) {
      role.addToPolicy(
        new PolicyStatement({
          sid: 'ProfileParameters',
          actions: ['ssm:GetParameter'],
          // Parameter ARNs carry the name without its leading slash.
          resources: parameters.map(
            (name) => `arn:${partition}:ssm:${region}:${account}:parameter/${name.replace(/^\//, '')}`,
          ),
        }),
      );
    }
    if (access.bedrockModels.length === 0) return;
    const models = bedrockResources(access.bedrockModels, { partition, region, account });
    role.addToPolicy(
      new PolicyStatement({
        sid: 'BedrockModels',
        effect: Effect.ALLOW,
        actions: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'],
        resources: [...models.exact, ...models.anyRegion],
      }),
    );
    acknowledgeWildcardResources(
      role,
      models.anyRegion,
      'A cross-region inference profile routes each request to any region of its geography; only the named foundation model is allowed.',
    );
  }

  /** Exactly the Lambda functions and secrets of the tools this handler's nodes use. */
  private grantTools(role: Role, access: ToolRequirements): void {
    const { partition, region, account } = Stack.of(this);
    if (access.lambdaArns.length > 0) {
      role.addToPolicy(
        new PolicyStatement({
          sid: 'ToolFunctions',
          actions: ['lambda:InvokeFunction'],
          // A tool may name its function by ARN or by name (then it is in this account and region).
          resources: access.lambdaArns.map((target) =>
            target.startsWith('arn:')
              ? target
              : `arn:${partition}:lambda:${region}:${account}:function:${target}`,
          ),
        }),
      );
    }
    if (access.secretNames.length > 0) {
      role.addToPolicy(
        new PolicyStatement({
          sid: 'ToolSecrets',
          actions: ['secretsmanager:GetSecretValue'],
          // Secrets Manager appends six random characters to a secret's name in its ARN.
          resources: access.secretNames.map(
            (name) => `arn:${partition}:secretsmanager:${region}:${account}:secret:${name}-??????`,
          ),
        }),
      );
    }
  }
}

function pascalCase(type: NodeType): string {
  return type
    .toLowerCase()
    .split('_')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
