/**
 * A copy's node config and profile edits checked against a deployed workflow (issue 28, `copy --stack`).
 * There is no workflow file on a stack: its state machine's definition is what runs, and each node's
 * Task carries the node's config and (an LLM node) its profile (node-description.ts). So the workflow
 * the edits are checked against is read from there (`deployedWorkflowOf`), and each edit is checked as
 * far as that allows: the node exists at the workflow's top level, the key is one of its type's config
 * keys and one a handler alone reads (node-overlay.ts: it takes effect through the overlay), the
 * edited config passes its type's schema; a profile exists and passes the profile schema. A ROUTE's
 * routes may only go to targets its Choice has; an LLM node may switch to a profile the copy edits.
 * What needs the whole workflow (its edges, expressions against declarations) is checked when it runs.
 */
import { forEachState } from '../asl/resources.ts';
import type { AslStateMachine } from '../asl/types.ts';
import type { CodedError } from '../errors.ts';
import { type NodeType, type Profile, profileSchema } from '../model/schema.ts';
import { closestKey } from '../model/unknown-keys.ts';
import { deepCopy } from './clone.ts';
import {
  CopyEditRefused,
  configKeysOf,
  configSchemaOf,
  describeWorkflowEdit,
  type RecordedWorkflowEdit,
  refusedEdit,
  type WorkflowEdit,
} from './copy-workflow-edits.ts';
import { DEPLOYABLE_CONFIG_KEYS } from './node-overlay.ts';

export interface DeployedNode {
  readonly id: string;
  readonly type: NodeType;
  readonly config: Record<string, unknown>;
}

/** What a deployed definition says of its workflow's top-level nodes and the profiles they use. */
export interface DeployedWorkflow {
  readonly id: string;
  readonly nodes: ReadonlyMap<string, DeployedNode>;
  readonly profiles: ReadonlyMap<string, Profile>;
}

interface TaskNodeData {
  id?: unknown;
  type?: unknown;
  config?: Record<string, unknown>;
  profile?: Profile;
  workflow?: { id?: unknown };
  boundary?: unknown;
  subgraphNodeId?: unknown;
  enclosingSubgraphs?: unknown;
}

/**
 * The deployed workflow as its definition holds it: every node Task's node (Parallel branches and Map
 * items included), those inside a SUBGRAPH as the SUBGRAPH itself, and each LLM node's profile by its
 * id (a scripted profile's per-node replies gathered from every node that uses it).
 */
export function deployedWorkflowOf(definition: AslStateMachine): DeployedWorkflow {
  let id = '';
  const nodes = new Map<string, DeployedNode>();
  const profiles = new Map<string, Profile>();
  forEachState(definition, (_name, state) => {
    if (state.Type !== 'Task') return;
    const parameters = state.Parameters as unknown as {
      action?: unknown;
      node?: TaskNodeData;
      Payload?: unknown;
    };
    const task = (parameters.Payload ?? parameters) as { action?: unknown; node?: TaskNodeData };
    const node = task.node;
    if ((task.action ?? 'execute') !== 'execute' || typeof node?.id !== 'string') return;
    if (node.type === 'START' && typeof node.workflow?.id === 'string') id = node.workflow.id;
    if (node.boundary !== undefined && typeof node.subgraphNodeId === 'string') {
      nodes.set(node.subgraphNodeId, { id: node.subgraphNodeId, type: 'SUBGRAPH', config: {} });
      return;
    }
    if (node.enclosingSubgraphs !== undefined) return;
    nodes.set(node.id, { id: node.id, type: node.type as NodeType, config: node.config ?? {} });
    if (node.type !== 'LLM' || node.profile === undefined) return;
    const profileId = String(node.config?.profileId ?? 'default');
    const known = profiles.get(profileId);
    profiles.set(profileId, known === undefined ? node.profile : mergedScripts(known, node.profile));
  });
  return { id, nodes, profiles };
}

/** A scripted profile's per-node replies, each node's Task having only its own. */
function mergedScripts(a: Profile, b: Profile): Profile {
  if (a.provider !== 'scripted' || b.provider !== 'scripted' || b.byNode === undefined) return a;
  return { ...a, byNode: { ...a.byNode, ...b.byNode } };
}

/**
 * Each edit checked against the deployed workflow (with `inherited` applied first), in order; the
 * edits as recorded. Throws CopyEditRefused: NODE_NOT_FOUND, UNKNOWN_KEY, UNKNOWN_PROFILE,
 * COPY_EDIT_NOT_DEPLOYABLE, INVALID_NODE_CONFIG, SCHEMA_INVALID.
 */
