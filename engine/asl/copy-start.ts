/**
 * Starting a copied thread on a compiled definition as it is (issue 28, counterfactual runs on a
 * deployed stack). Locally `run --thread` compiles the workflow from the copy's node; a deployed state
 * machine cannot be recompiled per copy, so every definition has one entry for it: the execution input
 * `{ resume: { copy: true, at, node, envelope } }` goes through `stepthread:dispatch` to
 * `stepthread:resume`, which claims the copy for this execution (functions/nodes/copy-start.ts), and
 * `stepthread:resume-at` jumps to the Task of the node the copy stands at (`at`, its state name). From
 * there the run is the local one: loop state, variables and conversation come from the thread.
 */
import { StepthreadError } from '../errors.ts';
import type { Budget, NodeType } from '../model/schema.ts';
import type { Envelope, Thread } from '../thread/types.ts';
import { DISPATCH_STATE, RESUME_AT_STATE } from './continuation.ts';
import type { AslCondition, AslDefinition, AslState } from './types.ts';

/**
 * The Comment of a `stepthread:resume-at` Choice compiled without a rule per top-level node: the
 * definition fits Step Functions' quota only without them (compile.ts), so no copy starts on it.
 */
export const NO_COPY_STARTS_COMMENT = 'no copy starts here: with a rule per node the definition is too large';

/** Where a copy starts: the Task of its node (a top-level state of the definition). */
export interface CopyStartPoint {
  copy: true;
  /** The node's Task state name. */
  at: string;
  node: { id: string; type: NodeType };
  /** The run's budget (the workflow's, each limit the starter gives over it), set as START would. */
  budget?: Budget;
}

/** A copy's first execution input. */
export interface CopyStartInput {
  resume: CopyStartPoint & {
    /** The copy's envelope at its step; `executionId` is empty (the execution's own is used). */
    envelope: Envelope;
  };
}

export function isCopyStart(resume: object | undefined): resume is CopyStartPoint {
  return (resume as { copy?: unknown } | undefined)?.copy === true;
}

interface StartNodeFacts {
  readonly workflowId: string;
  readonly maxSteps: number;
  readonly budget?: Budget;
}

/** The top-level Task that runs `nodeId` (`execute`; a waiting Task's node is in its Payload). */
function nodeTaskOf(definition: AslDefinition, nodeId: string): { at: string; type: NodeType } | undefined {
  for (const [name, state] of Object.entries(definition.States)) {
    if (state.Type !== 'Task') continue;
    const parameters = state.Parameters as unknown as Record<string, unknown>;
    const task = (parameters.Payload ?? parameters) as {
      action?: unknown;
      node?: { id?: unknown; type?: unknown };
    };
    if ((task.action ?? 'execute') !== 'execute' || task.node?.id !== nodeId) continue;
    return { at: name, type: task.node.type as NodeType };
  }
  return undefined;
}

/** Each top-level node's Task (as nodeTaskOf finds it), by state name. */
function nodeTasksOf(definition: AslDefinition): Map<string, string> {
  const tasks = new Map<string, string>();
  for (const [name, state] of Object.entries(definition.States)) {
    if (state.Type !== 'Task') continue;
    const parameters = state.Parameters as unknown as Record<string, unknown>;
    const task = (parameters.Payload ?? parameters) as { action?: unknown; node?: { id?: unknown } };
    if ((task.action ?? 'execute') !== 'execute' || typeof task.node?.id !== 'string') continue;
    tasks.set(name, task.node.id);
  }
  return tasks;
}

/** The choices a step's envelope carries for the Choice states after it: a ROUTE's, a loop's. */
type StepChoices = Pick<Envelope, 'route' | 'loop'>;

function valueAt(choices: StepChoices, path: string): unknown {
  if (path === '$.route') return choices.route;
  if (path === '$.loop.exit') return choices.loop?.exit;
  // Anything else (a continuation's history count) is not the step's choice: read as absent.
  return undefined;
}

function holds(condition: AslCondition, choices: StepChoices): boolean {
  if ('And' in condition) return condition.And.every((part) => holds(part, choices));
  if ('Not' in condition) return !holds(condition.Not, choices);
  const value = valueAt(choices, condition.Variable);
  if ('IsPresent' in condition) return (value !== undefined) === condition.IsPresent;
  if ('StringEquals' in condition) return value === condition.StringEquals;
  if ('BooleanEquals' in condition) return value === condition.BooleanEquals;
  return false;
}

/** Where a state goes on, a Choice by the step's choices; undefined where no single path goes on. */
function followingState(state: AslState | undefined, choices: StepChoices): string | undefined {
  switch (state?.Type) {
    case 'Task':
    case 'Pass':
      return state.Next;
    case 'Choice':
      return state.Choices.find((rule) => holds(rule, choices))?.Next ?? state.Default;
    default:
      // A FORK's Parallel or Map (its branches run on their own threads), a Fail, the end.
      return undefined;
  }
}

/**
 * The top-level node the state machine goes to after the thread's last step, as that step's envelope
 * chose it (a ROUTE's target, a loop's exit): where its run was when it stopped between steps (a
 * cancel at a model call or a question, whose step left no trace), so a copy of it stands there on a
 * deployed stack. Undefined where no single node comes next on this thread (after a FORK or END, a
 * fork branch), or when the last step failed (its node is where it stopped).
 */
