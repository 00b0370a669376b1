/**
 * One workflow on AWS: its state machine (the compiled ASL in an Fn::Join that puts the runtime's
 * function ARN where each `${Fn_<TYPE>}` placeholder was, so user text is deployed unchanged), logging
 * and tracing, the state machine version this deploy publishes and the `live` alias pointing at it
 * (runs start on the alias: pinned), and one EventBridge rule per trigger declared in the workflow
 * file, starting the alias, with a dead-letter queue for failed deliveries.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArnFormat, type CfnResource, Duration, Fn, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  EventField,
  type EventPattern,
  type IEventBus,
  type IRuleRef,
  type IRuleTarget,
  Rule,
  type RuleTargetConfig,
  RuleTargetInput,
} from 'aws-cdk-lib/aws-events';
import {
  addToDeadLetterQueueResourcePolicy,
  bindBaseTargetConfig,
  singletonEventRole,
  type TargetBaseProps,
} from 'aws-cdk-lib/aws-events-targets';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import {
  CfnStateMachineAlias,
  CfnStateMachineVersion,
  DefinitionBody,
  LogLevel,
  StateMachine,
  StateMachineType,
} from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { nodesAskingApproval } from '../engine/asl/compile.ts';
import { forEachState, START_EXECUTION_RESOURCE } from '../engine/asl/index.ts';
import { StepthreadError } from '../engine/errors.ts';
import { buildGraph } from '../engine/graph/build.ts';
import type { NodeType, Trigger, Workflow } from '../engine/model/schema.ts';
import { definitionFitsTemplate, deployLimitProblems } from '../engine/validation/deploy-limits.ts';
import { stdioServerProblems } from '../engine/validation/mcp-rules.ts';
import { STATE_MACHINE_ALIAS } from '../functions/aws/state-machine-arns.ts';
import { ITEM_LIST_PREFIX, MAP_RESULTS_PREFIX } from '../functions/stores/item-lists.ts';
import { type CompiledWorkflow, compileForDeploy, definitionParts } from './compile.ts';
import { nodeTypeOfSubstitutionKey } from './handler-registry.ts';
import { acknowledge, acknowledgeWildcardResources } from './nag.ts';
import type { StepthreadRuntime } from './runtime.ts';

export type WorkflowExecutionType = 'STANDARD' | 'EXPRESS';

/**
 * The definition as a file for its S3 asset (CDK stages a copy named by its hash). DefinitionSubstitutions
 * replace each `${key}` they name, so the text may hold no `${` but the function placeholders: a graph
 * with one (a node or path id) is refused, coded, rather than deployed altered.
 */
function definitionFile(workflowId: string, definitionText: string): string {
  const other = definitionText.replace(/\$\{Fn_[A-Z_]+\}/g, '').indexOf('${');
  if (other !== -1) {
    throw new StepthreadError(
      'DEPLOY_LIMIT_EXCEEDED',
      `workflow ${workflowId}'s definition is too large for a CloudFormation template, so it deploys from S3 with DefinitionSubstitutions, which would change the "\${" in its ids; rename the node or path whose id holds "\${"`,
    );
  }
  return contentAddressedFile(definitionText);
}

/**
 * `text` in a file named by its SHA-256, under one directory of the temporary directory (the user's
 * own): written when absent, so synthesizing the same definition again adds no file (a fresh
 * directory per synth left one more in /tmp each time). The file must outlive the constructor: with
 * asset staging disabled (`aws:cdk:disable-asset-staging`) the assembly points at it, not at a copy.
 * Its name does not change the asset's hash: CDK hashes a single file's content only.
 */
function contentAddressedFile(text: string): string {
  const uid = process.getuid?.();
  const dir = join(tmpdir(), `stepthread-definitions${uid === undefined ? '' : `-${uid}`}`);
  const file = join(dir, `${createHash('sha256').update(text).digest('hex')}.asl.json`);
  if (readIfPresent(file) === text) return file;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Written aside and renamed into place: a synth running at the same time never reads it half written.
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, text);
  renameSync(aside, file);
  return file;
}

