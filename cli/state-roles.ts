/**
 * What each state of a compiled definition is to a reader of `run`'s progress: the state names are
 * the compiler's (engine/asl/compile.ts), where a node's Task is named after the node but FORKs,
 * JOINs, USER_INTERACTIONs and failures add states of their own (`split:paths`, `split:facts`,
 * `merge:facts`, `merge:facts:failed`, `approve:answer`, `:fail`, …). Read from each Task's
 * payload (its action and node), not from the names, which the compiler may shorten.
 */
import { isNodeRef, type NodeTable } from '../engine/asl/node-table.ts';
import type { AslDefinition, AslState, AslStateMachine } from '../engine/asl/types.ts';
import { START_EXECUTION_RESOURCE, WAIT_FOR_TASK_TOKEN } from '../engine/asl/types.ts';

export type StateRole =
  /**
   * A node's Task. `enters` / `exits`: whether its → / ✓ lines are the node's (a USER_INTERACTION
   * waiting for its answer enters in one Task and ends in its `:answer` Task).
   */
  | {
      kind: 'node';
      nodeId: string;
      nodeType: string;
      loopId?: string;
      enters: boolean;
      exits: boolean;
      /** The JOIN this node's step reports its fork path to (the path's last node: compile.ts). */
      reportsTo?: string;
    }
  /** A FORK's Parallel or Map: its lines are the FORK node's; only how it ended unusually is shown. */
  | { kind: 'fork'; forkId: string; joinId?: string }
  /** The Pass that starts a FORK's path (or list item) on its thread. */
  | { kind: 'path'; pathId: string; item: boolean }
  /** A path's report to its JOIN: shown only when it decides the join. */
  | { kind: 'join-report'; joinId: string }
  /** A successor execution taking the run over (continue-as-new): shown as `resume at <node>`. */
  | { kind: 'resume' }
  /** Bookkeeping no reader needs (a failure already shown, a join timer). */
  | { kind: 'hidden' };

interface Payload {
  action?: string;
  node?: { id?: string; type?: string; config?: { loopId?: unknown }; path?: { authorPathId?: string } };
  /** A path's last node's Task: the JOIN it reports to, as a `branch-done` Task's node. */
  report?: NonNullable<Payload['node']>;
}

function payloadOf(state: AslState): Payload | undefined {
  if (state.Type !== 'Task') return undefined;
  const parameters = (state as { Parameters?: { Payload?: Payload } & Payload }).Parameters;
  return parameters?.Payload ?? parameters;
}

/**
 * Each state's role, by name; states that are none of these (Choice, Wait, Fail, …) are not listed. A
 * node's Tasks name it in `nodeTable` (engine/asl/node-table.ts): its type and loop are read there.
 */
export function stateRolesOf(definition: AslDefinition, nodeTable?: NodeTable): Map<string, StateRole> {
  const roles = new Map<string, StateRole>();
  walk(definition, roles, nodeTable);
  return roles;
}

function walk(machine: AslStateMachine, roles: Map<string, StateRole>, nodeTable?: NodeTable): void {
  for (const [name, state] of Object.entries(machine.States)) {
    const role = roleOf(state, nodeTable);
    if (role) roles.set(name, role);
    for (const branch of branchesOf(state)) {
      const report = joinReportIn(branch);
      const start = branch.States[branch.StartAt];
      // A path starts with a Pass that moves the envelope to the path's (or item's) thread.
      if (report?.path?.authorPathId !== undefined && start?.Type === 'Pass') {
        roles.set(branch.StartAt, {
          kind: 'path',
          pathId: report.path.authorPathId,
          item: state.Type === 'Map',
        });
      }
      walk(branch, roles, nodeTable);
    }
    if (state.Type === 'Parallel' || state.Type === 'Map') {
      const report = joinReportDeep(state);
      roles.set(name, {
        kind: 'fork',
        forkId: (report as { forkId?: string } | undefined)?.forkId ?? name,
        ...(report?.id === undefined ? {} : { joinId: report.id }),
      });
    }
  }
}

function roleOf(state: AslState, nodeTable: NodeTable | undefined): StateRole | undefined {
  const task = state as {
    Resource?: string;
    Parameters?: { Input?: { resume?: { node?: { id?: string } } } };
  };
  if (state.Type === 'Task' && task.Resource === START_EXECUTION_RESOURCE) {
    // The run goes on in a new execution from the ROUTE or LOOP_END it names.
    const at = task.Parameters?.Input?.resume?.node?.id ?? '?';
    return { kind: 'node', nodeId: `continue-as-new at ${at}`, nodeType: '', enters: true, exits: true };
  }
  const payload = payloadOf(state);
  // A node's own Task names no action: execute is the default.
  const action = payload?.action ?? (payload?.node === undefined ? undefined : 'execute');
  if (payload === undefined || action === undefined) return undefined;
  const written: unknown = payload.node;
  const node: NonNullable<Payload['node']> = isNodeRef(written)
    ? { id: written.id, ...(nodeTable?.nodes[written.id] as Payload['node']) }
    : (payload.node ?? {});
  switch (action) {
    case 'execute': {
      const waits = (state as { Resource?: string }).Resource === WAIT_FOR_TASK_TOKEN;
      const loopId = typeof node.config?.loopId === 'string' ? node.config.loopId : undefined;
      return {
        kind: 'node',
        nodeId: node.id ?? '',
        nodeType: node.type ?? '',
        ...(loopId === undefined ? {} : { loopId }),
        enters: true,
        exits: !waits,
        ...(payload.report?.id === undefined ? {} : { reportsTo: payload.report.id }),
      };
    }
    case 'answer':
      return { kind: 'node', nodeId: node.id ?? '', nodeType: node.type ?? '', enters: false, exits: true };
    case 'branch-done':
      return { kind: 'join-report', joinId: node.id ?? '' };
    case 'resume':
      return { kind: 'resume' };
    default:
      return { kind: 'hidden' };
  }
}

function branchesOf(state: AslState): AslStateMachine[] {
  const nested = state as {
    Branches?: AslStateMachine[];
    ItemProcessor?: AslStateMachine;
    Iterator?: AslStateMachine;
  };
  return [
    ...(nested.Branches ?? []),
    ...(nested.ItemProcessor ? [nested.ItemProcessor] : []),
    ...(nested.Iterator ? [nested.Iterator] : []),
  ];
}

type JoinNode = NonNullable<Payload['node']> & { forkId?: string };

/** The JOIN node a branch reports to (its `branch-done` Task's, or its last node's `report`), if any. */
function joinReportIn(branch: AslStateMachine): JoinNode | undefined {
  for (const state of Object.values(branch.States)) {
    const payload = payloadOf(state);
    if (payload?.action === 'branch-done') return payload.node as JoinNode;
    if (payload?.report !== undefined) return payload.report as JoinNode;
  }
  return undefined;
}

/** The JOIN a FORK's Parallel or Map reports to: its branches' reports, or those a level further in. */
function joinReportDeep(state: AslState): JoinNode | undefined {
  for (const branch of branchesOf(state)) {
    const own = joinReportIn(branch);
    if (own) return own;
    for (const inner of Object.values(branch.States)) {
      const found = inner.Type === 'Parallel' || inner.Type === 'Map' ? joinReportDeep(inner) : undefined;
      if (found) return found;
    }
  }
  return undefined;
}
