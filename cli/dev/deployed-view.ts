/**
 * What `stepthread dev --target aws` adds to an execution page from Step Functions: the execution as
 * DescribeExecution gives it (status, start and stop, input, output, error) and the per-state timings
 * of its history (cli/deployed/history.ts), which also give the status of a node the table cannot
 * know yet — running now, or failed before its Lambda recorded a step.
 */

import { compileWorkflow } from '../../engine/asl/compile.ts';
import { taskStateIndex } from '../../engine/asl/resources.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { SfnLike } from '../commands/start.ts';
import type { NodeStatus, StateRun, StepFunctionsView } from '../deployed/execution-view.ts';
import { readRecentHistory, stateRunsOf } from '../deployed/history.ts';
import {
  type DescribedExecution,
  describeDeployedExecution,
  stepFunctionsConsoleUrl,
} from '../deployed/step-functions.ts';

/** Task state name → node id, per workflow (compiled once: the names do not depend on the deploy). */
export function taskNodesOf(cache: Map<string, ReadonlyMap<string, string>>, workflow: Workflow) {
  let nodes = cache.get(workflow.id);
  if (nodes === undefined) {
    const tasks = taskStateIndex(compileWorkflow(workflow).definition);
    nodes = new Map(tasks.flatMap((task) => (task.nodeId ? [[task.stateName, task.nodeId] as const] : [])));
    cache.set(workflow.id, nodes);
  }
  return nodes;
}

/** JSON text as a value (Step Functions gives input and output as text). */
function parsed(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** DescribeExecution and the newest history; undefined when Step Functions does not know the id. */
export async function stepFunctionsViewOf(
  sfn: SfnLike,
  executionId: string,
  nodeOfState: ReadonlyMap<string, string>,
): Promise<{ described: DescribedExecution; view: StepFunctionsView } | undefined> {
  const described = await describeDeployedExecution(sfn, executionId);
  if (described === undefined) return undefined;
  const history = await readRecentHistory(sfn, executionId);
  const consoleUrl = stepFunctionsConsoleUrl(executionId);
  const input = parsed(described.input);
  const output = parsed(described.output);
  return {
    described,
    view: {
      status: described.status,
      startDate: described.startDate,
      ...(described.stopDate ? { stopDate: described.stopDate } : {}),
      ...(input === undefined ? {} : { input }),
      ...(output === undefined ? {} : { output }),
      ...(described.error === undefined ? {} : { error: described.error }),
      ...(described.cause === undefined ? {} : { cause: described.cause }),
      ...(consoleUrl ? { consoleUrl } : {}),
      ...(described.stateMachineVersion === undefined
        ? {}
        : { stateMachineVersion: described.stateMachineVersion }),
      states: stateRunsOf(history.events, nodeOfState, described.status),
      historyComplete: history.complete,
    },
  };
}

/**
 * Node statuses the history adds: a node whose Task is running now shows RUNNING (its step record is
 * written when it ends), and a node the table never recorded (its Lambda failed or timed out before
 * writing) shows how its last Task ended. A node the table recorded otherwise keeps that record.
 */
export function withStateRuns(
  nodeStatus: Record<string, NodeStatus>,
  states: readonly StateRun[],
): Record<string, NodeStatus> {
  const result = { ...nodeStatus };
  for (const run of states) {
    if (run.nodeId === undefined) continue;
    const recorded = result[run.nodeId];
    if (run.status === 'RUNNING') {
      result[run.nodeId] = {
        ...(recorded ?? { runs: 0 }),
        status: 'RUNNING',
        ...(run.threadId ? { threadId: run.threadId } : {}),
      };
    } else if (recorded === undefined && run.status !== 'SUCCEEDED') {
      result[run.nodeId] = {
        status: run.status === 'STOPPED' ? 'CANCELLED' : 'FAILED',
        ...(run.durationMs === undefined ? {} : { durationMs: run.durationMs }),
        ...(run.attempts === undefined ? {} : { attempt: run.attempts }),
        runs: 1,
        ...(run.threadId ? { threadId: run.threadId } : {}),
      };
    }
  }
  return result;
}