function readIfPresent(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export interface StepthreadWorkflowProps {
  readonly runtime: StepthreadRuntime;
  /** A workflow that passed `validateWorkflow`. */
  readonly workflow: Workflow;
  /**
   * STANDARD (default) runs up to a year and can wait for people; EXPRESS is cheaper for short runs and
   * is refused for workflows with a USER_INTERACTION node, which needs `.waitForTaskToken`.
   */
  readonly executionType?: WorkflowExecutionType;
  /** Default `<runtime.namePrefix>-<workflow id>`: stable, so the CLI can address it. */
  readonly stateMachineName?: string;
  /** Overrides the runtime's trigger bus for this workflow's triggers. */
  readonly triggerBus?: IEventBus;
  /** Extra triggers on top of those in the workflow file (e.g. from stack configuration). */
  readonly extraTriggers?: readonly Trigger[];
  /** The compiled definition, if already compiled (default: compiled here). */
  readonly compiled?: CompiledWorkflow;
  /**
   * Continue-as-new (STANDARD only): once an execution's history nears this many events, a long run
   * continues in a new execution of this state machine. Default 20,000; `false` turns it off. EXPRESS
   * state machines have no history limit and never continue.
   */
  readonly continueAfterEvents?: number | false;
}

export class StepthreadWorkflow extends Construct {
  readonly stateMachine: StateMachine;
  readonly stateMachineName: string;
  /**
   * The state machine version this deploy publishes: a new one whenever the definition (and so any
   * function version it invokes) changed. Kept when a later deploy replaces it, so a run that
   * continues in a new execution can still start the version it runs on.
   */
  readonly version: CfnStateMachineVersion;
  /** `live`, pointed at this deploy's version: the CLI and the triggers start executions on it. */
  readonly alias: CfnStateMachineAlias;
  readonly logGroup: LogGroup;
  readonly triggers: Rule[] = [];
  /** Receives events a trigger could not deliver (after EventBridge's retries); absent without triggers. */
  readonly deadLetterQueue: Queue | undefined;
  /** The compiled ASL before substitution, with its placeholder keys. */
  readonly compiled: CompiledWorkflow;
  /** Node types whose functions this state machine invokes. */
  readonly nodeTypes: readonly NodeType[];
  /** The definition is an S3 asset (DefinitionS3Location), too large for its template. */
  readonly definitionInS3: boolean;

  constructor(scope: Construct, id: string, props: StepthreadWorkflowProps) {
    super(scope, id);
    const { runtime, workflow } = props;
    const executionType = props.executionType ?? 'STANDARD';
    if (executionType === 'EXPRESS' && hasUserInteraction(workflow)) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `workflow ${workflow.id} has a USER_INTERACTION node, which needs a STANDARD state machine (EXPRESS cannot wait for a task token)`,
      );
    }
    const asking = executionType === 'EXPRESS' ? nodesAskingApproval(buildGraph(workflow)) : [];
    if (asking.length > 0) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `workflow ${workflow.id}: LLM node ${asking[0]!.id} offers a tool that requires approval, which needs a STANDARD state machine (EXPRESS cannot wait for a task token)`,
      );
    }
    const stdio = stdioServerProblems(workflow);
    if (stdio.length > 0) {
      throw new StepthreadError(
        'MCP_STDIO_NOT_DEPLOYABLE',
        `workflow ${workflow.id} cannot be deployed: ${stdio.map((problem) => problem.message).join('; ')}`,
      );
    }
    const tooLong = executionType === 'EXPRESS' ? expressTimerProblems(workflow) : [];
    if (tooLong.length > 0) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `workflow ${workflow.id} cannot run as EXPRESS, whose executions end after ${EXPRESS_MAX_SECONDS / 60} minutes: ${tooLong.join('; ')}`,
      );
    }
    this.stateMachineName = props.stateMachineName ?? `${runtime.namePrefix}-${workflow.id}`;
    const continueAfterEvents = executionType === 'EXPRESS' ? false : props.continueAfterEvents;
    this.compiled =
      props.compiled ??
      compileForDeploy(workflow, {
        ...(continueAfterEvents === undefined ? {} : { continueAfterEvents }),
        ...(runtime.traceContext ? { traceContext: true } : {}),
      });
    const limits = deployLimitProblems(workflow, this.compiled.definition);
    if (limits.length > 0) {
      throw new StepthreadError(
        'DEPLOY_LIMIT_EXCEEDED',
        `workflow ${workflow.id} cannot be deployed: ${limits.map((problem) => problem.message).join('; ')}`,
      );
    }
    // The Tasks name their nodes in this table: the deploy stores it where the functions read it.
    const nodeTables = runtime.storeNodeTable(this.compiled.nodeTable);
    const substitutions = functionSubstitutions(this.compiled.substitutionKeys, runtime);
    this.nodeTypes = substitutions.map(({ type }) => type);

    this.logGroup = new LogGroup(this, 'ExecutionLogs', {
      // The /aws/vendedlogs/ prefix keeps CloudWatch's log resource policy from growing per state machine.
      logGroupName: `/aws/vendedlogs/states/${this.stateMachineName}`,
      retention: runtime.logRetention,
      removalPolicy: runtime.removalPolicy,
    });

    // Each Task invokes its function's version of this deploy (pinned: a later deploy does not change
    // the code under a run that started before it).
    const functionArns = new Map(
      substitutions.map(({ key, type }) => [key, runtime.versionFor(type).functionArn]),
    );
    const definitionText = JSON.stringify(this.compiled.definition);
    this.definitionInS3 = !definitionFitsTemplate(workflow, definitionText);
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineName: this.stateMachineName,
      stateMachineType: executionType === 'EXPRESS' ? StateMachineType.EXPRESS : StateMachineType.STANDARD,
      ...(this.definitionInS3
        ? {
            // Too large for a template (a graph of ~1,800 nodes and more): an S3 asset the deploy
            // uploads (DefinitionS3Location), its placeholders bound by DefinitionSubstitutions. That
            // would also take a `${name}` of the workflow's own text, but the definition holds the graph
            // alone (node configs are in the node table), and definitionFile refuses any other `${`.
            definitionBody: DefinitionBody.fromFile(definitionFile(workflow.id, definitionText)),
            definitionSubstitutions: Object.fromEntries(functionArns),
          }
        : {
            // An Fn::Join puts each function's ARN where its `${Fn_<TYPE>}` was and leaves all other
            // text as it is. Not Fn::Sub (no escaping of `${` survives a nested template literal).
            definitionBody: DefinitionBody.fromString(
              Fn.join(
                '',
                definitionParts(this.compiled).map((part) =>
                  typeof part === 'string' ? part : functionArns.get(part.functionKey)!,
                ),
              ),
            ),
          }),
      logs: { destination: this.logGroup, level: LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
      comment: workflow.description ?? `stepthread workflow ${workflow.id} v${workflow.version}`,
    });
    this.version = new CfnStateMachineVersion(this, 'Version', {
      stateMachineArn: this.stateMachine.stateMachineArn,
      // Changes with every change of the definition (or role, logging, tracing): CloudFormation then
      // replaces this resource, which publishes a new version; Retain keeps the one it replaces.
      stateMachineRevisionId: this.stateMachine.stateMachineRevisionId,
      description: `stepthread workflow ${workflow.id} v${workflow.version}, as deployed`,
    });
    this.version.applyRemovalPolicy(RemovalPolicy.RETAIN);
    this.alias = new CfnStateMachineAlias(this, 'Alias', {
      name: STATE_MACHINE_ALIAS,
      description: 'The version of the latest deploy: new runs start here (pinned to it until they end).',
      routingConfiguration: [{ stateMachineVersionArn: this.version.attrArn, weight: 100 }],
    });
    // No definition naming the table is live before the table is stored: a run started mid-deploy on
    // the new version (or on the state machine itself) would find no table (NODE_TABLE_NOT_FOUND).
    for (const resource of [this.stateMachine, this.version, this.alias])
      resource.node.addDependency(nodeTables);
    if (
      !this.definitionInS3 &&
      definitionParts(this.compiled).some((part) => typeof part === 'string' && part.includes('${'))
    ) {
      // `${…}` in the workflow's own text (a template literal, a prompt) is deployed literally: outside
      // an Fn::Sub CloudFormation substitutes nothing. The linters' "a variable outside Fn::Sub" rule
      // (E1029, in CDK's own validation and cfn-lint) guesses otherwise; both are told here.
      const reason =
        'The definition carries the workflow text verbatim in an Fn::Join; CloudFormation substitutes variables only inside Fn::Sub.';
      acknowledge(this.stateMachine, 'CloudFormation-Validate::E1029', reason);
      (this.stateMachine.node.defaultChild as CfnResource).addMetadata('cfn-lint', {
        config: { ignore_checks: ['E1029'] },
      });
    }
    // Only the functions this definition names, each in any of its versions: a run started before the
    // latest deploy invokes the versions it started with.
    if (substitutions.length > 0) {
      const versions = substitutions.map(({ type }) => `${runtime.functionFor(type).functionArn}:*`);
      this.stateMachine.addToRolePolicy(
        new PolicyStatement({
          sid: 'InvokeNodeHandlers',
          actions: ['lambda:InvokeFunction'],
          resources: versions,
        }),
      );
      const reason =
        'Every published version of the node functions this definition names: runs that started before a deploy invoke the versions they started with (pinned), so older versions must stay invocable.';
      for (const { type } of substitutions) {
        const fn = runtime.functionFor(type);
        if (Stack.of(fn) === Stack.of(this)) {
          acknowledgeWildcardResources(this.stateMachine, [`${fn.functionArn}:*`], reason);
        } else {
          // From a nested stack the ARN arrives as the parameter CDK names after the function.
          const parameter = `referenceto${Names.uniqueId(fn.node.defaultChild!)}Arn`;
          acknowledge(this.stateMachine, `AwsSolutions-IAM5[Resource::<${parameter}>:*]`, reason);
        }
      }
    }
    if (continuesRuns(this.compiled)) {
      // Continue-as-new starts this same state machine (states:startExecution, fire and forget). Its
      // ARN is built from the name: referencing the state machine's own ARN from its role's policy
      // would make a CloudFormation dependency cycle.
      this.stateMachine.addToRolePolicy(
        new PolicyStatement({
          sid: 'ContinueAsNew',
          actions: ['states:StartExecution'],
          resources: [
            Stack.of(this).formatArn({
              service: 'states',
              resource: 'stateMachine',
              resourceName: this.stateMachineName,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          ],
        }),
      );
    }
    if (hasDistributedMap(this.compiled)) this.grantDistributedMaps(runtime);
    acknowledgeWildcardResources(
      this.stateMachine,
      ['*'],
      'CloudWatch Logs delivery (logs:CreateLogDelivery, ...) and X-Ray trace submission support no resource-level permissions; Step Functions requires them for logging ALL and tracing.',
    );
    runtime.registerStateMachine(this.stateMachine, this.stateMachineName);

    const triggers = [...(workflow.triggers ?? []), ...(props.extraTriggers ?? [])];
    this.deadLetterQueue = triggers.length > 0 ? this.createDeadLetterQueue() : undefined;
    const bus = props.triggerBus ?? runtime.triggerBus;
    triggers.forEach((trigger, index) => {
      this.triggers.push(this.createTrigger(trigger, index, bus, this.deadLetterQueue!));
    });
  }

  /**
   * A Distributed Map runs its items as child executions of this state machine, reads the item list
   * the FORK wrote under map/items/ and writes results under map/results/. Its ARN is built from the
   * name (as for continue-as-new) to avoid a dependency cycle.
   */
  private grantDistributedMaps(runtime: StepthreadRuntime): void {
    const stack = Stack.of(this);
    const own = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: this.stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const executions = stack.formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${this.stateMachineName}/*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const itemLists = runtime.bucket.arnForObjects(`${ITEM_LIST_PREFIX}*`);
    const results = runtime.bucket.arnForObjects(`${MAP_RESULTS_PREFIX}*`);
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        sid: 'DistributedMapChildren',
        actions: ['states:StartExecution'],
        resources: [own],
      }),
    );
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        sid: 'DistributedMapRuns',
        actions: ['states:DescribeExecution', 'states:StopExecution'],
        resources: [executions],
      }),
    );
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({ sid: 'DistributedMapItems', actions: ['s3:GetObject'], resources: [itemLists] }),
    );
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        sid: 'DistributedMapResults',
        actions: ['s3:PutObject', 's3:ListMultipartUploadParts', 's3:AbortMultipartUpload'],
        resources: [results],
      }),
    );
    acknowledgeWildcardResources(
      this.stateMachine,
      [executions, itemLists, results],
      "A Distributed Map's child executions, item lists and result files are named at run time; access is limited to this state machine's executions and the map/items/ and map/results/ prefixes.",
    );
  }

  private createDeadLetterQueue(): Queue {
    const queue = new Queue(this, 'TriggerDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      queue,
      'AwsSolutions-SQS3',
      'This queue is itself the dead-letter queue of the workflow trigger rules; it has no further DLQ.',
    );
    return queue;
  }

  private createTrigger(trigger: Trigger, index: number, bus: IEventBus, dlq: Queue): Rule {
    return new Rule(this, `Trigger${index + 1}`, {
      eventBus: bus,
      description: trigger.description ?? `Starts ${this.stateMachineName} on matching events.`,
      eventPattern: toCdkEventPattern(trigger.eventPattern),
      targets: [
        new LiveAliasTarget(this.stateMachine, this.alias.attrArn, {
          // The START task reads the run's input from `input`; the whole event becomes it.
          input: RuleTargetInput.fromObject({ input: EventField.fromPath('$') }),
          deadLetterQueue: dlq,
          retryAttempts: 8,
          maxEventAge: Duration.hours(24),
        }),
      ],
    });
  }
}

/**
 * A rule target that starts executions on the state machine's alias (aws-events-targets'
 * SfnStateMachine, aimed at the alias). IAM authorises StartExecution on an alias or version against
 * the state machine's own, unqualified ARN, so that is what the rule's role is granted.
 */
class LiveAliasTarget implements IRuleTarget {
  private readonly role: IRole;

  constructor(
    private readonly machine: StateMachine,
    private readonly aliasArn: string,
    private readonly props: TargetBaseProps & { readonly input: RuleTargetInput },
  ) {
    this.role = singletonEventRole(machine);
    machine.grantStartExecution(this.role);
  }

  bind(rule: IRuleRef): RuleTargetConfig {
    if (this.props.deadLetterQueue) addToDeadLetterQueueResourcePolicy(rule, this.props.deadLetterQueue);
    return {
      ...bindBaseTargetConfig(this.props),
      arn: this.aliasArn,
      role: this.role,
      input: this.props.input,
      targetResource: this.machine,
    };
  }
}

/** `Fn_<TYPE>` keys of the compiled ASL, each resolved to a node type the runtime deploys. */
function functionSubstitutions(
  keys: readonly string[],
  runtime: StepthreadRuntime,
): { key: string; type: NodeType }[] {
  return keys.map((key) => {
    const type = nodeTypeOfSubstitutionKey(key);
    if (!type) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `unknown substitution key \${${key}} in compiled ASL`,
      );
    }
    runtime.functionFor(type); // fails early, naming the missing handler
    return { key, type };
  });
}

