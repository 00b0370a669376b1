/**
 * The repository's stack: one shared runtime and one state machine per workflow, with the outputs the
 * CLI and the console need. Users with their own CDK app can use the two constructs directly instead.
 */
import { CfnOutput, type RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import type { Trigger } from '../engine/model/schema.ts';
import type { LoadedWorkflow } from './load-workflows.ts';
import { collectModelAccess } from './model-access.ts';
import { StepthreadRuntime } from './runtime.ts';
import { collectToolAccess } from './tool-access.ts';
import { StepthreadWorkflow, type WorkflowExecutionType } from './workflow.ts';

export interface StepthreadStackProps extends StackProps {
  readonly workflows: readonly LoadedWorkflow[];
  /** Prefix of physical names (default `stepthread`). */
  readonly namePrefix?: string;
  /** Workflow ids to deploy as EXPRESS state machines (default: all STANDARD). */
  readonly expressWorkflows?: readonly string[];
  /** Triggers from stack configuration, per workflow id, added to those in the workflow files. */
  readonly extraTriggers?: Readonly<Record<string, readonly Trigger[]>>;
  readonly removalPolicy?: RemovalPolicy;
  readonly triggerBus?: IEventBus;
  /** Root the handler entries are resolved against (default: this repository). */
  readonly projectRoot?: string;
  /** Continue-as-new threshold of the STANDARD state machines (default 20,000 history events; false: off). */
  readonly continueAfterEvents?: number | false;
}

export class StepthreadStack extends Stack {
  readonly runtime: StepthreadRuntime;
  readonly workflows: ReadonlyMap<string, StepthreadWorkflow>;

  constructor(scope: Construct, id: string, props: StepthreadStackProps) {
    super(scope, id, props);
    const express = new Set(props.expressWorkflows ?? []);
    const known = new Set(props.workflows.map(({ workflow }) => workflow.id));
    for (const id of [...express, ...Object.keys(props.extraTriggers ?? {})]) {
      if (!known.has(id))
        throw new Error(`stack configuration names workflow "${id}", which is not deployed`);
    }

    this.runtime = new StepthreadRuntime(this, 'Runtime', {
      modelAccess: collectModelAccess(props.workflows.map(({ workflow }) => workflow)),
      toolAccess: collectToolAccess(props.workflows.map(({ workflow }) => workflow)),
      ...(props.namePrefix ? { namePrefix: props.namePrefix } : {}),
      ...(props.removalPolicy ? { removalPolicy: props.removalPolicy } : {}),
      ...(props.triggerBus ? { triggerBus: props.triggerBus } : {}),
      ...(props.projectRoot ? { projectRoot: props.projectRoot } : {}),
    });

    const workflows = new Map<string, StepthreadWorkflow>();
    const outputIds = new Set<string>();
    for (const { workflow, file } of props.workflows) {
      const executionType: WorkflowExecutionType = express.has(workflow.id) ? 'EXPRESS' : 'STANDARD';
      const construct = new StepthreadWorkflow(this, `Workflow-${workflow.id}`, {
        runtime: this.runtime,
        workflow,
        executionType,
        extraTriggers: props.extraTriggers?.[workflow.id] ?? [],
        ...(props.continueAfterEvents === undefined
          ? {}
          : { continueAfterEvents: props.continueAfterEvents }),
      });
      workflows.set(workflow.id, construct);
      new CfnOutput(this, uniqueOutputId(`${alphanumeric(workflow.id)}StateMachineArn`, outputIds), {
        description: `State machine of workflow ${workflow.id} (${file}, ${executionType})`,
        value: construct.stateMachine.stateMachineArn,
      });
    }
    this.workflows = workflows;

    new CfnOutput(this, 'TableName', { value: this.runtime.table.tableName });
    new CfnOutput(this, 'BucketName', { value: this.runtime.bucket.bucketName });
    new CfnOutput(this, 'EventBusName', { value: this.runtime.eventBus.eventBusName });
    new CfnOutput(this, 'OperatorPolicyArn', {
      description: 'Attach to whoever runs stepthread start | pending | respond',
      value: this.runtime.operatorPolicy.managedPolicyArn,
    });
  }
}

function alphanumeric(id: string): string {
  return id
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

function uniqueOutputId(wanted: string, taken: Set<string>): string {
  let id = wanted;
  for (let n = 2; taken.has(id); n++) id = `${wanted}${n}`;
  taken.add(id);
  return id;
}
