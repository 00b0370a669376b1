/**
 * Edits to a copy before its first step (issue 28, counterfactual runs): set a thread or global
 * variable, replace the input (edits of the workflow it runs with, a node's config or a profile, are
 * in copy-workflow-edits.ts). They are checked as the workflow checks its own writes (a declared
 * name, a value of its declared type), applied to the copy's state and recorded on the copy
 * (`metadata.edits`), so `inspect` can say what differs from its source and a copy of the copy
 * rebuilds the same state (time-travel.ts).
 */
import { StepthreadError } from '../errors.ts';
import type { VariableDeclaration } from '../model/schema.ts';
import { deepCopy } from './clone.ts';
import type { RecordedWorkflowEdit, WorkflowEdit } from './copy-workflow-edits.ts';
import type { Thread, Variables } from './types.ts';
import { declaredScope, matchesType } from './variables.ts';

/** An edit of the copy's state as asked for. */
export type StateEdit =
  | { readonly kind: 'variable'; readonly name: string; readonly value: unknown }
  | { readonly kind: 'input'; readonly value: Record<string, unknown> };

/** An edit as asked for: of the copy's state, or of the workflow it runs with (copy-workflow-edits.ts). */
export type CopyEdit = StateEdit | WorkflowEdit;

/** A state edit as recorded on the copy: where it went, and when. */
export type RecordedStateEdit =
  | { kind: 'variable'; name: string; scope: 'thread' | 'global'; value: unknown; at: string }
  | { kind: 'input'; value: Record<string, unknown>; at: string };

/** An edit as recorded on the copy (`metadata.edits`), in the order they were made. */
export type RecordedCopyEdit = RecordedStateEdit | RecordedWorkflowEdit;

/** The metadata key holding a copy's own edits (never inherited by a copy of it). */
export const COPY_EDITS_KEY = 'edits';

/**
 * The copy's edits checked against the workflow's top-level declarations (when known) and the
 * thread's scopes: UNKNOWN_VARIABLE_REFERENCE for a name neither declares nor holds, INVALID_VARIABLE
 * for a value its declared type refuses, INPUT_INVALID for an input that is no object.
 * Readonly variables may be edited: an edit is the author's, made before the run.
 */
export function checkCopyEdits(
  thread: Pick<Thread, 'variables'>,
  edits: readonly StateEdit[],
  declarations: readonly VariableDeclaration[] | undefined,
  at: string,
): RecordedStateEdit[] {
  return edits.map((edit): RecordedStateEdit => {
    if (edit.kind === 'input') {
      const { value } = edit;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new StepthreadError('INPUT_INVALID', 'the input of a copy must be a JSON object');
      }
      return { kind: 'input', value: deepCopy(value), at };
    }
    const declaration = declarations?.find((candidate) => candidate.name === edit.name);
    const declared = declaration === undefined ? undefined : declaredScope(declaration);
    if (declared === 'loop' || declared === 'subgraph') {
      throw new StepthreadError(
        'UNKNOWN_VARIABLE_REFERENCE',
        `variable "${edit.name}" is a ${declared} variable, which lives only while its ${declared === 'loop' ? 'loop iterates' : 'subgraph runs'}; a copy can set thread and global variables`,
      );
    }
    const scope =
      declared ??
      (Object.hasOwn(thread.variables.thread, edit.name)
        ? 'thread'
        : Object.hasOwn(thread.variables.global, edit.name)
          ? 'global'
          : undefined);
    if (scope === undefined) {
      const known = knownNames(thread, declarations);
      throw new StepthreadError(
        'UNKNOWN_VARIABLE_REFERENCE',
        `the workflow declares no thread or global variable "${edit.name}"${known.length > 0 ? ` (it has ${known.join(', ')})` : ''}`,
      );
    }
    if (!matchesType(edit.value, declaration?.type)) {
      throw new StepthreadError(
        'INVALID_VARIABLE',
        `variable "${edit.name}" (${scope}) is declared ${declaration?.type} but was given ${describe(edit.value)}`,
      );
    }
    return { kind: 'variable', name: edit.name, scope, value: deepCopy(edit.value), at };
  });
}

/**
 * The thread with the recorded state edits applied to its variables and input (a new object; scopes
 * copied). Workflow edits are not the state's: they are applied to the workflow (workflowForThread).
 */
export function withCopyEdits<T extends Pick<Thread, 'variables' | 'input'>>(
  thread: T,
  edits: readonly RecordedCopyEdit[],
): T {
  if (edits.length === 0) return thread;
  const variables = {
    ...thread.variables,
    thread: { ...thread.variables.thread },
    global: { ...thread.variables.global },
  };
  let input = thread.input;
  for (const edit of edits) {
    if (edit.kind === 'input') input = deepCopy(edit.value);
    else if (edit.kind === 'variable') defineOwn(variables[edit.scope], edit.name, deepCopy(edit.value));
  }
  return { ...thread, variables, input };
}

/** The edits recorded on a copy (none on any other thread). */
export function copyEditsOf(thread: Pick<Thread, 'metadata'>): RecordedCopyEdit[] {
  const edits = thread.metadata[COPY_EDITS_KEY];
  return Array.isArray(edits) ? (edits as RecordedCopyEdit[]) : [];
}

function knownNames(
  thread: Pick<Thread, 'variables'>,
  declarations: readonly VariableDeclaration[] | undefined,
): string[] {
  const names = new Set<string>();
  for (const declaration of declarations ?? []) {
    const scope = declaredScope(declaration);
    if (scope === 'thread' || scope === 'global') names.add(declaration.name);
  }
  for (const name of Object.keys(thread.variables.thread)) names.add(name);
  for (const name of Object.keys(thread.variables.global)) names.add(name);
  return [...names].sort();
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

function defineOwn(frame: Variables, name: string, value: unknown): void {
  Object.defineProperty(frame, name, { value, writable: true, enumerable: true, configurable: true });
}
