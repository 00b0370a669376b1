/** Completing waitForTaskToken Tasks on Step Functions (SendTaskSuccess / SendTaskFailure). */
import type { SendTaskFailureCommand, SendTaskSuccessCommand } from '@aws-sdk/client-sfn';
import { StepthreadError } from '../../engine/errors.ts';
import { once } from '../aws/once.ts';
import type { TaskTokenSender } from './deps.ts';

/** The part of SFNClient a sender uses, so tests can pass a stub that records commands. */
export interface SfnSend {
  send(command: SendTaskSuccessCommand | SendTaskFailureCommand): Promise<unknown>;
}

// Loaded when a token is first completed: most USER_INTERACTION Tasks only record the question, and
// every other handler never completes a token, so none of them loads the Step Functions client at init.
const sfnCommands = once(() => import('@aws-sdk/client-sfn'));

/** Step Functions caps `error` at 256 and `cause` at 32,768 characters. */
const MAX_ERROR = 256;
const MAX_CAUSE = 32_768;

/** A token the service no longer waits on (the task timed out, the execution ended, or it was answered). */
function isStaleToken(error: unknown): boolean {
  const name = error instanceof Error ? error.name : '';
  return name === 'TaskTimedOut' || name === 'TaskDoesNotExist' || name === 'InvalidToken';
}

function notDelivered(error: unknown): StepthreadError {
  return new StepthreadError(
    'INTERACTION_NOT_DELIVERED',
    `Step Functions no longer waits for this answer (${error instanceof Error ? error.name : 'error'}): the task timed out, the execution ended, or it was already answered`,
    { cause: error },
  );
}

export function sfnTaskTokenSender(sfn: SfnSend): TaskTokenSender {
  return {
    async succeed(taskToken, output) {
      const { SendTaskSuccessCommand } = await sfnCommands();
      try {
        await sfn.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) }));
      } catch (error) {
        throw isStaleToken(error) ? notDelivered(error) : error;
      }
    },
    async fail(taskToken, error, cause) {
      const { SendTaskFailureCommand } = await sfnCommands();
      try {
        await sfn.send(
          new SendTaskFailureCommand({
            taskToken,
            error: error.slice(0, MAX_ERROR),
            cause: cause.slice(0, MAX_CAUSE),
          }),
        );
      } catch (failure) {
        throw isStaleToken(failure) ? notDelivered(failure) : failure;
      }
    },
  };
}
