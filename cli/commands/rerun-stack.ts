/**
 * `stepthread rerun --failed --from <nodeId> --stack <name>` (issue 28): the failed executions of a
 * deployed stack (`runs --stack --status FAILED`, narrowed by --workflow and --since), each run's root
 * thread copied from the node with the edits (as `copy --stack`, checked against the deployed
 * definition), and each copy started on its workflow's state machine (as `start --thread`), a few at a
 * time. A dry run by default: each copy and its start are checked, nothing written or started. With
 * --yes it copies and starts them, then waits for each execution to end (DescribeExecution every
 * second, the table's record for how the run ended) and prints old status → new; `--no-wait` prints
 * them RUNNING as soon as they started.
 */
import { randomUUID } from 'node:crypto';
import { copyStartInput } from '../../engine/asl/copy-start.ts';
import type { AslDefinition } from '../../engine/asl/types.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { CopyEdit } from '../../engine/thread/copy-edits.ts';
import { CopyEditRefused } from '../../engine/thread/copy-workflow-edits.ts';
import { type DeployedWorkflow, deployedWorkflowOf } from '../../engine/thread/deployed-workflow-edits.ts';
import { mapBounded } from '../../functions/bounded.ts';
import type { NodeTableSource } from '../../functions/handlers/node-tables.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { createExecutionIndex, type ExecutionIndex } from '../../functions/stores/execution-index.ts';
import { deployedDefinition, startCopyOnStack } from '../deployed/copy-start.ts';
import { combinedStatus, listDeployedRuns } from '../deployed/runs.ts';
import { describeDeployedExecution } from '../deployed/step-functions.ts';
import { declarationsInDefinition, stackNodeTables } from '../deployed/workflow-declarations.ts';
import type { CliIo } from '../io.ts';
import type { StoreSession } from '../local-session.ts';
import type { RerunEntry, RerunOptions } from './rerun.ts';
import type { DeployedServices, SfnLike } from './start.ts';

/** How many failed executions `rerun --stack` looks at, newest first. */
export const RERUN_STACK_LIMIT = 1000;
/** How often a started copy's execution is looked at until it ends. */
export const RERUN_POLL_MS = 1000;

interface StackWorkflow {
  readonly stateMachineArn: string;
  readonly definition: AslDefinition;
  readonly deployed: DeployedWorkflow;
  readonly declarations?: ReturnType<typeof declarationsInDefinition>;
  /** The stack's node tables (the definition, described from its own, names its nodes there). */
  readonly nodeTables: NodeTableSource;
}

interface StackPlan {
  readonly entry: RerunEntry;
  readonly workflow?: StackWorkflow;
}

export interface StackRerunContext {
  readonly options: RerunOptions;
  readonly edits: readonly CopyEdit[];
  readonly since: Date | undefined;
  readonly concurrency: number;
  readonly io: CliIo;
  readonly services: DeployedServices;
  /** Each finished (or, with --no-wait, started) copy, as it happens. */
  readonly onDone: (entry: RerunEntry, done: number, of: number) => void;
}

/** Lists, plans and (with --yes) copies and starts the failed runs of the stack; the entries. */
export async function rerunOnStack(session: StoreSession, context: StackRerunContext): Promise<RerunEntry[]> {
  const { options, since } = context;
  const sfn = context.services.sfn ?? (session.clients.sfn as unknown as SfnLike);
  const prefix = options.prefix ?? (context.io.env ?? process.env).STEPTHREAD_NAME_PREFIX ?? 'stepthread';
  const runtime = createLocalRuntime({ clients: session.clients });
  const executions = createExecutionIndex(session.clients);
  const nodeTables = stackNodeTables(session.clients);
  const listed = await listDeployedRuns({
    sfn,
    executions,
    prefix,
    ...(options.workflow === undefined ? {} : { workflowIds: [options.workflow] }),
    status: 'FAILED',
    limit: RERUN_STACK_LIMIT,
  });
  const failed = listed.runs.filter(
    (run) =>
      run.status === 'FAILED' &&
      run.rootThreadId !== undefined &&
      (since === undefined || Date.parse(run.startTime) >= since.getTime()),
  );
  // One read of each workflow's definition checks every copy of its runs and starts them.
  const workflows = new Map<string, Promise<StackWorkflow | undefined>>();
  const workflowOf = (workflowId: string) => {
    let found = workflows.get(workflowId);
    if (found === undefined) {
      const machine = listed.stateMachines.find((candidate) => candidate.workflowId === workflowId);
      found =
        machine === undefined
          ? Promise.resolve(undefined)
          : stackWorkflowOf(sfn, nodeTables, machine.stateMachineArn);
      workflows.set(workflowId, found);
    }
    return found;
  };
  const plans = await Promise.all(
    failed.map(async (run): Promise<StackPlan> => {
      const workflow = await workflowOf(run.workflowId);
      return planOnStack(runtime, run, workflow, context);
    }),
  );
  if (options.yes) {
    const runnable = plans.filter((plan) => plan.entry.skipped === undefined);
    let done = 0;
    await mapBounded(runnable, context.concurrency, async (plan) => {
      await rerunOneOnStack(runtime, executions, sfn, plan, context);
      done += 1;
      context.onDone(plan.entry, done, runnable.length);
    });
  }
  return plans.map((plan) => plan.entry);
}

