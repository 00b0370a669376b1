/**
 * The variable declarations of a deployed workflow, for `copy --stack --set` to check an edit's type as
 * it does locally: the START Task of the state machine's definition carries the workflow's
 * declarations (engine/asl/task-input.ts, StartDescription), so they are read from there — the state
 * machine of the execution the thread ran in (DescribeExecution, then DescribeStateMachine, both in
 * the operator policy).
 */
import { DescribeExecutionCommand, DescribeStateMachineCommand } from '@aws-sdk/client-sfn';
import type { VariableDeclaration } from '../../engine/model/schema.ts';
import type { SfnLike } from '../commands/start.ts';

/** The declarations START's Task carries in a definition (any nesting, as Parameters or Payload). */
export function declarationsInDefinition(definition: unknown): VariableDeclaration[] | undefined {
  const seen = new Set<unknown>();
  const visit = (value: unknown): VariableDeclaration[] | undefined => {
    if (typeof value !== 'object' || value === null || seen.has(value)) return undefined;
    seen.add(value);
    const node = (value as { node?: { type?: unknown; workflow?: { variables?: unknown } } }).node;
    if (node?.type === 'START' && Array.isArray(node.workflow?.variables)) {
      return node.workflow.variables as VariableDeclaration[];
    }
    for (const child of Object.values(value)) {
      const found = visit(child);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return visit(definition);
}

/** The definition of the state machine an execution ran on, as deployed now. */
export async function definitionOfExecution(sfn: SfnLike, executionArn: string): Promise<unknown> {
  const execution = (await sfn.send(new DescribeExecutionCommand({ executionArn }))) as {
    stateMachineArn?: string;
  };
  if (execution.stateMachineArn === undefined) return undefined;
  const machine = (await sfn.send(
    new DescribeStateMachineCommand({ stateMachineArn: execution.stateMachineArn }),
  )) as { definition?: string };
  return machine.definition === undefined ? undefined : (JSON.parse(machine.definition) as unknown);
}

/** The declarations of the state machine an execution ran on (its definition as deployed now). */
export async function deployedDeclarations(
  sfn: SfnLike,
  executionArn: string,
): Promise<VariableDeclaration[] | undefined> {
  const definition = await definitionOfExecution(sfn, executionArn);
  return definition === undefined ? undefined : declarationsInDefinition(definition);
}
