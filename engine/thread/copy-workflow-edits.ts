/**
 * Edits of the workflow a copy runs with (issue 28, counterfactual runs): one config key of a node
 * (`copy --node-config <node>.<key>=<json>`) or a whole profile (`copy --profile <id>=<json>`). A
 * node's config and its profile are baked into the compiled definition (engine/asl/task-input.ts), so
 * they cannot go into the copy's state as a variable edit does: the copy records them
 * (`metadata.workflowEdits`, with its source's before them) and whoever runs it compiles the workflow
 * with them applied (`workflowForThread`), its resumes and continuations included. A copy of the copy
 * inherits them. Each is checked as a workflow file is: the node exists, the key is one of its type's
 * config keys, the profile exists, and the edited workflow passes validation.
 */
import type { z } from 'zod';
import { type CodedError, type ErrorCode, StepthreadError } from '../errors.ts';
import {
  codeConfigSchema,
  contextProcessorConfigSchema,
  endConfigSchema,
  forkConfigSchema,
  joinConfigSchema,
  llmConfigSchema,
  loopEndConfigSchema,
  loopStartConfigSchema,
  type NodeType,
  routeConfigSchema,
  startConfigSchema,
  toolNodeConfigSchema,
  userInteractionConfigSchema,
  variableConfigSchema,
  type Workflow,
} from '../model/schema.ts';
import { closestKey } from '../model/unknown-keys.ts';
import type { CodeSource } from '../validation/code-sources.ts';
import { validateWorkflow } from '../validation/validate.ts';
import { deepCopy } from './clone.ts';
import type { Thread } from './types.ts';

/** A workflow edit as asked for. */
export type WorkflowEdit =
  | { readonly kind: 'nodeConfig'; readonly nodeId: string; readonly key: string; readonly value: unknown }
  | { readonly kind: 'profile'; readonly profileId: string; readonly value: unknown };

/** A workflow edit as recorded on the copy, with when it was made. */
export type RecordedWorkflowEdit =
  | { kind: 'nodeConfig'; nodeId: string; key: string; value: unknown; at: string }
  | { kind: 'profile'; profileId: string; value: unknown; at: string };

/** The metadata key holding the workflow edits a thread runs with: its sources', then its own. */
export const WORKFLOW_EDITS_KEY = 'workflowEdits';

/**
 * An edit refused at copy time, with every problem it has (a validation may find several). Its code
 * is the first problem's; callers report them all (exit 2 in the CLI, 400 in dev's API).
 */
export class CopyEditRefused extends StepthreadError {
  readonly errors: readonly CodedError[];
  constructor(errors: readonly [CodedError, ...CodedError[]]) {
    const [first] = errors;
    super(first.code, first.message, first.nodeId === undefined ? {} : { nodeId: first.nodeId });
    this.errors = errors;
  }
}

/** One coded refusal as a CopyEditRefused. */
export function refusedEdit(code: ErrorCode, message: string, nodeId?: string): CopyEditRefused {
  return new CopyEditRefused([{ code, message, ...(nodeId === undefined ? {} : { nodeId }) }]);
}

export function isWorkflowEdit(edit: { readonly kind: string }): edit is WorkflowEdit {
  return edit.kind === 'nodeConfig' || edit.kind === 'profile';
}

/** How an edit is named in messages and `inspect`: `node reply config prompt`, `profile default`. */
export function describeWorkflowEdit(edit: WorkflowEdit): string {
  return edit.kind === 'nodeConfig' ? `node ${edit.nodeId} config ${edit.key}` : `profile ${edit.profileId}`;
}

const CONFIG_SCHEMAS: Record<Exclude<NodeType, 'SUBGRAPH'>, z.ZodObject> = {
  START: startConfigSchema,
  END: endConfigSchema,
  VARIABLE: variableConfigSchema,
  CODE: codeConfigSchema,
  FORK: forkConfigSchema,
  JOIN: joinConfigSchema,
  ROUTE: routeConfigSchema,
  LOOP_START: loopStartConfigSchema,
  LOOP_END: loopEndConfigSchema,
  LLM: llmConfigSchema,
  TOOL: toolNodeConfigSchema,
  USER_INTERACTION: userInteractionConfigSchema,
  CONTEXT_PROCESSOR: contextProcessorConfigSchema,
};

/** The schema of a node type's config (none for SUBGRAPH, whose config nests a workflow). */
export function configSchemaOf(type: NodeType): z.ZodObject | undefined {
  return type === 'SUBGRAPH' ? undefined : CONFIG_SCHEMAS[type];
}

/** The config keys a node of this type takes (engine/model/schema.ts). */
export function configKeysOf(type: NodeType): string[] {
  // The SUBGRAPH schema is lazy (it nests a workflow): its keys are listed here.
  if (type === 'SUBGRAPH') return ['workflow', 'inputMapping', 'outputMapping'];
  return Object.keys(CONFIG_SCHEMAS[type].shape);
}

