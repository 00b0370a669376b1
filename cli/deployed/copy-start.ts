/**
 * Starting a copied thread on a deployed stack (issue 28): `start --thread`, `rerun --stack` and the
 * console's "run the copy" over `dev --target aws`. The workflow's state machine as the latest deploy
 * left it (DescribeStateMachine: the definition its `live` alias runs, its nodes read from the node table
 * it names) gives the copy's node Task and
 * the workflow's step limit and budget; the execution starts on the `live` alias with the input that
 * has `stepthread:resume` claim the copy and jump to that Task (engine/asl/copy-start.ts). Both calls
 * and the table's GetObject are in the operator policy.
 */
import { DescribeStateMachineCommand } from '@aws-sdk/client-sfn';
import { type CopyStartInput, copyStartInput } from '../../engine/asl/copy-start.ts';
import type { AslDefinition } from '../../engine/asl/types.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { Budget } from '../../engine/model/schema.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { unqualifiedStateMachineArn } from '../../functions/aws/state-machine-arns.ts';
import type { NodeTableSource } from '../../functions/handlers/node-tables.ts';
import type { SfnLike } from '../commands/start.ts';
import { startOnLiveAlias } from './step-functions.ts';
import { describedByItsTable } from './workflow-declarations.ts';

/**
 * The definition of the state machine as last deployed (its `live` alias runs the same), its nodes
 * described from the node table it names (NODE_TABLE_NOT_FOUND when that cannot be read).
 */
export async function deployedDefinition(
  sfn: SfnLike,
  stateMachineArn: string,
  nodeTables: NodeTableSource,
): Promise<AslDefinition> {
  const described = (await sfn.send(
    new DescribeStateMachineCommand({ stateMachineArn: unqualifiedStateMachineArn(stateMachineArn) }),
  )) as { definition?: string } | undefined;
  if (described?.definition === undefined) {
    throw new StepthreadError('INVALID_STATE_MACHINE', `state machine ${stateMachineArn} gave no definition`);
  }
  return describedByItsTable(JSON.parse(described.definition) as AslDefinition, nodeTables);
}

export interface CopyStartRequest {
  readonly stateMachineArn: string;
  readonly thread: Pick<
    Thread,
    'id' | 'workflowId' | 'workflowVersion' | 'currentNodeId' | 'step' | 'status' | 'metadata'
  >;
  /** The execution's name (its idempotency key). */
  readonly name: string;
  /** The starter's budget (`--budget`), each limit over the workflow's. */
  readonly budget?: Budget;
  /** The stack's node tables: the definition names its nodes there. */
  readonly nodeTables: NodeTableSource;
  /** The definition (described), when the caller read it already (one read for many copies). */
  readonly definition?: AslDefinition;
}

/**
 * Starts the copy; its execution ARN. Refused before anything starts (coded): a copy that ran or
 * started already, a fork branch's copy, a node the deployed workflow does not have, a state machine
 * deployed before copies could start on it.
 */
export async function startCopyOnStack(
  sfn: SfnLike,
  request: CopyStartRequest,
): Promise<{ executionArn: string; input: CopyStartInput }> {
  const { thread } = request;
  refuseUnstartable(thread);
  const definition =
    request.definition ?? (await deployedDefinition(sfn, request.stateMachineArn, request.nodeTables));
  const input = copyStartInput(definition, thread, request.budget);
  const started = await startOnLiveAlias(sfn, {
    stateMachineArn: unqualifiedStateMachineArn(request.stateMachineArn),
    name: request.name,
    input: JSON.stringify(input),
  });
  const executionArn =
    started.executionArn ??
    `${unqualifiedStateMachineArn(request.stateMachineArn).replace(':stateMachine:', ':execution:')}:${request.name}`;
  return { executionArn, input };
}

/** What the copy start's claim would refuse, said before an execution is started for nothing. */
function refuseUnstartable(thread: CopyStartRequest['thread']): void {
  if (thread.status !== 'CREATED') {
    throw new StepthreadError(
      'INVALID_STATUS_TRANSITION',
      `thread ${thread.id} is ${thread.status}: only a copy that has not run starts (stepthread copy ${thread.id} --stack …, then start the copy)`,
    );
  }
  const started = thread.metadata.runFrom as { executionId?: string } | undefined;
  if (started !== undefined) {
    throw new StepthreadError(
      'INVALID_STATUS_TRANSITION',
      `thread ${thread.id} was started already, by execution ${String(started.executionId)}: copy it again to run it once more`,
    );
  }
  if (thread.metadata.forkPathId !== undefined) {
    throw new StepthreadError(
      'COPY_POINT_IN_FORK_BRANCH',
      `thread ${thread.id} is a fork branch's thread (path ${String(thread.metadata.forkPathId)}): it runs only inside its FORK; copy the run's root thread from the FORK and start that`,
    );
  }
}