/** Whether the definition has a continue-as-new Task (a `states:startExecution` of itself). */
/** Whether the definition has a Distributed Map (a FORK over a list with `mode: distributed`). */
function hasDistributedMap(compiled: CompiledWorkflow): boolean {
  let found = false;
  forEachState(compiled.definition, (_name, state) => {
    if (state.Type === 'Map' && state.ItemProcessor.ProcessorConfig.Mode === 'DISTRIBUTED') found = true;
  });
  return found;
}

function continuesRuns(compiled: CompiledWorkflow): boolean {
  let found = false;
  forEachState(compiled.definition, (_name, state) => {
    if (state.Type === 'Task' && state.Resource === START_EXECUTION_RESOURCE) found = true;
  });
  return found;
}

/** An EXPRESS execution is stopped after five minutes. */
export const EXPRESS_MAX_SECONDS = 300;

/** Timers and node time limits of a workflow (subgraphs included) that can outlast an EXPRESS execution. */
export function expressTimerProblems(workflow: Workflow): string[] {
  return workflow.nodes.flatMap((node): string[] => {
    if (node.type === 'JOIN' && (node.config.timeout ?? 0) > EXPRESS_MAX_SECONDS) {
      return [`JOIN ${node.id} waits up to ${node.config.timeout} s`];
    }
    if (node.type === 'CODE' && (node.config.timeoutMs ?? 0) > EXPRESS_MAX_SECONDS * 1000) {
      return [`CODE ${node.id} may run for ${node.config.timeoutMs} ms`];
    }
    if (node.type === 'SUBGRAPH') return expressTimerProblems(node.config.workflow);
    return [];
  });
}