/** The workflow with the edits applied in order (no checks: they were checked when recorded). */
export function withWorkflowEdits(workflow: Workflow, edits: readonly WorkflowEdit[]): Workflow {
  if (edits.length === 0) return workflow;
  const edited: Workflow = { ...workflow, nodes: [...workflow.nodes] };
  for (const edit of edits) {
    if (edit.kind === 'profile') {
      edited.profiles = { ...edited.profiles };
      defineOwn(edited.profiles, edit.profileId, deepCopy(edit.value));
      continue;
    }
    const index = edited.nodes.findIndex((node) => node.id === edit.nodeId);
    if (index < 0) continue;
    const node = edited.nodes[index]!;
    const config = { ...(('config' in node ? node.config : undefined) ?? {}) } as Record<string, unknown>;
    defineOwn(config, edit.key, deepCopy(edit.value));
    edited.nodes[index] = { ...node, config } as Workflow['nodes'][number];
  }
  return edited;
}

/** The workflow edits a thread runs with (none for a thread that is no edited copy, or a copy of one). */
export function workflowEditsOf(thread: Pick<Thread, 'metadata'>): RecordedWorkflowEdit[] {
  const edits = thread.metadata[WORKFLOW_EDITS_KEY];
  return Array.isArray(edits) ? (edits as RecordedWorkflowEdit[]) : [];
}

/** The workflow a thread runs with: `workflow` with the thread's workflow edits applied. */
export function workflowForThread(workflow: Workflow, thread: Pick<Thread, 'metadata'>): Workflow {
  return withWorkflowEdits(workflow, workflowEditsOf(thread));
}

export interface CheckedWorkflowEdits {
  /** The edits as recorded, in order. */
  readonly recorded: RecordedWorkflowEdit[];
  /** The workflow with `inherited` and the edits applied. */
  readonly workflow: Workflow;
  /** The CODE the edited workflow gives the sandbox, for the host to check that it compiles. */
  readonly codeSources: CodeSource[];
}

/**
 * Checks each edit on `workflow` (with the `inherited` edits already applied), in order: a node the
 * workflow has (NODE_NOT_FOUND; top-level nodes only, as a copy runs them), one of its type's config
 * keys (UNKNOWN_KEY), a profile it has (UNKNOWN_PROFILE), then the workflow as edited so far through
 * validation — only the problems the edit brings are its own. Throws CopyEditRefused.
 */
export function checkWorkflowEdits(
  base: Workflow,
  inherited: readonly WorkflowEdit[],
  edits: readonly WorkflowEdit[],
  at: string,
): CheckedWorkflowEdits {
  let workflow = withWorkflowEdits(base, inherited);
  let known = problemKeys(validateWorkflow(workflow).errors);
  const recorded: RecordedWorkflowEdit[] = [];
  let codeSources: CodeSource[] = [];
  for (const edit of edits) {
    refuseUnknownTarget(workflow, edit);
    const next = withWorkflowEdits(workflow, [edit]);
    const result = validateWorkflow(next);
    const added = result.errors.filter((error) => !known.has(problemKey(error)));
    if (added.length > 0) {
      const what = describeWorkflowEdit(edit);
      throw new CopyEditRefused(
        added.map((error) => ({ ...error, message: `${what}: ${error.message}` })) as [
          CodedError,
          ...CodedError[],
        ],
      );
    }
    known = problemKeys(result.errors);
    codeSources = result.codeSources;
    workflow = next;
    recorded.push(
      edit.kind === 'nodeConfig'
        ? { kind: 'nodeConfig', nodeId: edit.nodeId, key: edit.key, value: deepCopy(edit.value), at }
        : { kind: 'profile', profileId: edit.profileId, value: deepCopy(edit.value), at },
    );
  }
  return { recorded, workflow, codeSources };
}

function refuseUnknownTarget(workflow: Workflow, edit: WorkflowEdit): void {
  if (edit.kind === 'profile') {
    const profiles = Object.keys(workflow.profiles ?? {});
    if (Object.hasOwn(workflow.profiles ?? {}, edit.profileId)) return;
    const meant = closestKey(edit.profileId, profiles);
    throw refusedEdit(
      'UNKNOWN_PROFILE',
      `workflow ${workflow.id} has no profile "${edit.profileId}"${meant ? `; did you mean "${meant}"?` : ''} (${profiles.length > 0 ? `it has ${profiles.join(', ')}` : 'it declares none'}); a copy can edit a profile its workflow has`,
    );
  }
  const node = workflow.nodes.find((candidate) => candidate.id === edit.nodeId);
  if (node === undefined) {
    const ids = workflow.nodes.map((candidate) => candidate.id);
    const meant = closestKey(edit.nodeId, ids);
    const inSubgraph = edit.nodeId.includes('.')
      ? '; a node inside a SUBGRAPH is edited through the SUBGRAPH\'s "workflow" key'
      : '';
    throw refusedEdit(
      'NODE_NOT_FOUND',
      `workflow ${workflow.id} has no node "${edit.nodeId}"${meant ? `; did you mean "${meant}"?` : ''}${inSubgraph}`,
      edit.nodeId,
    );
  }
  const keys = configKeysOf(node.type);
  if (keys.includes(edit.key)) return;
  const meant = closestKey(edit.key, keys);
  throw refusedEdit(
    'UNKNOWN_KEY',
    `node ${node.id} (${node.type}) has no config key "${edit.key}"${meant ? `; did you mean "${meant}"?` : ''} (${keys.length > 0 ? `its keys: ${keys.join(', ')}` : 'it takes no config'})`,
    node.id,
  );
}

function problemKey(error: CodedError): string {
  return `${error.code}\n${error.path ?? ''}\n${error.message}`;
}

function problemKeys(errors: readonly CodedError[]): Set<string> {
  return new Set(errors.map(problemKey));
}

function defineOwn(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true });
}