async function stackWorkflowOf(
  sfn: SfnLike,
  nodeTables: NodeTableSource,
  stateMachineArn: string,
): Promise<StackWorkflow> {
  const definition = await deployedDefinition(sfn, stateMachineArn, nodeTables);
  const declarations = declarationsInDefinition(definition);
  return {
    stateMachineArn,
    definition,
    nodeTables,
    deployed: deployedWorkflowOf(definition),
    ...(declarations === undefined ? {} : { declarations }),
  };
}

function copyOptionsOf(context: StackRerunContext, workflow: StackWorkflow, dryRun: boolean) {
  return {
    fromNodeId: context.options.from,
    ...(context.edits.length > 0 ? { edits: context.edits } : {}),
    deployed: true,
    deployedWorkflow: workflow.deployed,
    ...(workflow.declarations === undefined ? {} : { declarations: workflow.declarations }),
    ...(dryRun ? { dryRun } : {}),
  };
}

/** One failed execution: why it failed, and whether its copy can be made and started (nothing written). */
async function planOnStack(
  runtime: LocalRuntime,
  run: { executionId: string; workflowId: string; rootThreadId?: string },
  workflow: StackWorkflow | undefined,
  context: StackRerunContext,
): Promise<StackPlan> {
  const rootThreadId = run.rootThreadId!;
  const { thread } = await runtime.stores.threads.getThread(rootThreadId);
  const lastError = thread.errors.at(-1);
  const entry: RerunEntry = {
    executionId: run.executionId,
    workflowId: run.workflowId,
    rootThreadId,
    status: 'FAILED',
    ...(lastError === undefined ? {} : { error: lastError }),
  };
  if (workflow === undefined) {
    entry.skipped = { code: 'WORKFLOW_NOT_FOUND', message: `no state machine of workflow ${run.workflowId}` };
    return { entry };
  }
  try {
    const copy = await runtime.copyThread(rootThreadId, copyOptionsOf(context, workflow, true));
    copyStartInput(workflow.definition, copy);
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    entry.skipped = error instanceof CopyEditRefused ? error.errors[0]! : error.toJSON();
    return { entry };
  }
  return { entry, workflow };
}

/** Copies the run's root thread, starts the copy, and (unless --no-wait) waits for its end. */
async function rerunOneOnStack(
  runtime: LocalRuntime,
  executions: Pick<ExecutionIndex, 'getExecution'>,
  sfn: SfnLike,
  plan: StackPlan,
  context: StackRerunContext,
): Promise<void> {
  const { entry } = plan;
  const workflow = plan.workflow!;
  try {
    const copy = await runtime.copyThread(entry.rootThreadId, copyOptionsOf(context, workflow, false));
    entry.copyThreadId = copy.id;
    const started = await startCopyOnStack(sfn, {
      stateMachineArn: workflow.stateMachineArn,
      thread: copy,
      name: randomUUID(),
      nodeTables: workflow.nodeTables,
      definition: workflow.definition,
    });
    entry.newExecutionId = started.executionArn;
    entry.newStatus = 'RUNNING';
    if (context.options.wait === false) return;
    for (;;) {
      const described = await describeDeployedExecution(sfn, started.executionArn);
      if (described !== undefined && described.status !== 'RUNNING') {
        const record = await executions.getExecution(started.executionArn).catch(() => undefined);
        entry.newStatus = combinedStatus(record?.status, described.status);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, context.options.pollMs ?? RERUN_POLL_MS));
    }
    if (entry.newStatus !== 'COMPLETED') {
      const { thread } = await runtime.stores.threads.getThread(copy.id);
      const error = thread.errors.at(-1);
      if (error !== undefined) entry.newError = error;
    }
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    entry.newStatus =
      entry.newStatus === undefined || entry.newStatus === 'RUNNING' ? 'FAILED' : entry.newStatus;
    entry.newError = error.toJSON();
  }
}
