/**
 * The repository's stack: one shared runtime and one state machine per workflow, with the outputs the
 * CLI and the console need (each workflow's state machine ARN here; the runtime adds the rest). Users with their own CDK app can use the two constructs directly instead.
 */
import { CfnOutput, NestedStack, type RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import type { NodeType, Trigger } from '../engine/model/schema.ts';
import { type CompiledWorkflow, compileForDeploy } from './compile.ts';
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
  /** Days an ended run is kept (default: forever); see StepthreadRuntimeProps.retentionDays. */
  readonly retentionDays?: number;
  readonly triggerBus?: IEventBus;
  /** Root the handler entries are resolved against (default: this repository). */
  readonly projectRoot?: string;
  /** Continue-as-new threshold of the STANDARD state machines (default 20,000 history events; false: off). */
  readonly continueAfterEvents?: number | false;
  /** Reserved concurrency per node type's function (StepthreadRuntimeProps.reservedConcurrency). */
  readonly reservedConcurrency?: Readonly<Partial<Record<NodeType, number>>>;
}

export class StepthreadStack extends Stack {
  readonly runtime: StepthreadRuntime;
  readonly workflows: ReadonlyMap<string, StepthreadWorkflow>;
  /** The nested stacks holding the workflows when they do not fit in this one (else empty). */
  readonly workflowStacks: NestedStack[];

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
      ...(props.reservedConcurrency ? { reservedConcurrency: props.reservedConcurrency } : {}),
      ...(props.retentionDays === undefined ? {} : { retentionDays: props.retentionDays }),
    });

    const workflows = new Map<string, StepthreadWorkflow>();
    const planned = props.workflows.map(({ workflow, file }) => {
      const executionType: WorkflowExecutionType = express.has(workflow.id) ? 'EXPRESS' : 'STANDARD';
      const continueAfterEvents = executionType === 'EXPRESS' ? false : props.continueAfterEvents;
      const compiled = compileForDeploy(
        workflow,
        continueAfterEvents === undefined ? {} : { continueAfterEvents },
      );
      const triggers = (workflow.triggers?.length ?? 0) + (props.extraTriggers?.[workflow.id]?.length ?? 0);
      return { workflow, file, executionType, compiled, cost: workflowCost(compiled, triggers) };
    });
    const groups = stackGroups(planned.map(({ cost }) => cost));
    this.workflowStacks = [];
    groups.forEach((group, index) => {
      // Everything fits beside the runtime: one stack, as before. Otherwise each group is a nested stack.
      const scope: Stack =
        groups.length === 1
          ? this
          : new NestedStack(this, `Workflows${index + 1}`, {
              description: `stepthread workflows, part ${index + 1} of ${groups.length}`,
            });
      if (scope !== this) this.workflowStacks.push(scope as NestedStack);
      const outputIds = new Set<string>();
      for (const i of group) {
        const { workflow, file, executionType, compiled } = planned[i]!;
        const construct = new StepthreadWorkflow(scope, `Workflow-${workflow.id}`, {
          runtime: this.runtime,
          workflow,
          executionType,
          compiled,
          extraTriggers: props.extraTriggers?.[workflow.id] ?? [],
          ...(props.continueAfterEvents === undefined
            ? {}
            : { continueAfterEvents: props.continueAfterEvents }),
        });
        workflows.set(workflow.id, construct);
        new CfnOutput(scope, uniqueOutputId(`${alphanumeric(workflow.id)}StateMachineArn`, outputIds), {
          description: `State machine of workflow ${workflow.id} (${file}, ${executionType})`,
          value: construct.stateMachine.stateMachineArn,
        });
      }
    });
    // The runtime added the outputs the CLI reads (TableName, BucketName, …).
    this.workflows = workflows;
  }
}

/**
 * CloudFormation's per-stack quotas (resources 500, outputs 200, template body 1 MB uploaded through S3)
 * with room to spare, and what one workflow adds to its stack: log group, role, role policy, state
 * machine and an output; with triggers, a dead-letter queue, its policy and one rule per trigger.
 */
export const STACK_BUDGET = { resources: 400, outputs: 150, templateBytes: 600_000 } as const;
/** What the runtime itself puts in the top-level stack (14 functions with roles, logs, ...), rounded up. */
const RUNTIME_COST: WorkflowCost = { resources: 90, outputs: 10, templateBytes: 120_000 };

export interface WorkflowCost {
  readonly resources: number;
  readonly outputs: number;
  readonly templateBytes: number;
}

export function workflowCost(compiled: CompiledWorkflow, triggers: number): WorkflowCost {
  return {
    resources: 4 + (triggers > 0 ? 2 + triggers : 0),
    outputs: 1,
    // The definition is stored as JSON inside a JSON string (escaped quotes), plus role, logs, rules.
    templateBytes: Math.ceil(JSON.stringify(compiled.definition).length * 1.3) + 4_000 + triggers * 1_500,
  };
}

/**
 * Workflows (by index) grouped into stacks: one group when all fit beside the runtime, else as few
 * groups as each fit a nested stack's budget (in order, so adding a workflow moves no other one).
 */
export function stackGroups(costs: readonly WorkflowCost[]): number[][] {
  const fits = (total: WorkflowCost) =>
    total.resources <= STACK_BUDGET.resources &&
    total.outputs <= STACK_BUDGET.outputs &&
    total.templateBytes <= STACK_BUDGET.templateBytes;
  const add = (a: WorkflowCost, b: WorkflowCost): WorkflowCost => ({
    resources: a.resources + b.resources,
    outputs: a.outputs + b.outputs,
    templateBytes: a.templateBytes + b.templateBytes,
  });
  if (fits(costs.reduce(add, RUNTIME_COST))) return [costs.map((_cost, i) => i)];
  const groups: number[][] = [];
  let current: number[] = [];
  let total: WorkflowCost = { resources: 0, outputs: 0, templateBytes: 0 };
  costs.forEach((cost, i) => {
    if (current.length > 0 && !fits(add(total, cost))) {
      groups.push(current);
      current = [];
      total = { resources: 0, outputs: 0, templateBytes: 0 };
    }
    if (!fits(cost)) throw new Error(`workflow ${i} alone exceeds a stack's budget`);
    current.push(i);
    total = add(total, cost);
  });
  if (current.length > 0) groups.push(current);
  return groups;
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