export function nodeAfterLastStep(
  definition: AslDefinition,
  thread: Pick<Thread, 'currentNodeId' | 'lastEnvelope' | 'metadata'>,
): string | undefined {
  const envelope = thread.lastEnvelope;
  if (envelope === undefined || envelope.last?.status === 'FAILED') return undefined;
  if (thread.metadata.forkPathId !== undefined) return undefined;
  const tasks = nodeTasksOf(definition);
  const from = [...tasks].find(([, nodeId]) => nodeId === thread.currentNodeId)?.[0];
  if (from === undefined) return undefined;
  const choices: StepChoices = {
    ...(envelope.route === undefined ? {} : { route: envelope.route }),
    ...(envelope.loop === undefined ? {} : { loop: envelope.loop }),
  };
  let name = followingState(definition.States[from], choices);
  // Bookkeeping states (an answer's commit, a Choice) lie between two nodes' Tasks: a few at most.
  for (let hops = 0; name !== undefined && hops < 100; hops += 1) {
    const nodeId = tasks.get(name);
    if (nodeId !== undefined) return nodeId;
    name = followingState(definition.States[name], choices);
  }
  return undefined;
}

/** What START's Task says of the workflow: its id, step limit and budget. */
function startFactsOf(definition: AslDefinition): StartNodeFacts | undefined {
  for (const state of Object.values(definition.States)) {
    if (state.Type !== 'Task') continue;
    const node = (state.Parameters as { action?: unknown; node?: { type?: unknown; workflow?: unknown } })
      .node;
    if (node?.type !== 'START' || node.workflow === undefined) continue;
    const workflow = node.workflow as { id: string; maxSteps: number; budget?: Budget };
    return {
      workflowId: workflow.id,
      maxSteps: workflow.maxSteps,
      ...(workflow.budget === undefined ? {} : { budget: workflow.budget }),
    };
  }
  return undefined;
}

function startsCopiesAt(definition: AslDefinition, at: string): boolean {
  const dispatch = definition.States[DISPATCH_STATE];
  const resumeAt: AslState | undefined = definition.States[RESUME_AT_STATE];
  return (
    definition.StartAt === DISPATCH_STATE &&
    dispatch?.Type === 'Choice' &&
    resumeAt?.Type === 'Choice' &&
    resumeAt.Choices.some((rule) => 'StringEquals' in rule && rule.StringEquals === at && rule.Next === at)
  );
}

/**
 * The execution input that starts `thread` (a copy, not started yet) at its current node on
 * `definition`; `budget` is the starter's (`start --budget`), each limit over the workflow's. Coded
 * errors: NODE_NOT_FOUND when the node is no top-level node of the definition, INVALID_STATE_MACHINE
 * when the definition predates this entry (deployed before it: deploy again).
 */
export function copyStartInput(
  definition: AslDefinition,
  thread: Pick<Thread, 'id' | 'workflowId' | 'workflowVersion' | 'currentNodeId' | 'step'>,
  budget?: Budget,
): CopyStartInput {
  const start = startFactsOf(definition);
  if (start === undefined) {
    throw new StepthreadError(
      'INVALID_STATE_MACHINE',
      'the definition has no START Task: it is not a stepthread workflow',
    );
  }
  if (start.workflowId !== thread.workflowId) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `thread ${thread.id} belongs to workflow ${thread.workflowId}, not ${start.workflowId}`,
    );
  }
  const nodeId = thread.currentNodeId;
  const task = nodeId === undefined ? undefined : nodeTaskOf(definition, nodeId);
  if (nodeId === undefined || task === undefined || task.type === 'START' || task.type === 'JOIN') {
    throw new StepthreadError(
      'NODE_NOT_FOUND',
      `thread ${thread.id} stands at ${nodeId === undefined ? 'no node' : `node ${nodeId}`}, which is no top-level node of workflow ${start.workflowId} a copy can start at (START makes a new run: start one; a JOIN's branches ran in its source's run: copy from the FORK)`,
      nodeId === undefined ? {} : { nodeId },
    );
  }
  const resumeAt: AslState | undefined = definition.States[RESUME_AT_STATE];
  if (resumeAt?.Type === 'Choice' && resumeAt.Comment === NO_COPY_STARTS_COMMENT) {
    throw new StepthreadError(
      'DEFINITION_TOO_LARGE',
      `the state machine of workflow ${start.workflowId} starts no copies: a Choice rule per top-level node would take its definition past Step Functions' limit of 1,048,576 bytes, so it was compiled without them; run the copy locally (stepthread run <workflow file> --thread ${thread.id}), or split the workflow into smaller ones and deploy again`,
      { nodeId },
    );
  }
  if (!startsCopiesAt(definition, task.at)) {
    throw new StepthreadError(
      'INVALID_STATE_MACHINE',
      `the state machine of workflow ${start.workflowId} was deployed before copies could start on it (its definition has no entry at ${task.at}): deploy the workflow again`,
      { nodeId },
    );
  }
  const runBudget = { ...start.budget, ...budget };
  return {
    resume: {
      copy: true,
      at: task.at,
      node: { id: nodeId, type: task.type },
      ...(Object.keys(runBudget).length > 0 ? { budget: runBudget } : {}),
      envelope: {
        executionId: '',
        workflowId: thread.workflowId,
        workflowVersion: thread.workflowVersion,
        rootThreadId: thread.id,
        threadId: thread.id,
        step: thread.step ?? 0,
        maxSteps: start.maxSteps,
      },
    },
  };
}
