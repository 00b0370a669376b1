/**
 * The repository's stack: one shared runtime and one state machine per workflow, with the outputs the
 * CLI and the console need (each workflow's state machine ARN here; the runtime adds the rest). Users
 * with their own CDK app use StepthreadRuntime and addStepthreadWorkflows the same way.
 */
import { type NestedStack, type RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import type { NodeType, Trigger } from '../engine/model/schema.ts';
import type { LoadedWorkflow } from './load-workflows.ts';
import { collectModelAccess } from './model-access.ts';
import type { OpenTelemetryProps } from './open-telemetry.ts';
import { StepthreadRuntime } from './runtime.ts';
import { StepthreadStreaming } from './streaming.ts';
import { collectToolAccess } from './tool-access.ts';
import type { StepthreadWorkflow } from './workflow.ts';
import { addStepthreadWorkflows } from './workflow-set.ts';

export interface StepthreadStackProps extends StackProps {
  readonly workflows: readonly LoadedWorkflow[];
  /** Prefix of physical names (default `stepthread`). */
  readonly namePrefix?: string;
  /** Workflow ids to deploy as EXPRESS state machines (default: all STANDARD). */
  readonly expressWorkflows?: readonly string[];
  /** Triggers from stack configuration, per workflow id, added to those in the workflow files. */
  readonly extraTriggers?: Readonly<Record<string, readonly Trigger[]>>;
  readonly removalPolicy?: RemovalPolicy;
  /** Days an ended run is kept (default: forever); see StepthreadRuntimeProps.retentionDays. */
  readonly retentionDays?: number;
  readonly triggerBus?: IEventBus;
  /** Root the handler entries are resolved against (default: this repository). */
  readonly projectRoot?: string;
  /** Continue-as-new threshold of the STANDARD state machines (default 20,000 history events; false: off). */
  readonly continueAfterEvents?: number | false;
  /** Reserved concurrency per node type's function (StepthreadRuntimeProps.reservedConcurrency). */
  readonly reservedConcurrency?: Readonly<Partial<Record<NodeType, number>>>;
  /**
   * Publish the replies LLM nodes stream to an AppSync Events API of the stack, for `stepthread watch`
   * and `dev --target aws` (default true; infra/streaming.ts). Off, replies are asked for whole.
   */
  readonly streaming?: boolean;
  /** OpenTelemetry traces from every function (StepthreadRuntimeProps.openTelemetry). */
  readonly openTelemetry?: OpenTelemetryProps;
}

export class StepthreadStack extends Stack {
  readonly runtime: StepthreadRuntime;
  /** The Events API streamed replies are published to (absent with `streaming: false`). */
  readonly streaming?: StepthreadStreaming;
  readonly workflows: ReadonlyMap<string, StepthreadWorkflow>;
  /** The nested stacks holding the workflows when they do not fit in this one (else empty). */
  readonly workflowStacks: NestedStack[];

  constructor(scope: Construct, id: string, props: StepthreadStackProps) {
    super(scope, id, props);
    this.runtime = new StepthreadRuntime(this, 'Runtime', {
      modelAccess: collectModelAccess(props.workflows.map(({ workflow }) => workflow)),
      toolAccess: collectToolAccess(props.workflows.map(({ workflow }) => workflow)),
      ...(props.namePrefix ? { namePrefix: props.namePrefix } : {}),
      ...(props.removalPolicy ? { removalPolicy: props.removalPolicy } : {}),
      ...(props.triggerBus ? { triggerBus: props.triggerBus } : {}),
      ...(props.projectRoot ? { projectRoot: props.projectRoot } : {}),
      ...(props.reservedConcurrency ? { reservedConcurrency: props.reservedConcurrency } : {}),
      ...(props.openTelemetry ? { openTelemetry: props.openTelemetry } : {}),
      ...(props.retentionDays === undefined ? {} : { retentionDays: props.retentionDays }),
    });
    if ((props.streaming ?? true) && this.runtime.nodeTypes.includes('LLM')) {
      this.streaming = new StepthreadStreaming(this, 'Streaming', { runtime: this.runtime });
    }

    const added = addStepthreadWorkflows(this, {
      runtime: this.runtime,
      workflows: props.workflows,
      ...(props.expressWorkflows ? { expressWorkflows: props.expressWorkflows } : {}),
      ...(props.extraTriggers ? { extraTriggers: props.extraTriggers } : {}),
      ...(props.continueAfterEvents === undefined ? {} : { continueAfterEvents: props.continueAfterEvents }),
    });
    this.workflowStacks = [...added.nestedStacks];
    this.workflows = added.workflows;
    // The runtime added the outputs the CLI reads (TableName, BucketName, …).
  }
}
