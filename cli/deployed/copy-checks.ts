/**
 * A copy's edits on a deployed stack are checked against the workflow its state machine's definition
 * holds (`copy --stack`, `rerun --stack`, the console's copy over `dev --target aws`).
 */
import { nodeAfterLastStep } from '../../engine/asl/copy-start.ts';
import type { AslDefinition } from '../../engine/asl/types.ts';
import type { VariableDeclaration } from '../../engine/model/schema.ts';
import type { CopyEdit } from '../../engine/thread/copy-edits.ts';
import { type DeployedWorkflow, deployedWorkflowOf } from '../../engine/thread/deployed-workflow-edits.ts';
import type { NodeTableSource } from '../../functions/handlers/node-tables.ts';
import type { CopyOptions, LocalRuntime } from '../../functions/local/runtime.ts';
import type { SfnLike } from '../commands/start.ts';
import { visible } from '../format.ts';
import type { CliIo } from '../io.ts';
import { declarationsInDefinition, definitionOfExecution } from './workflow-declarations.ts';

/** An execution's state machine definition (definitionOfExecution): what a copy on a stack reads it by. */
export type DefinitionOfExecution = (executionArn: string) => Promise<unknown>;

/**
 * Reads each execution's definition once however often a copy asks (its edits' checks, where it
 * stands): one DescribeExecution and DescribeStateMachine, not one per question.
 */
export function definitionsOnStack(sfn: SfnLike, nodeTables: NodeTableSource): DefinitionOfExecution {
  const read = new Map<string, Promise<unknown>>();
  return (executionArn) => {
    let definition = read.get(executionArn);
    if (definition === undefined) {
      definition = definitionOfExecution(sfn, nodeTables, executionArn);
      read.set(executionArn, definition);
    }
    return definition;
  };
}

/**
 * What checks a copy's edits on a stack, read from the definition of the state machine the thread's
 * execution ran on, its nodes described from the node table it names (a table that cannot be read is
 * the note's reason, and refuses workflow edits): the workflow's variable declarations (for `--set`) and its nodes and profiles (for
 * `--node-config` and `--profile`, deployed-workflow-edits.ts). When the declarations cannot be read, a
 * note says the variable edits are checked against the thread's variables only; without the
 * definition, workflow edits are refused (COPY_EDIT_NOT_DEPLOYABLE).
 */
export async function deployedCopyChecks(
  runtime: Pick<LocalRuntime, 'stores'>,
  threadId: string,
  definitionOf: DefinitionOfExecution,
  edits: readonly CopyEdit[],
  io: Pick<CliIo, 'stderr'>,
): Promise<{ declarations?: VariableDeclaration[]; deployedWorkflow?: DeployedWorkflow }> {
  const { thread } = await runtime.stores.threads.getThread(threadId);
  const executionArn = thread.metadata.executionId;
  let definition: unknown;
  let why = 'its thread names no execution';
  if (typeof executionArn === 'string') {
    try {
      definition = await definitionOf(executionArn);
      why = 'its definition holds no START declarations';
    } catch (error) {
      why = (error as Error).message;
    }
  }
  const declarations = definition === undefined ? undefined : declarationsInDefinition(definition);
  if (declarations === undefined && edits.some((edit) => edit.kind === 'variable')) {
    io.stderr(
      `note: the deployed workflow's variable declarations could not be read (${visible(why)}); the edits are checked against the variables thread ${threadId} holds, of any type\n`,
    );
  }
  return {
    ...(declarations === undefined ? {} : { declarations }),
    ...(definition === undefined
      ? {}
      : { deployedWorkflow: deployedWorkflowOf(definition as AslDefinition) }),
  };
}

/**
 * Where a copy made as its source stopped stands on a stack (`copy --stack` without `--from`, the
 * console's Retry of a stopped run): the node after the source's last step, read from the definition
 * of the state machine its execution ran on — the model call or question a cancel stopped, whose step
 * left no trace. Read only when needed; without the definition the copy stands at the last step's node.
 */
export function deployedStoppedAt(definitionOf: DefinitionOfExecution): CopyOptions['stoppedAt'] {
  return async (thread) => {
    const executionArn = thread.metadata.executionId;
    if (typeof executionArn !== 'string') return undefined;
    const definition = await definitionOf(executionArn).catch(() => undefined);
    return definition === undefined ? undefined : nodeAfterLastStep(definition as AslDefinition, thread);
  };
}
