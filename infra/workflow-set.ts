/**
 * Many workflows in one app: each gets its StepthreadWorkflow and an output with its state machine's ARN,
 * in the given stack while they fit beside what it already holds, else in nested stacks `Workflows1`,
 * `Workflows2`, … each within CloudFormation's per-stack quotas. The repository's stack and users' own
 * CDK apps both add their workflows this way, so neither breaks past ~100 workflows.
 *
 * Also warns at synth (`cdk synth` prints it) when the app nears an account quota that CloudFormation
 * would only report half way through a deploy: EventBridge rules per bus, IAM roles per account.
 */
import { Annotations, CfnOutput, CfnResource, NestedStack, type Stack } from 'aws-cdk-lib';
import { CfnRule } from 'aws-cdk-lib/aws-events';
import { CfnRole } from 'aws-cdk-lib/aws-iam';
import { StepthreadError } from '../engine/errors.ts';
import type { Trigger, Workflow } from '../engine/model/schema.ts';
import { definitionFitsTemplate } from '../engine/validation/deploy-limits.ts';
import { type CompiledWorkflow, compileForDeploy } from './compile.ts';
import type { LoadedWorkflow } from './load-workflows.ts';
import type { StepthreadRuntime } from './runtime.ts';
import { StepthreadWorkflow, type WorkflowExecutionType } from './workflow.ts';

export interface StepthreadWorkflowsProps {
  readonly runtime: StepthreadRuntime;
  /** Validated workflows with the files they came from (`loadWorkflowsFromDir`). */
  readonly workflows: readonly LoadedWorkflow[];
  /** Workflow ids to deploy as EXPRESS state machines (default: all STANDARD). */
  readonly expressWorkflows?: readonly string[];
  /** Triggers from stack configuration, per workflow id, added to those in the workflow files. */
  readonly extraTriggers?: Readonly<Record<string, readonly Trigger[]>>;
  /** Continue-as-new threshold of the STANDARD state machines (default 20,000 history events; false: off). */
  readonly continueAfterEvents?: number | false;
}

export interface StepthreadWorkflows {
  readonly workflows: ReadonlyMap<string, StepthreadWorkflow>;
  /** The nested stacks holding the workflows when they do not fit in the stack itself (else empty). */
  readonly nestedStacks: readonly NestedStack[];
}

/** Default account quotas a deploy of many workflows can pass (each can be raised through AWS support). */
export const ACCOUNT_QUOTAS = { rulesPerBus: 300, rolesPerAccount: 1_000 } as const;
/**
 * Warn once this app alone uses this share of a quota: most of a bus's rules are usually an app's own,
 * while an account holds many roles besides (SSO, service-linked, other apps).
 */
const QUOTA_WARNING_SHARE = { rulesPerBus: 0.8, rolesPerAccount: 0.4 } as const;