export function checkDeployedWorkflowEdits(
  deployed: DeployedWorkflow,
  inherited: readonly RecordedWorkflowEdit[],
  edits: readonly WorkflowEdit[],
  at: string,
): RecordedWorkflowEdit[] {
  const configs = new Map([...deployed.nodes].map(([id, node]) => [id, { ...node.config }]));
  const editedProfiles = new Set<string>();
  for (const edit of inherited) {
    if (edit.kind === 'profile') editedProfiles.add(edit.profileId);
    else {
      const config = configs.get(edit.nodeId);
      if (config !== undefined) defineOwn(config, edit.key, edit.value);
    }
  }
  const recorded: RecordedWorkflowEdit[] = [];
  const switches: { nodeId: string; profileId: string }[] = [];
  for (const edit of edits) {
    if (edit.kind === 'profile') {
      checkProfileEdit(deployed, edit.profileId, edit.value);
      editedProfiles.add(edit.profileId);
      recorded.push({ kind: 'profile', profileId: edit.profileId, value: deepCopy(edit.value), at });
      continue;
    }
    const node = deployed.nodes.get(edit.nodeId);
    if (node === undefined) {
      const ids = [...deployed.nodes.keys()];
      const meant = closestKey(edit.nodeId, ids);
      throw refusedEdit(
        'NODE_NOT_FOUND',
        `the deployed workflow ${deployed.id} has no node "${edit.nodeId}"${meant ? `; did you mean "${meant}"?` : ''}`,
        edit.nodeId,
      );
    }
    const keys = configKeysOf(node.type);
    if (!keys.includes(edit.key)) {
      const meant = closestKey(edit.key, keys);
      throw refusedEdit(
        'UNKNOWN_KEY',
        `node ${node.id} (${node.type}) has no config key "${edit.key}"${meant ? `; did you mean "${meant}"?` : ''} (${keys.length > 0 ? `its keys: ${keys.join(', ')}` : 'it takes no config'})`,
        node.id,
      );
    }
    const deployable = DEPLOYABLE_CONFIG_KEYS[node.type];
    if (!deployable.includes(edit.key)) {
      throw refusedEdit(
        'COPY_EDIT_NOT_DEPLOYABLE',
        `${describeWorkflowEdit(edit)}: on a deployed stack a copy runs on the state machine as deployed, whose shape (or what the compiler derived from it) this key decides; ${deployable.length > 0 ? `a ${node.type} node's ${deployable.join(', ')} can be edited there` : `a ${node.type} node's config cannot be edited there`}. Change the workflow file and deploy it, or copy the thread into a local run`,
        node.id,
      );
    }
    const config = { ...configs.get(node.id)! };
    defineOwn(config, edit.key, deepCopy(edit.value));
    checkConfig(node, config, edit);
    if (node.type === 'ROUTE') checkRouteTargets(node, config, edit);
    if (node.type === 'LLM' && edit.key === 'profileId') {
      switches.push({ nodeId: node.id, profileId: String(edit.value) });
    }
    configs.set(node.id, config);
    recorded.push({
      kind: 'nodeConfig',
      nodeId: edit.nodeId,
      key: edit.key,
      value: deepCopy(edit.value),
      at,
    });
  }
  for (const { nodeId, profileId } of switches) {
    if (editedProfiles.has(profileId)) continue;
    throw refusedEdit(
      'COPY_EDIT_NOT_DEPLOYABLE',
      `node ${nodeId} config profileId: on a deployed stack node ${nodeId}'s Task holds its own profile only; give the profile it switches to as well: --profile '${profileId}=<json>'`,
      nodeId,
    );
  }
  return recorded;
}

function checkProfileEdit(deployed: DeployedWorkflow, profileId: string, value: unknown): void {
  if (!deployed.profiles.has(profileId)) {
    const ids = [...deployed.profiles.keys()];
    const meant = closestKey(profileId, ids);
    throw refusedEdit(
      'UNKNOWN_PROFILE',
      `the deployed workflow ${deployed.id} has no profile "${profileId}" that a node uses${meant ? `; did you mean "${meant}"?` : ''} (${ids.length > 0 ? `its nodes use ${ids.join(', ')}` : 'no LLM node uses one'})`,
    );
  }
  const parsed = profileSchema.safeParse(value);
  if (!parsed.success) {
    throw new CopyEditRefused(
      parsed.error.issues.map((issue) => ({
        code: 'SCHEMA_INVALID',
        message: `profile ${profileId}${issue.path.length > 0 ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
      })) as [CodedError, ...CodedError[]],
    );
  }
}

function checkConfig(node: DeployedNode, config: Record<string, unknown>, edit: WorkflowEdit): void {
  const schema = configSchemaOf(node.type);
  const parsed = schema?.safeParse(config);
  if (parsed === undefined || parsed.success) return;
  throw new CopyEditRefused(
    parsed.error.issues.map((issue) => ({
      code: 'INVALID_NODE_CONFIG',
      message: `${describeWorkflowEdit(edit)}: ${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`,
      nodeId: node.id,
    })) as [CodedError, ...CodedError[]],
  );
}

/** The deployed Choice after a ROUTE goes to its routes' targets and its default only. */
function checkRouteTargets(node: DeployedNode, config: Record<string, unknown>, edit: WorkflowEdit): void {
  const targetsOf = (routes: unknown) =>
    Array.isArray(routes)
      ? routes.map((route) => String((route as { targetNodeId?: unknown }).targetNodeId))
      : [];
  const known = new Set(targetsOf(node.config.routes));
  if (typeof node.config.defaultTargetNodeId === 'string') known.add(node.config.defaultTargetNodeId);
  const unknown = targetsOf(config.routes).filter((target) => !known.has(target));
  if (unknown.length === 0) return;
  throw refusedEdit(
    'COPY_EDIT_NOT_DEPLOYABLE',
    `${describeWorkflowEdit(edit)}: the deployed state machine routes ${node.id} to ${[...known].join(', ')} only, not to ${unknown.join(', ')}; change the workflow file and deploy it to route elsewhere`,
    node.id,
  );
}

function defineOwn(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true });
}
