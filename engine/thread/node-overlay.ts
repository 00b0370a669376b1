/**
 * A copy's node config and profile edits applied where a node runs (issue 28, on a deployed stack).
 * Locally a copy's workflow is compiled with its edits (workflowForThread); a deployed state machine
 * bakes each node's config and profile into its Tasks and cannot be recompiled per copy, so each
 * handler applies the edits its run's root thread records (`metadata.workflowEdits`) to the node it
 * was given, whatever gave it (the definition's Parameters, or a node table). Applied to a node
 * compiled with the edits already, it changes nothing: the same keys get the same values.
 *
 * Only edits a handler alone reads can take effect this way: `DEPLOYABLE_CONFIG_KEYS` lists them per
 * node type. A key that shapes the state machine (a FORK's paths, a ROUTE's default, whether a
 * USER_INTERACTION waits) or what the compiler derived from it (the declarations of an
 * `outputVariable`, the tool definitions of `tools`) is refused on a stack at copy time
 * (COPY_EDIT_NOT_DEPLOYABLE).
 */
import type { NodeType, Profile } from '../model/schema.ts';
import type { RecordedWorkflowEdit } from './copy-workflow-edits.ts';

/** The config keys a handler alone reads, by node type: what a copy may edit on a deployed stack. */
export const DEPLOYABLE_CONFIG_KEYS: Readonly<Record<NodeType, readonly string[]>> = {
  START: [],
  END: ['output'],
  VARIABLE: ['expression'],
  CODE: ['code', 'language', 'timeoutMs', 'memoryLimitMb', 'inputs'],
  FORK: [],
  JOIN: [],
  // Routes whose targets the deployed Choice has (checked at copy time: deployed-workflow-edits.ts).
  ROUTE: ['routes'],
  LOOP_START: ['dataSource', 'maxIterations'],
  LOOP_END: ['breakCondition'],
  // profileId: to a profile the copy also edits (its content is not in this node's Task).
  LLM: ['profileId', 'prompt', 'systemPrompt', 'parameters', 'maxToolCallsPerRequest', 'onTokenLimit'],
  TOOL: ['arguments'],
  USER_INTERACTION: ['showMessage', 'options'],
  CONTEXT_PROCESSOR: ['version', 'truncate', 'insert', 'replace', 'clear', 'filter'],
  SUBGRAPH: [],
};

/** The part of a node description the overlay reads and replaces. */
export interface OverlaidNode {
  id: string;
  authorId?: string;
  type: NodeType;
  config?: unknown;
  profile?: Profile;
  enclosingSubgraphs?: unknown;
}

/**
 * `node` with the edits that concern it applied in order (the same object when none does): a
 * config key of this very node (a top-level node of the workflow: nodes inside a SUBGRAPH are the
 * SUBGRAPH's config), then, for an LLM node, the profile its config names when an edit replaced it.
 */
export function withNodeOverlay<T extends OverlaidNode>(node: T, edits: readonly RecordedWorkflowEdit[]): T {
  if (edits.length === 0 || node.enclosingSubgraphs !== undefined || 'boundary' in node) return node;
  let config: Record<string, unknown> | undefined;
  for (const edit of edits) {
    if (edit.kind !== 'nodeConfig' || edit.nodeId !== node.id) continue;
    config ??= { ...((node.config ?? {}) as Record<string, unknown>) };
    defineOwn(config, edit.key, structuredClone(edit.value));
  }
  let profile: Profile | undefined;
  if (node.type === 'LLM') {
    const profileId = ((config ?? node.config) as { profileId?: string } | undefined)?.profileId ?? 'default';
    const edit = edits.findLast(
      (candidate) => candidate.kind === 'profile' && candidate.profileId === profileId,
    );
    if (edit !== undefined) profile = ownProfile(structuredClone(edit.value) as Profile, node);
  }
  if (config === undefined && profile === undefined) return node;
  return {
    ...node,
    ...(config === undefined ? {} : { config }),
    ...(profile === undefined ? {} : { profile }),
  };
}

/** A scripted profile's byNode entries for this node only, as the compiler gives each LLM Task. */
function ownProfile(profile: Profile, node: OverlaidNode): Profile {
  if (profile.provider !== 'scripted' || profile.byNode === undefined) return profile;
  const own = Object.entries(profile.byNode).filter(([key]) => key === node.id || key === node.authorId);
  const { byNode: _all, ...rest } = profile;
  return own.length > 0 ? { ...rest, byNode: Object.fromEntries(own) } : rest;
}

function defineOwn(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true });
}
