/**
 * Task resources: the compiler writes `${Fn_<NODE_TYPE>}` placeholders (CDK fills them through
 * definitionSubstitutions); the local runtime maps Task states to in-process handlers by state name.
 */
import { StepthreadError } from '../errors.ts';
import { NODE_TYPES, type NodeType } from '../model/schema.ts';
import { TASK_ACTIONS, type TaskAction } from './task-input.ts';
import {
  type AslDefinition,
  type AslState,
  type AslStateMachine,
  START_EXECUTION_RESOURCE,
  WAIT_FOR_TASK_TOKEN,
} from './types.ts';

export function substitutionKey(type: NodeType): string {
  return `Fn_${type}`;
}

export function resourceFor(type: NodeType): string {
  return `\${${substitutionKey(type)}}`;
}

const PLACEHOLDER = /^\$\{Fn_([A-Z_]+)\}$/;

/** One Task state, wherever it sits (Parallel branches included). */
export interface TaskStateEntry {
  stateName: string;
  /**
   * Whose Lambda runs it (bookkeeping tasks run on the JOIN's, `:fail` on the END's,
   * `stepthread:resume` on the START's); for a `<node>:continue` Task, which runs no Lambda, the type of
   * the ROUTE or LOOP_END whose Choice continues.
   */
  nodeType: NodeType;
  /** `continue`: the `states:startExecution` Task of continue-as-new (no handler serves it). */
  action: TaskAction | 'continue';
  /** The node it belongs to (the JOIN for join bookkeeping); absent for `:fail` and `:resume`. */
  nodeId?: string;
  /**
   * `waitForTaskToken`: the Task's input is `{ FunctionName, Payload }` — the handler's event is
   * `Payload` — and its output is what SendTaskSuccess sends. `startExecution`: the input is
   * `{ StateMachineArn, Name, Input }` and the output `{ ExecutionArn, StartDate }`.
   */
  invocation: 'direct' | 'waitForTaskToken' | 'startExecution';
}

/** Every Task state of a compiled (placeholder) definition, in definition order. */
export function taskStateIndex(definition: AslStateMachine): TaskStateEntry[] {
  const entries: TaskStateEntry[] = [];
  forEachState(definition, (stateName, state) => {
    if (state.Type !== 'Task') return;
    if (state.Resource === START_EXECUTION_RESOURCE && 'Input' in state.Parameters) {
      const { node } = state.Parameters.Input.resume;
      entries.push({
        stateName,
        nodeType: node.type,
        action: 'continue',
        nodeId: node.id,
        invocation: 'startExecution',
      });
      return;
    }
    const waits = state.Resource === WAIT_FOR_TASK_TOKEN;
    const resource =
      waits && 'FunctionName' in state.Parameters ? state.Parameters.FunctionName : state.Resource;
    const payload: unknown = 'Payload' in state.Parameters ? state.Parameters.Payload : state.Parameters;
    const match = PLACEHOLDER.exec(resource);
    const nodeType = NODE_TYPES.find((type) => type === match?.[1]);
    const { action, node } = (payload ?? {}) as { action?: unknown; node?: { id?: unknown; type?: unknown } };
    // A node's own Task names no action: execute is the default.
    const knownAction = TASK_ACTIONS.find(
      (candidate) => candidate === (action ?? (node === undefined ? undefined : 'execute')),
    );
    if (nodeType === undefined || knownAction === undefined) {
      throw new StepthreadError(
        'ASL_COMPILE_ERROR',
        `Task state "${stateName}" has no \${Fn_<NODE_TYPE>} resource and known action; index the definition before substituting resources`,
      );
    }
    const isNode = knownAction !== 'fail' && knownAction !== 'resume' && typeof node?.id === 'string';
    entries.push({
      stateName,
      nodeType,
      action: knownAction,
      ...(isNode ? { nodeId: node.id as string } : {}),
      invocation: waits ? 'waitForTaskToken' : 'direct',
    });
  });
  return entries;
}

/**
 * Replaces `${Fn_<NODE_TYPE>}` placeholders in Task resources (and waitForTaskToken FunctionNames) with
 * the given ARNs; returns a new definition. Throws when a placeholder has no value.
 */
export function substituteResources(
  definition: AslDefinition,
  resources: Readonly<Record<string, string>>,
): AslDefinition {
  const copy = structuredClone(definition);
  const fill = (value: string, stateName: string): string =>
    value.replace(/\$\{([^}]+)\}/g, (_placeholder, key: string) => {
      const resource = Object.hasOwn(resources, key) ? resources[key] : undefined;
      if (resource === undefined) {
        throw new StepthreadError(
          'ASL_COMPILE_ERROR',
          `Task state "${stateName}": no resource given for \${${key}}`,
        );
      }
      return resource;
    });
  forEachState(copy, (stateName, state) => {
    if (state.Type !== 'Task' || state.Resource === START_EXECUTION_RESOURCE) return;
    if ('FunctionName' in state.Parameters) {
      state.Parameters.FunctionName = fill(state.Parameters.FunctionName, stateName);
    } else {
      state.Resource = fill(state.Resource, stateName);
    }
  });
  return copy;
}

/** Visits every state, depth first, Parallel branches (and a Map's item states) right after their state. */
export function forEachState(
  machine: AslStateMachine,
  visit: (stateName: string, state: AslState, machine: AslStateMachine) => void,
): void {
  // Recursion depth is the fork nesting depth, which is small.
  const walk = (current: AslStateMachine): void => {
    for (const [name, state] of Object.entries(current.States)) {
      visit(name, state, current);
      if (state.Type === 'Parallel') for (const branch of state.Branches) walk(branch);
      if (state.Type === 'Map') walk(state.ItemProcessor);
    }
  };
  walk(machine);
}