function hasUserInteraction(workflow: Workflow): boolean {
  return workflow.nodes.some(
    (node) =>
      node.type === 'USER_INTERACTION' ||
      (node.type === 'SUBGRAPH' && hasUserInteraction(node.config.workflow)),
  );
}

/** EventBridge's top-level pattern fields and their CDK names; nothing else may sit at the top level. */
const PATTERN_FIELDS: Readonly<Record<string, keyof EventPattern>> = {
  version: 'version',
  id: 'id',
  'detail-type': 'detailType',
  source: 'source',
  account: 'account',
  time: 'time',
  region: 'region',
  resources: 'resources',
  detail: 'detail',
};

/**
 * The workflow file holds a raw EventBridge pattern (`detail-type`); CDK spells the top-level fields in
 * camelCase and renders them back, so the deployed pattern equals the file's.
 */
export function toCdkEventPattern(pattern: Readonly<Record<string, unknown>>): EventPattern {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(pattern)) {
    const cdkField = PATTERN_FIELDS[field];
    if (!cdkField) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `trigger eventPattern has unknown top-level field "${field}"; expected ${Object.keys(PATTERN_FIELDS).join(', ')}`,
      );
    }
    out[cdkField] = value;
  }
  if (Object.keys(out).length === 0) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      'trigger eventPattern is empty; it would match every event',
    );
  }
  return out as EventPattern;
}
