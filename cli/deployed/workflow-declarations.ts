/**
 * The variable declarations of a deployed workflow, for `copy --stack --set` to check an edit's type as
 * it does locally: START's description carries the workflow's declarations (engine/asl/task-input.ts,
 * StartDescription). The definition names its nodes by reference (engine/asl/node-table.ts), so they are
 * read from the node table its Tasks name, in the stack's bucket — that of the state machine the
 * thread's execution ran on (DescribeExecution, then DescribeStateMachine, then the table's GetObject,
 * all in the operator policy).
 */
import { DescribeExecutionCommand, DescribeStateMachineCommand } from '@aws-sdk/client-sfn';
import { isNodeRef, type NodeRef } from '../../engine/asl/node-table.ts';
import type { StartDescription } from '../../engine/asl/task-input.ts';
import type { VariableDeclaration } from '../../engine/model/schema.ts';
import type { NodeTableSource } from '../../functions/handlers/node-tables.ts';
import type { SfnLike } from '../commands/start.ts';

/** The first node reference a definition's Tasks hold (any nesting, as Parameters or Payload). */
export function nodeRefInDefinition(definition: unknown): NodeRef | undefined {
  const seen = new Set<unknown>();
  const visit = (value: unknown): NodeRef | undefined => {
    if (typeof value !== 'object' || value === null || seen.has(value)) return undefined;
    seen.add(value);
    const { node } = value as { node?: unknown };
    if (isNodeRef(node)) return node;
    for (const child of Object.values(value)) {
      const found = visit(child);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return visit(definition);
}

/** The declarations of the state machine an execution ran on (its definition as deployed now). */
export async function deployedDeclarations(
  sfn: SfnLike,
  nodeTables: NodeTableSource,
  executionArn: string,
): Promise<VariableDeclaration[] | undefined> {
  const execution = (await sfn.send(new DescribeExecutionCommand({ executionArn }))) as {
    stateMachineArn?: string;
  };
  if (execution.stateMachineArn === undefined) return undefined;
  const machine = (await sfn.send(
    new DescribeStateMachineCommand({ stateMachineArn: execution.stateMachineArn }),
  )) as { definition?: string };
  if (machine.definition === undefined) return undefined;
  // Every Task of a definition names the same table: START's description is in it.
  const reference = nodeRefInDefinition(JSON.parse(machine.definition));
  if (reference === undefined) return undefined;
  const table = await nodeTables.table(reference.ref);
  const start = Object.values(table.nodes).find((node): node is StartDescription => node.type === 'START');
  return start?.workflow.variables;
}
