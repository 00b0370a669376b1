/**
 * What the operator commands read from Step Functions about a deployed stack: its state machines (by
 * the `<prefix>-<workflowId>` names the stack gives them), one execution's description, and the link
 * to an execution's page in the Step Functions console. Step Functions knows every execution and how
 * it ended, including those the table never hears about (an execution stopped, timed out, or failed
 * before a handler could record it).
 */
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ListStateMachinesCommand,
  type ListStateMachinesCommandOutput,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { liveAliasArn, stateMachineVersionOf } from '../../functions/aws/state-machine-arns.ts';
import type { SfnLike } from '../commands/start.ts';
import { isSfnExecutionStatus, type SfnExecutionStatus } from './sfn-statuses.ts';

export interface DeployedStateMachine {
  readonly workflowId: string;
  readonly stateMachineArn: string;
  readonly type: 'STANDARD' | 'EXPRESS';
}

/** One execution as DescribeExecution gives it (input and output as the JSON text it holds). */
export interface DescribedExecution {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  /** The state machine version it runs (pinned), when it started on a version or an alias. */
  readonly stateMachineVersion?: number;
  /** The alias it started on (`live` for `start` and the triggers). */
  readonly stateMachineAliasArn?: string;
  readonly status: SfnExecutionStatus;
  readonly startDate: string;
  readonly stopDate?: string;
  readonly input?: string;
  readonly output?: string;
  readonly error?: string;
  readonly cause?: string;
}

/** The Step Functions console page of an execution ARN (undefined for a local execution id). */
export function stepFunctionsConsoleUrl(executionId: string): string | undefined {
  const parts = executionId.split(':');
  if (parts[0] !== 'arn' || parts[2] !== 'states' || parts[5] !== 'execution') return undefined;
  const region = parts[3];
  return `https://${region}.console.aws.amazon.com/states/home?region=${region}#/v2/executions/details/${executionId}`;
}

/** arn:…:execution:<stateMachineName>:<name> → the workflow id, when the name has the prefix. */
export function workflowIdOfExecutionArn(executionArn: string, prefix: string): string | undefined {
  const parts = executionArn.split(':');
  if (parts[0] !== 'arn' || parts[5] !== 'execution') return undefined;
  const machine = parts[6] ?? '';
  return machine.startsWith(`${prefix}-`) ? machine.slice(prefix.length + 1) : undefined;
}

/**
 * The stack's state machines: every one named `<prefix>-<workflowId>` (ListStateMachines, all pages),
 * or only those of `workflowIds` when given, sorted by workflow id.
 */
export async function deployedStateMachines(
  sfn: SfnLike,
  prefix: string,
  workflowIds?: readonly string[],
): Promise<DeployedStateMachine[]> {
  const wanted = workflowIds === undefined ? undefined : new Set(workflowIds);
  const found: DeployedStateMachine[] = [];
  let nextToken: string | undefined;
  do {
    const page = (await sfn.send(
      new ListStateMachinesCommand({ maxResults: 1000, ...(nextToken ? { nextToken } : {}) }),
    )) as ListStateMachinesCommandOutput;
    for (const machine of page.stateMachines ?? []) {
      if (!machine.name?.startsWith(`${prefix}-`) || !machine.stateMachineArn) continue;
      const workflowId = machine.name.slice(prefix.length + 1);
      if (wanted !== undefined && !wanted.has(workflowId)) continue;
      found.push({
        workflowId,
        stateMachineArn: machine.stateMachineArn,
        type: machine.type === 'EXPRESS' ? 'EXPRESS' : 'STANDARD',
      });
    }
    nextToken = page.nextToken;
  } while (nextToken);
  return found.sort((a, b) => a.workflowId.localeCompare(b.workflowId));
}

/** DescribeExecution; undefined when the id is no execution ARN Step Functions knows. */
export async function describeDeployedExecution(
  sfn: SfnLike,
  executionArn: string,
): Promise<DescribedExecution | undefined> {
  if (!executionArn.startsWith('arn:')) return undefined;
  let described: DescribeExecutionCommandOutput;
  try {
    described = (await sfn.send(
      new DescribeExecutionCommand({ executionArn }),
    )) as DescribeExecutionCommandOutput;
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name === 'ExecutionDoesNotExist' || name === 'InvalidArn') return undefined;
    throw error;
  }
  if (!described?.executionArn || !described.stateMachineArn || !described.startDate) return undefined;
  const version = stateMachineVersionOf(described.stateMachineVersionArn);
  return {
    executionArn: described.executionArn,
    stateMachineArn: described.stateMachineArn,
    ...(version === undefined ? {} : { stateMachineVersion: version }),
    ...(described.stateMachineAliasArn ? { stateMachineAliasArn: described.stateMachineAliasArn } : {}),
    status: isSfnExecutionStatus(described.status) ? described.status : 'RUNNING',
    startDate: isoOf(described.startDate),
    ...(described.stopDate ? { stopDate: isoOf(described.stopDate) } : {}),
    ...(described.input === undefined ? {} : { input: described.input }),
    ...(described.output === undefined ? {} : { output: described.output }),
    ...(described.error === undefined ? {} : { error: described.error }),
    ...(described.cause === undefined ? {} : { cause: described.cause }),
  };
}

/** Errors StartExecution answers a state machine without the alias with (deployed before pinning). */
const NO_ALIAS_ERRORS = new Set(['StateMachineDoesNotExist', 'ResourceNotFound']);

/**
 * StartExecution on the workflow's `live` alias, so the run is pinned to the version of the latest
 * deploy until it ends; on the state machine itself when it has no such alias (a stack deployed before
 * pinning). `stateMachineArn` is the unqualified ARN.
 */
export async function startOnLiveAlias(
  sfn: SfnLike,
  request: { stateMachineArn: string; name: string; input: string },
): Promise<{ executionArn?: string }> {
  const start = (stateMachineArn: string) =>
    sfn.send(new StartExecutionCommand({ ...request, stateMachineArn })) as Promise<{
      executionArn?: string;
    }>;
  try {
    return await start(liveAliasArn(request.stateMachineArn));
  } catch (error) {
    if (!NO_ALIAS_ERRORS.has((error as { name?: string }).name ?? '')) throw error;
    return start(request.stateMachineArn);
  }
}

/** The SDK gives dates as Date; a stub may give strings. */
export function isoOf(date: Date | string): string {
  return (typeof date === 'string' ? new Date(date) : date).toISOString();
}
