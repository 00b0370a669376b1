/**
 * The workflow a deployed state machine runs, for the copy checks on a stack (`copy --stack`,
 * `rerun --stack`, `start --thread`): its definition names each node by reference
 * (engine/asl/node-table.ts), so the node table its Tasks name is read from the stack's bucket and each
 * reference replaced by its description; START's then carries the workflow's declarations
 * (engine/asl/task-input.ts, StartDescription). For an execution: the state machine it ran on
 * (DescribeExecution, then DescribeStateMachine, then the table's GetObject, all in the operator policy).
 */
import { DescribeExecutionCommand, DescribeStateMachineCommand } from '@aws-sdk/client-sfn';
import { describedDefinition, isNodeRef, type NodeRef } from '../../engine/asl/node-table.ts';
import type { VariableDeclaration } from '../../engine/model/schema.ts';
import type { AwsClients } from '../../functions/aws/clients.ts';
import type { NodeTableSource } from '../../functions/handlers/node-tables.ts';
import { createS3NodeTables } from '../../functions/stores/node-tables.ts';
import type { SfnLike } from '../commands/start.ts';

/** The stack's node tables, in its bucket (the deployed definitions name their nodes there). */
export function stackNodeTables(clients: Pick<AwsClients, 's3' | 'bucketName'>): NodeTableSource {
  const { s3, bucketName } = clients;
  return createS3NodeTables({ s3: async () => s3, bucketName });
}

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

/**
 * The definition with its Tasks' nodes described from the node table they name (every Task of a
 * definition names the same one); a definition naming none is returned as it is. NODE_TABLE_NOT_FOUND
 * when the table cannot be read.
 */
export async function describedByItsTable<T>(definition: T, nodeTables: NodeTableSource): Promise<T> {
  const reference = nodeRefInDefinition(definition);
  if (reference === undefined) return definition;
  return describedDefinition(definition, reference.ref, await nodeTables.table(reference.ref));
}

/** The declarations START's Task carries in a described definition (any nesting, as Parameters or Payload). */
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

/** The definition of the state machine an execution ran on, as deployed now, its nodes described. */
export async function definitionOfExecution(
  sfn: SfnLike,
  nodeTables: NodeTableSource,
  executionArn: string,
): Promise<unknown> {
  const execution = (await sfn.send(new DescribeExecutionCommand({ executionArn }))) as {
    stateMachineArn?: string;
  };
  if (execution.stateMachineArn === undefined) return undefined;
  const machine = (await sfn.send(
    new DescribeStateMachineCommand({ stateMachineArn: execution.stateMachineArn }),
  )) as { definition?: string };
  if (machine.definition === undefined) return undefined;
  return describedByItsTable(JSON.parse(machine.definition) as unknown, nodeTables);
}

/** The declarations of the state machine an execution ran on (its definition as deployed now). */
export async function deployedDeclarations(
  sfn: SfnLike,
  nodeTables: NodeTableSource,
  executionArn: string,
): Promise<VariableDeclaration[] | undefined> {
  const definition = await definitionOfExecution(sfn, nodeTables, executionArn);
  return definition === undefined ? undefined : declarationsInDefinition(definition);
}
