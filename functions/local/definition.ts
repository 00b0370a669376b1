/**
 * Definition surgery for resuming a thread: the same compiled machine, started at a node's Task
 * instead of START, with the states it can no longer reach dropped (validators reject unreachable
 * states, and they would only add noise to the console graph). A definition that continues runs keeps
 * its `stepthread:dispatch` entry, now defaulting to that node, so such a run can continue too.
 */
import {
  type AslChoiceState,
  type AslDefinition,
  type AslState,
  type AslStateMachine,
  taskStateIndex,
} from '../../engine/asl/index.ts';
import { StepthreadError } from '../../engine/errors.ts';

/** Top-level states a state can go to next (Parallel branches are self-contained machines). */
function successors(state: AslState): string[] {
  const next: string[] = [];
  const s = state as {
    Next?: string;
    Default?: string;
    Choices?: { Next: string }[];
    Catch?: { Next: string }[];
  };
  if (s.Next) next.push(s.Next);
  if (s.Default) next.push(s.Default);
  for (const choice of s.Choices ?? []) next.push(choice.Next);
  for (const catcher of s.Catch ?? []) next.push(catcher.Next);
  return next;
}

/** The definition with `StartAt` = `stateName` (a top-level state) and only the states reachable from it. */
export function definitionStartingAt(definition: AslDefinition, stateName: string): AslDefinition {
  if (!Object.hasOwn(definition.States, stateName)) {
    throw new StepthreadError('INVALID_STATE_MACHINE', `no top-level state named ${stateName}`);
  }
  const entry = definition.States[definition.StartAt];
  // Every definition has the entry (copies start through it on a stack); only one that continues runs
  // needs it here, for its successor executions.
  const dispatch =
    entry?.Type === 'Choice' &&
    entry.Choices.some((rule) => 'Variable' in rule && rule.Variable === '$.resume' && 'IsPresent' in rule) &&
    taskStateIndex(definition).some((task) => task.action === 'continue');
  const startAt = dispatch ? definition.StartAt : stateName;
  const reachable = new Set<string>();
  const pending = [startAt];
  const stateOf = (name: string): AslState | undefined =>
    dispatch && name === startAt
      ? { ...(entry as AslChoiceState), Default: stateName }
      : definition.States[name];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (reachable.has(name)) continue;
    const state = stateOf(name);
    if (state === undefined) continue;
    reachable.add(name);
    pending.push(...successors(state));
  }
  const States: AslStateMachine['States'] = {};
  // Keep definition order so the result reads like the original.
  for (const name of Object.keys(definition.States)) {
    if (reachable.has(name)) States[name] = structuredClone(stateOf(name)!);
  }
  return { ...structuredClone(definition), StartAt: startAt, States };
}

/** The Resource of the local stand-in for a Distributed Map's ItemReader (never called on AWS). */
export const LOCAL_ITEM_READER_RESOURCE =
  'arn:aws:lambda:us-east-1:000000000000:function:stepthread-local-item-reader';

/** A Map state's ItemReader as compiled (engine/asl/compile.ts). */
interface ItemReaderParameters {
  'Bucket.$': string;
  'Key.$': string;
}

/**
 * The local runner (aws-local-stepfunctions) has no ItemReader, ResultWriter or DISTRIBUTED mode. The
 * local runtime runs a Distributed Map as this machine would see it: a Task under the Map's name reads
 * the item list from S3 (the local `s3rver`) into `$.fork.localItems`, then the same item states run as
 * an inline Map under `<name> (local)` with the same concurrency, Catch and Next. ResultWriter is left
 * out (the JOIN reads each item's thread, never the written results). Returns the new definition and
 * the names of the reader Tasks.
 */
export function withLocalDistributedMaps(definition: AslDefinition): {
  definition: AslDefinition;
  readers: string[];
} {
  const copy = structuredClone(definition);
  const readers: string[] = [];
  const rewrite = (machine: AslStateMachine): void => {
    for (const [name, state] of Object.entries(machine.States)) {
      if (state.Type === 'Parallel') for (const branch of state.Branches) rewrite(branch);
      if (state.Type !== 'Map') continue;
      rewrite(state.ItemProcessor);
      if (state.ItemReader === undefined) continue;
      const parameters = state.ItemReader.Parameters as unknown as ItemReaderParameters;
      const {
        ItemReader: _reader,
        ResultWriter: _writer,
        ToleratedFailureCount: _count,
        ToleratedFailurePercentage: _percentage,
        ...rest
      } = state;
      const mapName = `${name} (local)`;
      machine.States[mapName] = {
        ...rest,
        ItemsPath: '$.fork.localItems',
        ItemProcessor: { ...state.ItemProcessor, ProcessorConfig: { Mode: 'INLINE' } },
      };
      machine.States[name] = {
        Type: 'Task',
        Resource: LOCAL_ITEM_READER_RESOURCE,
        Parameters: { 'Bucket.$': parameters['Bucket.$'], 'Key.$': parameters['Key.$'] },
        ResultPath: '$.fork.localItems',
        ...(state.Catch ? { Catch: state.Catch } : {}),
        Next: mapName,
      } as unknown as AslState;
      readers.push(name);
    }
  };
  rewrite(copy);
  return { definition: copy, readers };
}

/**
 * The longest Task timeout the local runner can keep: it arms one `setTimeout` per Task, and Node
 * fires any longer delay at once.
 */
export const LOCAL_TASK_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/**
 * Step Functions gives a Task without `TimeoutSeconds` 99,999,999 seconds; the local runner gives it
 * 60, so a step slowed down here (fifty fork branches contending for the root's globals on a loaded
 * machine) failed with States.Timeout where AWS would have waited. Each such Task, in branches and
 * Map items too, gets LOCAL_TASK_TIMEOUT_SECONDS instead (about 24.8 days); a timeout the definition
 * sets (a USER_INTERACTION's) is kept.
 */
export function withAwsTaskTimeouts(definition: AslDefinition): AslDefinition {
  const copy = structuredClone(definition);
  const rewrite = (machine: AslStateMachine): void => {
    for (const state of Object.values(machine.States)) {
      if (state.Type === 'Parallel') for (const branch of state.Branches) rewrite(branch);
      if (state.Type === 'Map') rewrite(state.ItemProcessor);
      if (state.Type !== 'Task') continue;
      const timed = state as { TimeoutSeconds?: number; TimeoutSecondsPath?: string };
      if (timed.TimeoutSeconds === undefined && timed.TimeoutSecondsPath === undefined) {
        timed.TimeoutSeconds = LOCAL_TASK_TIMEOUT_SECONDS;
      }
    }
  };
  rewrite(copy);
  return copy;
}