export function addStepthreadWorkflows(stack: Stack, props: StepthreadWorkflowsProps): StepthreadWorkflows {
  const express = new Set(props.expressWorkflows ?? []);
  const known = new Set(props.workflows.map(({ workflow }) => workflow.id));
  for (const id of [...express, ...Object.keys(props.extraTriggers ?? {})]) {
    if (!known.has(id))
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `stack configuration names workflow "${id}", which is not deployed (deployed: ${[...known].join(', ')})`,
      );
  }
  const planned = props.workflows.map(({ workflow, file }) => {
    const executionType: WorkflowExecutionType = express.has(workflow.id) ? 'EXPRESS' : 'STANDARD';
    const continueAfterEvents = executionType === 'EXPRESS' ? false : props.continueAfterEvents;
    const compiled = compileForDeploy(workflow, {
      ...(continueAfterEvents === undefined ? {} : { continueAfterEvents }),
      ...(props.runtime.traceContext ? { traceContext: true } : {}),
    });
    const triggers = (workflow.triggers?.length ?? 0) + (props.extraTriggers?.[workflow.id]?.length ?? 0);
    return { workflow, file, executionType, compiled, cost: workflowCost(workflow, compiled, triggers) };
  });
  const groups = stackGroups(
    planned.map(({ cost }) => cost),
    costSoFar(stack, props.runtime),
  );
  const workflows = new Map<string, StepthreadWorkflow>();
  const nestedStacks: NestedStack[] = [];
  groups.forEach((group, index) => {
    // Everything fits beside what the stack holds: one stack, as before. Otherwise each group is nested.
    const scope: Stack =
      groups.length === 1
        ? stack
        : new NestedStack(stack, `Workflows${index + 1}`, {
            description: `stepthread workflows, part ${index + 1} of ${groups.length}`,
          });
    if (scope !== stack) nestedStacks.push(scope as NestedStack);
    const outputIds = new Set<string>();
    for (const i of group) {
      const { workflow, file, executionType, compiled } = planned[i]!;
      const construct = new StepthreadWorkflow(scope, `Workflow-${workflow.id}`, {
        runtime: props.runtime,
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
  warnOfQuotas(stack);
  return { workflows, nestedStacks };
}

/**
 * CloudFormation's per-stack quotas (resources 500, outputs 200, template body 1 MB uploaded through S3)
 * with room to spare, and what one workflow adds to its stack: log group, role, role policy, state
 * machine, its version and alias, and an output; with triggers, a dead-letter queue, its policy and one
 * rule per trigger.
 */
export const STACK_BUDGET = { resources: 400, outputs: 150, templateBytes: 600_000 } as const;
/** What the runtime puts in its stack (14 functions with roles, logs, ...), rounded up. */
const RUNTIME_COST: WorkflowCost = { resources: 90, outputs: 10, templateBytes: 120_000 };
/** A resource of a user's own stack, on average, in template bytes. */
const RESOURCE_BYTES = 1_500;

export interface WorkflowCost {
  readonly resources: number;
  readonly outputs: number;
  readonly templateBytes: number;
}

export function workflowCost(workflow: Workflow, compiled: CompiledWorkflow, triggers: number): WorkflowCost {
  return {
    // The version and alias (pinning) came later: 2 more. Only an app grouped by resources (many
    // small workflows) groups differently for them; such a group would now be over the 500 quota.
    resources: 6 + (triggers > 0 ? 2 + triggers : 0),
    outputs: 1,
    // An estimate with a margin (JSON inside a JSON string, plus role, logs, rules). Kept as it was
    // first deployed: a different estimate would move workflows between nested stacks on redeploy,
    // and a state machine's fixed name cannot be created in one stack before leaving another.
    // A definition too large for any template deploys from S3 (infra/workflow.ts): its template holds
    // only the asset's location and the substitutions. Such workflows could not deploy before.
    templateBytes:
      (definitionFitsTemplate(workflow, JSON.stringify(compiled.definition))
        ? Math.ceil(JSON.stringify(compiled.definition).length * 1.3)
        : 2_000) +
      4_000 +
      triggers * 1_500,
  };
}

/**
 * What the stack holds before the workflows: the runtime's fixed estimate (as the repository's stack
 * has always counted it, so no workflow moves on redeploy) plus whatever else a user's stack holds.
 */
function costSoFar(stack: Stack, runtime: StepthreadRuntime): WorkflowCost {
  const inRuntime = new Set(runtime.node.scope === stack ? runtime.node.findAll() : []);
  const others = stack.node.findAll().filter((child) => !inRuntime.has(child));
  const resources = others.filter((child) => child instanceof CfnResource).length;
  const outputs = others.filter((child) => child instanceof CfnOutput).length;
  const own = { resources, outputs, templateBytes: resources * RESOURCE_BYTES };
  if (inRuntime.size === 0) return own;
  return {
    resources: RUNTIME_COST.resources + own.resources,
    outputs: RUNTIME_COST.outputs + own.outputs,
    templateBytes: RUNTIME_COST.templateBytes + own.templateBytes,
  };
}

/**
 * Workflows (by index) grouped into stacks: one group when all fit beside what the stack already holds,
 * else as few groups as each fit a nested stack's budget (in order, so adding a workflow moves no
 * other one). A workflow over the budget alone gets a group of its own.
 */
export function stackGroups(costs: readonly WorkflowCost[], base: WorkflowCost = RUNTIME_COST): number[][] {
  const fits = (total: WorkflowCost) =>
    total.resources <= STACK_BUDGET.resources &&
    total.outputs <= STACK_BUDGET.outputs &&
    total.templateBytes <= STACK_BUDGET.templateBytes;
  const add = (a: WorkflowCost, b: WorkflowCost): WorkflowCost => ({
    resources: a.resources + b.resources,
    outputs: a.outputs + b.outputs,
    templateBytes: a.templateBytes + b.templateBytes,
  });
  const empty: WorkflowCost = { resources: 0, outputs: 0, templateBytes: 0 };
  if (fits(costs.reduce(add, base))) return [costs.map((_cost, i) => i)];
  const groups: number[][] = [];
  let current: number[] = [];
  let total = empty;
  costs.forEach((cost, i) => {
    if (current.length > 0 && !fits(add(total, cost))) {
      groups.push(current);
      current = [];
      total = empty;
    }
    current.push(i);
    total = add(total, cost);
    // A definition of several hundred KB fills a nested stack's 1 MB template on its own
    // (one that would not fit any template deploys from S3).
    if (!fits(cost)) {
      groups.push(current);
      current = [];
      total = empty;
    }
  });
  if (current.length > 0) groups.push(current);
  return groups;
}

/** A warning on the stack for each account quota this app alone uses most of. */
function warnOfQuotas(stack: Stack): void {
  const all = stack.node.root.node.findAll();
  const rulesPerBus = new Map<string, number>();
  for (const rule of all.filter((child): child is CfnRule => child instanceof CfnRule)) {
    const bus = JSON.stringify(stack.resolve(rule.eventBusName) ?? 'default');
    rulesPerBus.set(bus, (rulesPerBus.get(bus) ?? 0) + 1);
  }
  const near = (count: number, quota: keyof typeof ACCOUNT_QUOTAS) =>
    count >= ACCOUNT_QUOTAS[quota] * QUOTA_WARNING_SHARE[quota];
  for (const [bus, rules] of rulesPerBus) {
    if (!near(rules, 'rulesPerBus')) continue;
    Annotations.of(stack).addWarningV2(
      'stepthread:rulesPerBus',
      `this app puts ${rules} EventBridge rules on one bus (${bus}); the default quota is ${ACCOUNT_QUOTAS.rulesPerBus} rules per bus per region. Ask for a higher "Rules per event bus" quota in Service Quotas before deploying, or give some workflows' triggers another bus (StepthreadRuntime's triggerBus)`,
    );
  }
  const roles = all.filter((child) => child instanceof CfnRole).length;
  if (near(roles, 'rolesPerAccount')) {
    Annotations.of(stack).addWarningV2(
      'stepthread:rolesPerAccount',
      `this app creates ${roles} IAM roles; the default quota is ${ACCOUNT_QUOTAS.rolesPerAccount.toLocaleString('en-US')} roles per account, shared with everything else in it. Ask for a higher "Roles per account" quota in Service Quotas before deploying, or deploy fewer workflows per account`,
    );
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
