/**
 * How many history events Step Functions would have recorded for a local execution: the library logs
 * state entries and exits, failures, retries and catches; Step Functions records more per state (a
 * Lambda Task: Entered, Scheduled, Started, Succeeded, Exited). Used to check continue-as-new's
 * estimate (`envelope.history`, engine/asl/continuation.ts) against what actually ran.
 */
import { type AslStateMachine, forEachState, WAIT_FOR_TASK_TOKEN } from '../../engine/asl/index.ts';
import { START_EXECUTION_RESOURCE } from '../../engine/asl/types.ts';
import type { LocalEvent } from './state-machine.ts';

/** Task states whose resource is a service integration (one more event: TaskSubmitted). */
function integrationTasks(definition: AslStateMachine): Set<string> {
  const names = new Set<string>();
  forEachState(definition, (name, state) => {
    if (state.Type !== 'Task') return;
    if (state.Resource === WAIT_FOR_TASK_TOKEN || state.Resource === START_EXECUTION_RESOURCE)
      names.add(name);
  });
  return names;
}

/** Step Functions history events of the local `events`, as a Standard execution would record them. */
export function awsHistoryEvents(events: readonly LocalEvent[], definition: AslStateMachine): number {
  const integrations = integrationTasks(definition);
  const caught = new Set<string>();
  let count = 0;
  for (const event of events) {
    const name = event.stateName ?? '';
    const counted = event.stateType === 'Task' || event.stateType === 'Parallel' || event.stateType === 'Map';
    switch (event.type) {
      case 'ExecutionStarted':
      case 'ExecutionSucceeded':
      case 'ExecutionFailed':
      case 'ExecutionAborted':
      case 'ExecutionTimeout':
        count += 1;
        break;
      case 'StateEntered':
        caught.delete(name);
        // Task: Entered, Scheduled, Started (+ Submitted); Parallel: Entered, Started; others: Entered.
        count += event.stateType === 'Task' ? (integrations.has(name) ? 4 : 3) : counted ? 2 : 1;
        break;
      case 'StateFailed':
        // LambdaFunctionFailed / TaskFailed / ParallelStateFailed; a Fail state's failure is the execution's.
        if (counted) count += 1;
        break;
      case 'StateRetried':
        count += 2; // Scheduled, Started of the next attempt
        break;
      case 'StateCaught':
        caught.add(name);
        break;
      case 'StateExited':
        // Succeeded + Exited, or only Exited after a caught failure.
        count += counted ? (caught.has(name) ? 1 : 2) : 1;
        break;
      default:
        // Branch and iteration events have no history event of their own.
        break;
    }
  }
  return count;
}
