/**
 * Workflow → Amazon States Language, following runtime-design.md: one Task per node named after it,
 * Choice states after ROUTE and loop markers, a Parallel per fork (one per path for a serial fork), and
 * only a small envelope flowing between states. Pure and deterministic: the same workflow compiles to
 * byte-identical JSON.
 */
import { type CodedError, StepthreadError } from '../errors.ts';
import { stronglyConnectedComponents } from '../graph/algorithms.ts';
import { buildGraph } from '../graph/build.ts';
import type { GraphForkPair, GraphJoinNode, GraphNode, Transition, WorkflowGraph } from '../graph/types.ts';
import {
  type ForkConfig,
  forkStrategyOf,
  NODE_TYPES,
  type NodeType,
  type UserInteractionConfig,
  type Workflow,
} from '../model/schema.ts';
import { completedPathEndsAtReport } from '../thread/join.ts';
import {
  CONTINUED_STATE,
  checkContinueAfterEvents,
  DEFAULT_CONTINUE_AFTER_EVENTS,
  DISPATCH_STATE,
  EXECUTION_ALREADY_EXISTS,
  HISTORY_EVENTS,
  NO_RESUME_POINT_STATE,
  RESUME_AT_STATE,
  RESUME_HISTORY_EVENTS,
  RESUME_TASK,
  SUCCESSOR_NAME_EXPRESSION,
} from './continuation.ts';
import { NO_COPY_STARTS_COMMENT } from './copy-start.ts';
import { createStateNames, type StateNames } from './names.ts';
import { describeFail, describeJoinBranch, describeJoinTimeout, describeNode } from './node-description.ts';
import { type CompiledNodeTable, compiledNodeTable, type NodeRef } from './node-table.ts';
import { resourceFor, substitutionKey } from './resources.ts';
import {
  ASL_ERRORS,
  type EnvelopeTaskParameters,
  JOIN_DECIDED_KEY,
  type JoinBranchDescription,
  type LlmDescription,
  type NodeDescription,
  type UserInteractionDescription,
} from './task-input.ts';
import {
  type AslCatcher,
  type AslChoiceRule,
  type AslCondition,
  type AslDefinition,
  type AslDirectTaskState,
  type AslFlow,
  type AslMapState,
  type AslParallelState,
  type AslRetrier,
  type AslStartExecutionTaskState,
  type AslState,
  type AslStateMachine,
  INTERACTION_ANSWER_PATH,
  START_EXECUTION_RESOURCE,
  WAIT_FOR_TASK_TOKEN,
} from './types.ts';

export interface CompileOptions {
  /**
   * Continue-as-new (continuation.ts): once an execution's estimated history reaches this many events,
   * the next top-level ROUTE or LOOP_END on a cycle continues the run in a new execution. `false` turns
   * it off (EXPRESS state machines have no history limit). Default DEFAULT_CONTINUE_AFTER_EVENTS; a
   * workflow without a top-level cycle compiles the same either way.
   */
  continueAfterEvents?: number | false;
  /**
   * The size a definition may reach (default MAX_DEFINITION_BYTES, Step Functions' quota). Only a
   * measurement that runs locally what could not deploy raises it (bench/long-runs.ts).
   */
  maxDefinitionBytes?: number;
  /**
   * Carry the trace context (OpenTelemetry) into fork branches and Map items: each FORK Task says so
   * (`traceContext: true`, so its handler always gives `fork.traceparent`) and each branch's and item's
   * envelope takes `traceparent` from it. Off (the default), the definition is the same as before.
   */
  traceContext?: boolean;
}

export interface CompiledWorkflow {
  definition: AslDefinition;
  /** The placeholders the definition uses (`Fn_LLM`, ...), in node-type order. */
  substitutionKeys: string[];
  /** The nodes' descriptions the definition's Tasks name by `{ id, ref }` (node-table.ts). */
  nodeTable: CompiledNodeTable;
  /** The definition's size as Step Functions counts it: UTF-8 bytes, each function ARN at its longest. */
  definitionBytes: number;
}

/** Service integrations and errors of a Distributed Map. */
export const S3_GET_OBJECT = 'arn:aws:states:::s3:getObject';
export const S3_PUT_OBJECT = 'arn:aws:states:::s3:putObject';
export const MAP_TOLERANCE_EXCEEDED = 'States.ExceedToleratedFailureThreshold';
/** Express executions run at most 5 minutes: an item path waiting this long runs as Standard. */
const EXPRESS_MAX_WAIT_SECONDS = 240;
/**
 * Node types whose one step may outlast an Express execution: a model call with its tool loop (the LLM
 * function allows 15 minutes) or a tool call (5). A SUBGRAPH's nodes are inlined and count as theirs.
 */
const LONG_STEP_TYPES: ReadonlySet<string> = new Set(['LLM', 'TOOL']);
/**
 * Items of a distributed FORK run at once when its `maxConcurrency` is absent. AWS's own default is
 * 10,000 child executions, which would meet the account's 1,000 concurrent Lambdas and the model's
 * rate limits at once; an explicit 0 still means no limit of ours.
 */
export const DEFAULT_DISTRIBUTED_CONCURRENCY = 100;

/**
 * Names of the top-level failure states. Every top-level Task's Catch names FAIL_TASK, so it is short
 * (it was `stepthread:fail`: 10 bytes a node); a node id is not likely to begin with ':'.
 */
export const FAIL_TASK = ':fail';
export const FAILED_STATE = 'stepthread:failed';

/** A USER_INTERACTION waits this long for `respond` when its config sets no timeoutSeconds. */
export const DEFAULT_INTERACTION_TIMEOUT_SECONDS = 86_400;

/**
 * Whether a USER_INTERACTION waits for a person. show_message and a config `userInput` answer at
 * once, so they compile to a plain Task: no task token, no second Task.
 */
export function waitsForAnswer(
  config: Pick<UserInteractionConfig, 'userInteractionType' | 'userInput'>,
): boolean {
  return config.userInteractionType !== 'show_message' && config.userInput === undefined;
}

/** Whether an LLM node offers a tool whose calls may wait for a person's approval (`requiresApproval`). */
export function asksApproval(node: Pick<LlmDescription, 'tools'>): boolean {
  return Object.values(node.tools ?? {}).some(
    (tool) => tool.requiresApproval !== undefined && tool.requiresApproval !== false,
  );
}

/** The LLM nodes of a built graph (subgraphs' included) whose tool calls may wait for approval. */
export function nodesAskingApproval(graph: WorkflowGraph): GraphNode[] {
  return [...graph.nodes.values()].filter((node) => {
    if (node.type !== 'LLM' || 'boundary' in node) return false;
    const description = describeNode(graph, node);
    return description.type === 'LLM' && asksApproval(description);
  });
}

/** Validates and builds the workflow (coded StepthreadError when invalid), then compiles it. */
export function compileWorkflow(workflow: Workflow, options: CompileOptions = {}): CompiledWorkflow {
  return compileGraph(buildGraph(workflow), options);
}

/**
 * What `compileWorkflow` would refuse in a workflow that passed validation (DEFINITION_TOO_LARGE above
 * all), as coded errors: `validate` reports them with the rest.
 */
export function compileProblems(workflow: Workflow, options: CompileOptions = {}): CodedError[] {
  try {
    compileWorkflow(workflow, options);
    return [];
  } catch (error) {
    if (error instanceof StepthreadError) return [error.toJSON()];
    throw error;
  }
}

export function compileGraph(graph: WorkflowGraph, options: CompileOptions = {}): CompiledWorkflow {
  return new Compiler(graph, options).compile();
}

/**
 * What a Task retries: every failure of the Task (States.TaskFailed: the Lambda service's throttling and
 * other failures, an invoke that timed out on Step Functions' side or ended without a known error, the
 * handlers' `stepthread.Transient` for write conflicts and throttled storage, a crash, a refused call)
 * except the node's own recorded failure, `stepthread.NodeFailed`, and a function that ran out of time,
 * `Sandbox.Timedout` (another 15 minutes would likely end the same way): both go straight to the Catch.
 * Every step is idempotent, so repeating one is always safe. One wildcard instead of the names of each
 * transient error: every Task carries its Retry, and the seven names cost ~200 bytes of definition per
 * node, which a 2,000-node workflow cannot afford under Step Functions' 1 MiB.
 *
 * Backoff that rides out a throttling burst (1,000 concurrent runs starting together): waits of up to
 * 1, 2, 4, … 128 s (IntervalSeconds 1 and BackoffRate 2, ASL's defaults, left out), eight retries,
 * about 4 minutes in all at most. Full jitter draws each wait at random below that, so throttled Tasks
 * do not come back in step; a write conflict is still retried within a second. The local runtime's
 * tests skip the waits (noRetryWaits).
 */
const TASK_RETRY = {
  MaxAttempts: 8,
  JitterStrategy: 'FULL',
} as const satisfies Omit<AslRetrier, 'ErrorEquals'>;

/** Errors a Task does not retry: the node's own failure, and a function out of time. */
const NOT_RETRIED = [ASL_ERRORS.nodeFailed, 'Sandbox.Timedout'];

/** Where states are emitted: the whole machine, or one fork path's branch. */
interface Scope {
  states: Record<string, AslState>;
  /** The whole machine: the only place an execution can end and continue in another. */
  top?: boolean;
  /** In a branch: the JOIN ending it; a transition to it goes to `doneName` instead. */
  stop?: string;
  doneName?: string;
  /**
   * In a branch: the path's report to its JOIN. A node Task whose only next state is `doneName` makes
   * the report itself (`report` in its Parameters) and goes on as `after` says, saving the branch a
   * Task, its Lambda invocation and three store requests; `doneUsed` says whether anything else still
   * goes to `doneName`.
   */
  report?: { node: JoinBranchDescription; after: AslFlow; doneUsed: boolean };
  /** The state a failing node's Catch goes to (claimed on first use, emitted only if used). */
  failure(): string;
}

class Compiler {
  private readonly names: StateNames = createStateNames();
  private readonly nodeNames = new Map<string, string>();
  private readonly helpers = new Map<string, string>();
  private readonly usedTypes = new Set<NodeType>();
  /** The threshold, when the workflow has a top-level cycle and continuing is on. */
  private readonly continueAfter: number | undefined;
  /** Top-level ROUTE and LOOP_END nodes on a cycle: their Choice states may continue the run. */
  private readonly continuationPoints: ReadonlySet<string>;
  /** `<node>:choice` states a successor may resume at, in definition order. */
  private readonly resumePoints: string[] = [];
  /** The node table's descriptions, in definition order, and the references naming them. */
  private readonly described: Record<string, NodeDescription> = {};
  private readonly references: NodeRef[] = [];
  /** Top-level node Tasks a copied thread may start at (copy-start.ts), in definition order. */
  private readonly startPoints: string[] = [];

  constructor(
    private readonly graph: WorkflowGraph,
    private readonly options: CompileOptions,
  ) {
    // Node ids claim their names first, so they keep them even when a helper name would collide.
    for (const id of graph.order) this.nodeNames.set(id, this.names.claim(id));
    const threshold = checkContinueAfterEvents(options.continueAfterEvents ?? DEFAULT_CONTINUE_AFTER_EVENTS);
    this.continuationPoints = threshold === false ? new Set() : this.cyclicChoices();
    this.continueAfter = this.continuationPoints.size > 0 && threshold !== false ? threshold : undefined;
  }

  /** Whether Tasks count history events (only when some Choice may continue the run). */
  private get counting(): boolean {
    return this.continueAfter !== undefined;
  }

  /**
   * Top-level ROUTE and LOOP_END nodes on a top-level cycle. A fork region is one step at this level
   * (its branches' back edges cannot leave them), so any cycle that can repeat without bound passes
   * through one of these (validation rule UNBOUNDED_CYCLE).
   */
  private cyclicChoices(): Set<string> {
    const members = new Set<string>();
    const stack = [this.graph.startId];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (members.has(id)) continue;
      members.add(id);
      stack.push(...this.flowTargets(id));
    }
    const order = this.graph.order.filter((id) => members.has(id));
    const points = new Set<string>();
    for (const component of stronglyConnectedComponents(order, (id) => this.flowTargets(id))) {
      const cyclic = component.length > 1 || this.flowTargets(component[0]!).includes(component[0]!);
      if (!cyclic) continue;
      for (const id of component) {
        const kind = this.transition(id).kind;
        if (kind === 'route' || kind === 'loopEnd') points.add(id);
      }
    }
    return points;
  }

  compile(): CompiledWorkflow {
    const states: Record<string, AslState> = {};
    let failUsed = false;
    const top: Scope = {
      states,
      top: true,
      failure: () => {
        failUsed = true;
        return this.helper(FAIL_TASK);
      },
    };
    this.emitRegion(top, this.graph.startId);
    if (this.counting) {
      states[this.helper(CONTINUED_STATE)] = {
        Type: 'Pass',
        Parameters: {
          status: 'CONTINUED',
          'continuedAs.$': SUCCESSOR_NAME_EXPRESSION,
          'threadId.$': '$.rootThreadId',
          'step.$': '$.step',
        },
        End: true,
      };
    }
    const failed = this.helper(FAILED_STATE);
    if (failUsed) {
      states[this.helper(FAIL_TASK)] = {
        Type: 'Task',
        Resource: this.resource('END'),
        Parameters: { action: 'fail', node: describeFail(this.graph, FAIL_TASK), 'envelope.$': '$' },
        // The handler's output is dropped so the Fail state still finds the node's error at $.error.
        ResultPath: null,
        Retry: retry(),
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.failError', Next: failed }],
        Next: failed,
      };
    }
    states[failed] = { Type: 'Fail', ErrorPath: '$.error.Error', CausePath: '$.error.Cause' };
    const nodeTable = compiledNodeTable({
      workflowId: this.graph.workflowId,
      version: this.graph.version,
      nodes: this.described,
    });
    // Every reference was handed out before the table was whole: it learns its name now (before the
    // definition is measured).
    for (const reference of this.references) reference.ref = nodeTable.ref;
    // The entry first, so the definition reads from the top: every definition has it, since a copied
    // thread starts at its node through it (copy-start.ts), and a continuing run resumes through it.
    const definitionOf = (copyStarts: boolean): AslDefinition => ({
      Comment: `stepthread workflow ${this.graph.workflowId} v${this.graph.version}`,
      QueryLanguage: 'JSONPath',
      StartAt: this.helper(DISPATCH_STATE),
      States: { ...this.resumeStates(failed, copyStarts), ...states },
    });
    let definition = definitionOf(true);
    // A copy's entry costs a Choice rule per top-level node (about 54 bytes and twice the node's id):
    // a graph that fits the quota only without them is deployed without them, and `start --thread`
    // refuses its copies, coded (copy-start.ts), instead of the whole workflow being refused.
    const maxBytes = this.options.maxDefinitionBytes ?? MAX_DEFINITION_BYTES;
    if (this.startPoints.length > 0 && definitionSize(definition) > maxBytes) {
      definition = definitionOf(false);
    }
    const substitutionKeys = NODE_TYPES.filter((type) => this.usedTypes.has(type)).map(substitutionKey);
    const definitionBytes = checkDefinitionSize(
      definition,
      this.graph.workflowId,
      this.options.maxDefinitionBytes,
    );
    return { definition, substitutionKeys, nodeTable, definitionBytes };
  }

  /** The node's description goes to the node table; its Tasks name it (the same object for all of them). */
  private reference(description: NodeDescription): NodeRef {
    this.described[description.id] = description;
    const reference: NodeRef = { id: description.id, ref: '' };
    this.references.push(reference);
    return reference;
  }

  // ---- regions ----

  /** Emits every node reachable from `entryId` within the scope, in declaration order. */
  private emitRegion(scope: Scope, entryId: string): void {
    const members = new Set<string>();
    const stack = [entryId];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (members.has(id) || id === scope.stop) continue;
      members.add(id);
      stack.push(...this.flowTargets(id));
    }
    for (const id of this.graph.order) if (members.has(id)) this.emitNode(scope, id);
  }

  /** Where control can go after a node within its own scope (a fork's branches are separate scopes). */
  private flowTargets(id: string): string[] {
    const transition = this.transition(id);
    switch (transition.kind) {
      case 'end':
        return [];
      case 'next': {
        const node = this.node(id);
        return node.type === 'LOOP_START' && !('boundary' in node)
          ? [transition.next, this.loopExit(node.config.loopId)]
          : [transition.next];
      }
      case 'route':
        return [
          ...transition.routes.map((route) => route.targetNodeId),
          ...(transition.defaultTargetNodeId === undefined ? [] : [transition.defaultTargetNodeId]),
        ];
      case 'loopEnd':
        return [transition.loopStartId, transition.exit];
      case 'fork':
        return [transition.joinId];
    }
  }

  private emitNode(scope: Scope, id: string): void {
    const node = this.node(id);
    const transition = this.transition(id);
    const name = this.nodeName(id);
    // A copy runs from a top-level node other than START (which makes a new thread) and a JOIN (which
    // merges branches its FORK started in the same execution: copies are refused there).
    if (scope.top && node.type !== 'START' && node.type !== 'JOIN') this.startPoints.push(name);
    if (node.type === 'START' && !('boundary' in node)) {
      const description = describeNode(this.graph, node);
      if (description.type !== 'START') throw internal(`START ${id} described as ${description.type}`);
      this.usedTypes.add('START');
      scope.states[name] = {
        Type: 'Task',
        Resource: this.resource('START'),
        Parameters: {
          action: 'execute',
          node: this.reference(description),
          'executionId.$': '$$.Execution.Id',
          'input.$': '$',
          ...this.counted(HISTORY_EVENTS.execution + HISTORY_EVENTS.choice + HISTORY_EVENTS.lambdaTask),
        },
        Retry: retry(),
        // There may be no thread to mark FAILED yet: fail the execution directly.
        Catch: [catchAll(this.helper(FAILED_STATE))],
        Next: this.target(scope, nextOf(transition, id)),
      };
      return;
    }
    switch (transition.kind) {
      case 'end':
        scope.states[name] = this.nodeTask(scope, node, { End: true });
        return;
      case 'next':
        if (node.type === 'LOOP_START' && !('boundary' in node)) {
          const choice = this.helper(`${id}:choice`);
          scope.states[name] = this.nodeTask(scope, node, { Next: choice }, HISTORY_EVENTS.choice);
          scope.states[choice] = {
            Type: 'Choice',
            Choices: [{ ...loopExits(), Next: this.target(scope, this.loopExit(node.config.loopId)) }],
            Default: this.target(scope, transition.next),
          };
          return;
        }
        scope.states[name] = this.reportsToJoin(scope, node, transition.next)
          ? this.nodeTask(scope, node, scope.report!.after, 0, scope.report!.node)
          : this.nodeTask(scope, node, { Next: this.target(scope, transition.next) });
        return;
      case 'route': {
        const choice = this.helper(`${id}:choice`);
        scope.states[name] = this.nodeTask(scope, node, { Next: choice }, HISTORY_EVENTS.choice);
        const fallback =
          transition.defaultTargetNodeId === undefined
            ? this.noRoute(scope, id)
            : this.target(scope, transition.defaultTargetNodeId);
        const targets = [...new Set(transition.routes.map((route) => route.targetNodeId))];
        scope.states[choice] = {
          Type: 'Choice',
          Choices: [
            ...this.continuation(scope, id, choice),
            // An unset route (no condition held) must not reach StringEquals: that is a runtime error.
            // (Not IsPresent rather than IsPresent: false, which aws-local-stepfunctions never matches.)
            { Not: { Variable: '$.route', IsPresent: true }, Next: fallback },
            ...targets.map(
              (target): AslChoiceRule => ({
                Variable: '$.route',
                StringEquals: target,
                Next: this.target(scope, target),
              }),
            ),
          ],
          Default: fallback,
        };
        return;
      }
      case 'loopEnd': {
        const choice = this.helper(`${id}:choice`);
        scope.states[name] = this.nodeTask(scope, node, { Next: choice }, HISTORY_EVENTS.choice);
        scope.states[choice] = {
          Type: 'Choice',
          Choices: [
            ...this.continuation(scope, id, choice),
            { ...loopExits(), Next: this.target(scope, transition.exit) },
          ],
          Default: this.nodeName(transition.loopStartId),
        };
        return;
      }
      case 'fork': {
        const pair = this.graph.forks.get(id);
        if (!pair) throw internal(`FORK ${id} has no pair`);
        const entry = this.forkEntryName(pair);
        scope.states[name] = this.nodeTask(scope, node, { Next: entry }, this.forkHistoryEvents(pair));
        this.emitFork(scope, pair);
        return;
      }
    }
  }

  // ---- fork / join ----

  private joinTimeout(pair: GraphForkPair): number {
    const join = this.node(pair.joinId) as GraphJoinNode;
    // Validation admits whole seconds only (what a Wait state takes).
    return join.config.timeout ?? 0;
  }

  private forkStrategy(pair: GraphForkPair): 'serial' | 'parallel' {
    const fork = this.node(pair.forkId);
    if (fork.type !== 'FORK' || 'boundary' in fork) throw internal(`${pair.forkId} is not a FORK`);
    return forkStrategyOf(fork.config);
  }

  /** The FORK's config when it iterates over a list (forEach), else undefined. */
  private overList(pair: GraphForkPair): ForkConfig | undefined {
    const fork = this.node(pair.forkId);
    if (fork.type !== 'FORK' || 'boundary' in fork) throw internal(`${pair.forkId} is not a FORK`);
    return fork.config.forEach === undefined ? undefined : fork.config;
  }

  /**
   * Whether a distributed FORK's items may run as Express child executions: not when the path waits for
   * a person (waitForTaskToken is Standard only), for a JOIN timeout near Express's 5-minute limit, or
   * on a step that may take longer (a model or tool call, a CODE node with a long timeoutMs).
   */
  private expressAllowed(pair: GraphForkPair): boolean {
    const nodes = pair.paths.flatMap((path) => [...path.nodeIds]);
    return nodes.every((id) => {
      const node = this.node(id);
      if (node.type === 'USER_INTERACTION' && !('boundary' in node)) return !waitsForAnswer(node.config);
      if (node.type === 'JOIN') return (node.config.timeout ?? 0) < EXPRESS_MAX_WAIT_SECONDS;
      if (node.type === 'CODE') return (node.config.timeoutMs ?? 0) < EXPRESS_MAX_WAIT_SECONDS * 1000;
      // An LLM node asking approval of a tool call is covered: LLM steps run Standard anyway.
      return !LONG_STEP_TYPES.has(node.type);
    });
  }

  /** The state the FORK task continues to. */
  private forkEntryName(pair: GraphForkPair): string {
    if (this.overList(pair)) {
      return this.helper(this.joinTimeout(pair) > 0 ? `${pair.forkId}:paths` : `${pair.forkId}:items`);
    }
    if (this.forkStrategy(pair) === 'parallel' || this.joinTimeout(pair) > 0) {
      return this.helper(`${pair.forkId}:paths`);
    }
    return this.serialPathName(pair, 0);
  }

  private serialPathName(pair: GraphForkPair, index: number): string {
    return this.helper(`${pair.forkId}:${pair.paths[index]!.authorPathId}:serial`);
  }

  /**
   * Parallel: one Parallel state, a branch per path (plus the timer). Serial: a one-branch Parallel per
   * path, chained — the Parallel's `ResultPath: null` is what brings the parent envelope back after a
   * path ran on its child thread, and a decided join ends the chain with the same JoinDecided error.
   */
  private emitFork(scope: Scope, pair: GraphForkPair): void {
    const joinName = this.nodeName(pair.joinId);
    const timeout = this.joinTimeout(pair);
    const joinCatch = (): AslCatcher[] => [
      {
        ErrorEquals: [ASL_ERRORS.joinDecided, ASL_ERRORS.joinTimeout],
        ResultPath: '$.joinEnd',
        Next: joinName,
      },
      catchAll(scope.failure()),
    ];
    const timer = timeout > 0 ? [this.timerBranch(pair, timeout)] : [];

    const list = this.overList(pair);
    if (list) {
      const mapName = this.helper(`${pair.forkId}:items`);
      const distributed = list.mode === 'distributed';
      const concurrency =
        this.forkStrategy(pair) === 'serial'
          ? 1
          : (list.maxConcurrency ?? (distributed ? DEFAULT_DISTRIBUTED_CONCURRENCY : 0));
      const catches = joinCatch();
      // A Distributed Map reports an item execution's failure (the deciding item's JoinDecided) as this.
      if (distributed) catches[0]!.ErrorEquals.push(MAP_TOLERANCE_EXCEEDED);
      const map: AslMapState = {
        Type: 'Map',
        ...(distributed
          ? {
              ItemReader: {
                Resource: S3_GET_OBJECT,
                ReaderConfig: { InputType: 'JSON' },
                Parameters: { 'Bucket.$': '$.fork.list.bucket', 'Key.$': '$.fork.list.key' },
              },
            }
          : { ItemsPath: '$.fork.items' }),
        ItemSelector: { ...itemEnvelope(), ...this.counted(0, 'history'), ...this.traced() },
        ItemProcessor: {
          ProcessorConfig: distributed
            ? { Mode: 'DISTRIBUTED', ExecutionType: this.expressAllowed(pair) ? 'EXPRESS' : 'STANDARD' }
            : { Mode: 'INLINE' },
          ...this.branch(pair, 0, true),
        },
        ...(concurrency > 0 ? { MaxConcurrency: concurrency } : {}),
        ...(distributed
          ? {
              // Items report node failures to the join instead of failing: the only item execution that
              // fails is the one whose report decided the join, so no failure is tolerated.
              ToleratedFailureCount: 0,
              ResultWriter: {
                Resource: S3_PUT_OBJECT,
                Parameters: { 'Bucket.$': '$.fork.list.bucket', 'Prefix.$': '$.fork.list.results' },
              },
            }
          : {}),
        ResultPath: null,
        ...(timeout > 0 ? { End: true as const } : { Catch: catches, Next: joinName }),
      };
      if (timeout === 0) {
        scope.states[mapName] = map;
        return;
      }
      // Inside the timer's Parallel, JoinDecided must propagate to it: no Catch on the Map.
      scope.states[this.forkEntryName(pair)] = {
        Type: 'Parallel',
        Branches: [{ StartAt: mapName, States: { [mapName]: map } }, ...timer],
        ResultPath: null,
        Catch: joinCatch(),
        Next: joinName,
      };
      return;
    }

    if (this.forkStrategy(pair) === 'parallel') {
      scope.states[this.forkEntryName(pair)] = {
        Type: 'Parallel',
        Branches: [...pair.paths.map((_, index) => this.branch(pair, index)), ...timer],
        ResultPath: null,
        Catch: joinCatch(),
        Next: joinName,
      };
      return;
    }

    const chain: Record<string, AslState> = {};
    pair.paths.forEach((_, index) => {
      const last = index === pair.paths.length - 1;
      // Inside the timer's Parallel, JoinDecided must propagate to it: no Catch on the inner ones.
      const flow: AslFlow = !last
        ? { Next: this.serialPathName(pair, index + 1) }
        : timeout > 0
          ? { End: true }
          : { Next: joinName };
      const state: AslParallelState = {
        Type: 'Parallel',
        Branches: [this.branch(pair, index)],
        ResultPath: null,
        ...(timeout > 0 ? {} : { Catch: joinCatch() }),
        ...flow,
      };
      chain[this.serialPathName(pair, index)] = state;
    });
    if (timeout === 0) {
      Object.assign(scope.states, chain);
      return;
    }
    scope.states[this.forkEntryName(pair)] = {
      Type: 'Parallel',
      Branches: [{ StartAt: this.serialPathName(pair, 0), States: chain }, ...timer],
      ResultPath: null,
      Catch: joinCatch(),
      Next: joinName,
    };
  }

  /** One path: enter the child thread, run the path's nodes, report to the join. */
  private branch(pair: GraphForkPair, index: number, item = false): AslStateMachine {
    const path = pair.paths[index]!;
    const enter = this.helper(`${pair.forkId}:${path.authorPathId}`);
    const done = this.helper(`${pair.joinId}:${path.authorPathId}`);
    const failedKey = `${pair.joinId}:${path.authorPathId}:failed`;
    const states: Record<string, AslState> = {};
    let failUsed = false;
    const node = describeJoinBranch(this.graph, pair.joinId, index);
    // Named by the path's index: path ids may be long, and a path may carry these three states.
    const reported = this.helper(`${pair.joinId}:${index + 1}:reported`);
    // A completed path's report that can decide only once no path is left running ends the path, two
    // states sooner; a failed path's report may decide early, so it goes on to the Choice.
    const endsAtReport = completedPathEndsAtReport(node.config);
    const report = {
      node,
      after: endsAtReport ? { End: true as const } : { Next: reported },
      doneUsed: false,
    };
    const scope: Scope = {
      states,
      stop: pair.joinId,
      doneName: done,
      report,
      failure: () => {
        failUsed = true;
        return this.helper(failedKey);
      },
    };
    // An item's envelope was built by the Map's ItemSelector.
    states[enter] = item
      ? { Type: 'Pass', Next: this.target(scope, path.entryId) }
      : {
          Type: 'Pass',
          Parameters: { ...childEnvelope(index), ...this.counted(0, 'history'), ...this.traced() },
          Next: this.target(scope, path.entryId),
        };
    this.emitRegion(scope, path.entryId);
    // A path whose every way to the JOIN went through a node that reports itself has no report Task.
    if (report.doneUsed) {
      states[done] = this.bookkeepingTask({ action: 'branch-done', node, 'envelope.$': '$' }, report.after);
    }
    if (failUsed) {
      states[this.helper(failedKey)] = this.bookkeepingTask(
        { action: 'branch-failed', node, 'envelope.$': '$' },
        { Next: reported },
      );
    }
    if (failUsed || !endsAtReport) this.joinReported(states, reported, pair.joinId, index + 1);
    return { StartAt: enter, States: states };
  }

  /**
   * After a path reported to its join: a report that decided the join (`joinDecided` in the JOIN
   * function's result) ends the path with a Fail state raising JoinDecided, which stops the enclosing
   * Parallel or Map; otherwise the path ends. The decision is a result the definition routes on, not
   * an error the function throws, so Lambda's error metrics count no join that merely decided.
   */
  private joinReported(states: Record<string, AslState>, name: string, joinId: string, path: number): void {
    const decides = this.helper(`${joinId}:${path}:decides`);
    const ends = this.helper(`${joinId}:${path}:ends`);
    states[name] = {
      Type: 'Choice',
      Choices: [{ Variable: `$.${JOIN_DECIDED_KEY}`, IsPresent: true, Next: decides }],
      Default: ends,
    };
    states[decides] = {
      Type: 'Fail',
      Error: ASL_ERRORS.joinDecided,
      Cause: `JOIN ${joinId} decided`,
    };
    states[ends] = { Type: 'Pass', End: true };
  }

  /** Waits out the JOIN's timeout, records it, then fails the Parallel with JoinTimeout. */
  private timerBranch(pair: GraphForkPair, seconds: number): AslStateMachine {
    const wait = this.helper(`${pair.joinId}:timer`);
    const record = this.helper(`${pair.joinId}:timeout`);
    const raise = this.helper(`${pair.joinId}:timed-out`);
    const node = describeJoinTimeout(this.graph, pair.joinId);
    return {
      StartAt: wait,
      States: {
        [wait]: { Type: 'Wait', Seconds: seconds, Next: record },
        [record]: this.bookkeepingTask({ action: 'timeout', node, 'envelope.$': '$' }, { Next: raise }),
        [raise]: {
          Type: 'Fail',
          Error: ASL_ERRORS.joinTimeout,
          Cause: `JOIN ${pair.joinId}: not decided within ${seconds} s`,
        },
      },
    };
  }

  // ---- tasks ----

  /**
   * `follow`: history events of the states this Task alone leads to before the next Task (its Choice,
   * a fork's Parallel states and path bookkeeping), counted with it.
   */
  private nodeTask(
    scope: Scope,
    node: GraphNode,
    flow: AslFlow,
    follow = 0,
    report?: JoinBranchDescription,
  ): AslState {
    const description = describeNode(this.graph, node);
    if (description.type === 'START') throw internal(`START ${node.id} outside the top level`);
    const reference = this.reference(description);
    this.usedTypes.add(description.type);
    // A node that reports its path (reportsToJoin) has a plain Task: never a question's or an approval's.
    if (description.type === 'USER_INTERACTION' && waitsForAnswer(description.config)) {
      return this.interactionTasks(scope, node.id, description, reference, flow);
    }
    if (description.type === 'LLM' && asksApproval(description)) {
      return this.approvalTasks(scope, node.id, reference, flow, follow);
    }
    return {
      Type: 'Task',
      Resource: this.resource(description.type),
      // No `action`: execute is the default (functions/handlers/dispatch-table.ts), 19 bytes a node.
      Parameters: {
        node: reference,
        'envelope.$': '$',
        ...(report ? { report } : {}),
        ...this.counted(HISTORY_EVENTS.lambdaTask + follow),
        ...(description.type === 'FORK' && this.options.traceContext ? { traceContext: true } : {}),
      },
      Retry: retry(),
      Catch: [catchAll(scope.failure())],
      ...flow,
    };
  }

  /**
   * A USER_INTERACTION that waits for a person: the waitForTaskToken Task `<id>` records the question
   * and waits; the answer (SendTaskSuccess) lands at `$.answer`, a SendTaskFailure or timeout at
   * `$.error`; either way `<id>:answer` commits the node's step (or its failure) on the thread and
   * closes the interaction, so an operator who only holds the task token never writes anything.
   */
  private interactionTasks(
    scope: Scope,
    nodeId: string,
    description: UserInteractionDescription,
    node: NodeRef,
    flow: AslFlow,
  ): AslState {
    const answer = this.helper(`${nodeId}:answer`);
    const wait: AslState = {
      Type: 'Task',
      Resource: WAIT_FOR_TASK_TOKEN,
      Parameters: {
        FunctionName: this.resource('USER_INTERACTION'),
        Payload: { action: 'execute', node, 'envelope.$': '$', 'taskToken.$': '$$.Task.Token' },
      },
      ResultPath: INTERACTION_ANSWER_PATH,
      TimeoutSeconds: description.config.timeoutSeconds ?? DEFAULT_INTERACTION_TIMEOUT_SECONDS,
      Retry: retry(),
      Catch: [catchAll(answer)],
      Next: answer,
    };
    // Emitted here (the caller sets the same key again) so the definition lists the wait first.
    scope.states[this.nodeName(nodeId)] = wait;
    scope.states[answer] = {
      Type: 'Task',
      Resource: this.resource('USER_INTERACTION'),
      // The wait Task's events are counted here: its own result goes to $.answer, not the envelope.
      Parameters: {
        action: 'answer',
        node,
        'envelope.$': '$',
        ...this.counted(HISTORY_EVENTS.integrationTask + HISTORY_EVENTS.lambdaTask),
      },
      Retry: retry(),
      Catch: [catchAll(scope.failure())],
      ...flow,
    };
    return wait;
  }

  /**
   * An LLM node with a tool that asks for approval: its Task `<id>` runs the request; when a call
   * waits for approval it ends with the envelope marked (`$.approval`) instead of a step, and the
   * Choice `<id>:asks` sends it to the waitForTaskToken Task `<id>:approval`, which records the
   * question. The answer (`$.answer`), or a failure or timeout (`$.error`), goes back to `<id>`, which
   * goes on with the request from where it stopped (functions/nodes/tool-approval.ts).
   */
  private approvalTasks(
    scope: Scope,
    nodeId: string,
    node: NodeRef,
    flow: AslFlow,
    follow: number,
  ): AslState {
    const name = this.nodeName(nodeId);
    const asks = this.helper(`${nodeId}:asks`);
    const wait = this.helper(`${nodeId}:approval`);
    let done = flow.Next;
    if (done === undefined) {
      done = this.helper(`${nodeId}:done`);
      scope.states[done] = { Type: 'Pass', End: true };
    }
    const task: AslState = {
      Type: 'Task',
      Resource: this.resource('LLM'),
      Parameters: {
        action: 'execute',
        node,
        'envelope.$': '$',
        ...this.counted(HISTORY_EVENTS.lambdaTask + HISTORY_EVENTS.choice + follow),
      },
      Retry: retry(),
      Catch: [catchAll(scope.failure())],
      Next: asks,
    };
    // Emitted here (the caller sets the same key again) so the definition lists the Task first.
    scope.states[name] = task;
    scope.states[asks] = {
      Type: 'Choice',
      Choices: [{ Variable: '$.approval', IsPresent: true, Next: wait }],
      Default: done,
    };
    scope.states[wait] = {
      Type: 'Task',
      Resource: WAIT_FOR_TASK_TOKEN,
      Parameters: {
        FunctionName: this.resource('LLM'),
        Payload: { action: 'approval', node, 'envelope.$': '$', 'taskToken.$': '$$.Task.Token' },
      },
      ResultPath: INTERACTION_ANSWER_PATH,
      TimeoutSeconds: DEFAULT_INTERACTION_TIMEOUT_SECONDS,
      Retry: retry(),
      Catch: [catchAll(name)],
      Next: name,
    };
    return task;
  }

  /**
   * Join bookkeeping runs on the JOIN's function. No Catch on purpose: its errors (JoinDecided above all)
   * must end the branch and reach the enclosing Parallel, whose Catch handles them.
   */
  private bookkeepingTask(parameters: EnvelopeTaskParameters, flow: AslFlow): AslDirectTaskState {
    this.usedTypes.add('JOIN');
    return { Type: 'Task', Resource: this.resource('JOIN'), Parameters: parameters, Retry: retry(), ...flow };
  }

  /** A ROUTE with no match and no default fails its scope like a failing node does. */
  private noRoute(scope: Scope, routeId: string): string {
    const name = this.helper(`${routeId}:no-route`);
    scope.states[name] = {
      Type: 'Pass',
      Result: {
        Error: ASL_ERRORS.noRoute,
        // A coded error, as a failing node's is, so the run reports NO_ROUTE_MATCHED and the ROUTE.
        Cause: JSON.stringify({
          code: 'NO_ROUTE_MATCHED',
          message: `ROUTE ${routeId}: no condition held and there is no defaultTargetNodeId`,
          nodeId: routeId,
        }),
      },
      ResultPath: '$.error',
      Next: scope.failure(),
    };
    return name;
  }

  // ---- continue-as-new (continuation.ts) ----

  /** `{ [key]: events }` when this definition counts history, else nothing. */
  /** A fork branch's or Map item's trace parent, the FORK's step (see CompileOptions.traceContext). */
  private traced(): Record<string, string> {
    return this.options.traceContext ? { 'traceparent.$': '$.fork.traceparent' } : {};
  }

  private counted(
    events: number,
    key: 'historyEvents' | 'history' = 'historyEvents',
  ): Record<string, number> {
    return this.counting ? { [key]: events } : {};
  }

  /**
   * History events of a fork region besides its branches' node Tasks (which their children count and
   * the JOIN adds): the Parallel state(s), each path's entry Pass and bookkeeping Task, the timer. A
   * path whose last node reports it has no bookkeeping Task: counted anyway, an overestimate that only
   * makes a run continue as new a few events sooner.
   */
  private forkHistoryEvents(pair: GraphForkPair): number {
    const { parallel, pass, lambdaTask, choice, wait, fail, branchSlack } = HISTORY_EVENTS;
    // Each path: its entry Pass, its report to the join, the Choice after it and the Pass that ends it.
    const path = pass + lambdaTask + choice + pass + branchSlack;
    const timer = this.joinTimeout(pair) > 0 ? wait + lambdaTask + fail + branchSlack : 0;
    const paths = pair.paths.length;
    if (this.forkStrategy(pair) === 'parallel') return parallel + paths * path + timer;
    return paths * (parallel + path) + (timer > 0 ? parallel + timer : 0);
  }

  /**
   * The first rule of a continuation point's Choice: once the execution's history reaches the
   * threshold, go to `<node>:continue` (emitted here) instead. A successor resumes at this very Choice,
   * with a small history, and takes the branch this execution would have taken.
   */
  private continuation(scope: Scope, nodeId: string, choice: string): AslChoiceRule[] {
    if (!scope.top || this.continueAfter === undefined || !this.continuationPoints.has(nodeId)) return [];
    const node = this.node(nodeId);
    if (node.type !== 'ROUTE' && node.type !== 'LOOP_END') throw internal(`${nodeId} cannot continue`);
    const name = this.helper(`${nodeId}:continue`);
    const continued = this.helper(CONTINUED_STATE);
    const state: AslStartExecutionTaskState = {
      Type: 'Task',
      Resource: START_EXECUTION_RESOURCE,
      Parameters: {
        'StateMachineArn.$': '$$.StateMachine.Id',
        'Name.$': SUCCESSOR_NAME_EXPRESSION,
        Input: {
          resume: { at: choice, node: { id: nodeId, type: node.type }, 'envelope.$': '$' },
          'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id',
        },
      },
      ResultPath: '$.continuation',
      // The name makes StartExecution idempotent, so any error may be retried; a name that already ran
      // (a retry after the successor ended, improbable) means the run did continue.
      Retry: [
        { ErrorEquals: [EXECUTION_ALREADY_EXISTS], MaxAttempts: 0 },
        { ErrorEquals: ['States.ALL'], ...TASK_RETRY },
      ],
      Catch: [
        { ErrorEquals: [EXECUTION_ALREADY_EXISTS], ResultPath: '$.error', Next: continued },
        catchAll(scope.failure()),
      ],
      Next: continued,
    };
    scope.states[name] = state;
    this.resumePoints.push(choice);
    return [
      {
        And: [
          { Variable: '$.history', IsPresent: true },
          { Variable: '$.history', NumericGreaterThanEquals: this.continueAfter },
        ],
        Next: name,
      },
    ];
  }

  /**
   * The entry of every definition: `stepthread:dispatch` starts a run at START, or (execution input
   * `{ resume }`) has `stepthread:resume` claim the thread for this execution and `stepthread:resume-at`
   * jump to the Choice that continued, or (`resume.copy`) to the Task of the node a copied thread
   * stands at: one rule per top-level node (about 54 bytes and twice the node's id each), left out
   * (`copyStarts` false, said in a Comment) when the definition would not fit the quota with them.
   */
  private resumeStates(failed: string, copyStarts: boolean): Record<string, AslState> {
    const resume = this.helper(RESUME_TASK);
    const resumeAt = this.helper(RESUME_AT_STATE);
    const noPoint = this.helper(NO_RESUME_POINT_STATE);
    return {
      [this.helper(DISPATCH_STATE)]: {
        Type: 'Choice',
        Choices: [{ Variable: '$.resume', IsPresent: true, Next: resume }],
        Default: this.nodeName(this.graph.startId),
      },
      [resume]: {
        Type: 'Task',
        Resource: this.resource('START'),
        Parameters: {
          action: 'resume',
          node: { id: RESUME_TASK, type: 'START', workflowId: this.graph.workflowId },
          'executionId.$': '$$.Execution.Id',
          'envelope.$': '$.resume.envelope',
          'resume.$': '$.resume',
          ...this.counted(RESUME_HISTORY_EVENTS),
        },
        Retry: retry(),
        // The thread belongs to the run that continued (or was started by another execution): failing
        // this execution leaves it untouched.
        Catch: [catchAll(failed)],
        Next: resumeAt,
      },
      [resumeAt]: {
        Type: 'Choice',
        ...(copyStarts ? {} : { Comment: NO_COPY_STARTS_COMMENT }),
        Choices: this.resumeAtRules(copyStarts, noPoint),
        Default: noPoint,
      },
      [noPoint]: {
        Type: 'Fail',
        Error: ASL_ERRORS.noResumePoint,
        Cause: 'the execution input names no node or continuation point of this state machine',
      },
    };
  }

  /**
   * One rule per continuation point and (`copyStarts`) per top-level node a copy may start at. A Choice
   * needs at least one rule (Step Functions refuses an empty `Choices`): with none, the one rule sends
   * any execution input to the no-resume-point Fail, as the Default would.
   */
  private resumeAtRules(copyStarts: boolean, noPoint: string): AslChoiceRule[] {
    const points = [...this.resumePoints, ...(copyStarts ? this.startPoints : [])];
    if (points.length === 0) return [{ Variable: '$.resumeAt', IsPresent: true, Next: noPoint }];
    return points.map((point) => ({ Variable: '$.resumeAt', StringEquals: point, Next: point }));
  }

  // ---- lookups ----

  private resource(type: NodeType): string {
    this.usedTypes.add(type);
    return resourceFor(type);
  }

  private helper(desired: string): string {
    let name = this.helpers.get(desired);
    if (name === undefined) {
      name = this.names.claim(desired);
      this.helpers.set(desired, name);
    }
    return name;
  }

  private nodeName(id: string): string {
    const name = this.nodeNames.get(id);
    if (name === undefined) throw internal(`unknown node ${id}`);
    return name;
  }

  /**
   * Whether `node`, going to `next`, reports to its branch's JOIN itself: its next is the JOIN and its
   * Task is a plain one (a question's or an approval's wait has states of its own after it).
   */
  private reportsToJoin(scope: Scope, node: GraphNode, next: string): boolean {
    if (scope.report === undefined || next !== scope.stop || scope.doneName === undefined) return false;
    if ('boundary' in node) return true;
    const description = describeNode(this.graph, node);
    if (description.type === 'USER_INTERACTION' && waitsForAnswer(description.config)) return false;
    return !(description.type === 'LLM' && asksApproval(description));
  }

  private target(scope: Scope, id: string): string {
    if (id !== scope.stop || scope.doneName === undefined) return this.nodeName(id);
    if (scope.report) scope.report.doneUsed = true;
    return scope.doneName;
  }

  private node(id: string): GraphNode {
    const node = this.graph.nodes.get(id);
    if (!node) throw internal(`unknown node ${id}`);
    return node;
  }

  private transition(id: string): Transition {
    const transition = this.graph.transitions.get(id);
    if (!transition) throw internal(`node ${id} has no transition`);
    return transition;
  }

  /** Where a loop goes when it is done: the LOOP_END's other successor. */
  private loopExit(loopId: string): string {
    const loop = this.graph.loops.get(loopId);
    const end = loop ? this.graph.transitions.get(loop.endId) : undefined;
    if (end?.kind !== 'loopEnd' || end.exit === undefined) throw internal(`loop ${loopId} has no exit`);
    return end.exit;
  }
}

function nextOf(transition: Transition, id: string): string {
  if (transition.kind !== 'next') throw internal(`node ${id} should have a single successor`);
  return transition.next;
}

function retry(): AslRetrier[] {
  return [
    { ErrorEquals: [...NOT_RETRIED], MaxAttempts: 0 },
    { ErrorEquals: [TASK_FAILED], ...TASK_RETRY },
  ];
}

/** Any error of a Task but States.Timeout (which no Task here retries: a question's own timeout). */
const TASK_FAILED = 'States.TaskFailed';

function catchAll(next: string): AslCatcher {
  return { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: next };
}

function loopExits(): AslCondition {
  return {
    And: [
      { Variable: '$.loop.exit', IsPresent: true },
      { Variable: '$.loop.exit', BooleanEquals: true },
    ],
  };
}

/** The envelope a path starts with: the parent's, on the path's child thread, at step 0. */
function childEnvelope(index: number): Record<string, string | number> {
  return {
    'executionId.$': '$.executionId',
    'workflowId.$': '$.workflowId',
    'workflowVersion.$': '$.workflowVersion',
    'rootThreadId.$': '$.rootThreadId',
    'threadId.$': `$.fork.children[${index}]`,
    step: 0,
    'maxSteps.$': '$.maxSteps',
  };
}

/**
 * The envelope item i of a FORK over a list starts with: the parent's, on thread `<fork.base>-<i>`, at
 * step 0, with `item`: its byte range in the FORK's item source (`$$.Map.Item.Value`) and where that
 * source is, from which its first step creates the thread. `$` is the Map's input, `$$.Map.Item.Index`
 * the item's index.
 */
function itemEnvelope(): Record<string, unknown> {
  return {
    'executionId.$': '$.executionId',
    'workflowId.$': '$.workflowId',
    'workflowVersion.$': '$.workflowVersion',
    'rootThreadId.$': '$.rootThreadId',
    'threadId.$': "States.Format('{}-{}', $.fork.base, $$.Map.Item.Index)",
    step: 0,
    'maxSteps.$': '$.maxSteps',
    item: { 'at.$': '$$.Map.Item.Value', 'source.$': '$.fork.source' },
  };
}

/**
 * The Step Functions quota on a state machine definition. Placeholders become function ARNs on deploy,
 * so each counts as the longest ARN a function version can have:
 * `arn:` + partition (aws-us-gov, 10) + `:lambda:` + region (us-isof-south-1, 15) + `:` + account (12)
 * + `:function:` + name (at most 64) + `:` + version (10 digits) = 135.
 */
export const MAX_DEFINITION_BYTES = 1_048_576;
export const MAX_FUNCTION_ARN_LENGTH = 135;

/**
 * The definition's size with ARNs in place of placeholders; DEFINITION_TOO_LARGE when it passes the
 * quota. Node configs are in the node table, so only the graph (its nodes, edges and forks) counts.
 */
function checkDefinitionSize(
  definition: AslDefinition,
  workflowId: string,
  maxBytes = MAX_DEFINITION_BYTES,
): number {
  const bytes = definitionSize(definition);
  if (bytes === Number.POSITIVE_INFINITY) throw tooLarge(workflowId, 'more than 512 MB');
  if (bytes > maxBytes) throw tooLarge(workflowId, `${bytes.toLocaleString('en-US')} bytes`);
  return bytes;
}

/** The definition's size with ARNs in place of placeholders; Infinity past V8's string limit (~512 MB). */
function definitionSize(definition: AslDefinition): number {
  let text: string;
  try {
    text = JSON.stringify(definition);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return Number.POSITIVE_INFINITY;
  }
  let bytes = new TextEncoder().encode(text).length;
  const placeholders = text.match(/\$\{Fn_[A-Z_]+\}/g) ?? [];
  for (const placeholder of placeholders) bytes += MAX_FUNCTION_ARN_LENGTH - placeholder.length;
  return bytes;
}

function tooLarge(workflowId: string, size: string): StepthreadError {
  return new StepthreadError(
    'DEFINITION_TOO_LARGE',
    `workflow ${workflowId} compiles to a state machine definition of ${size} (with function ARNs in place), over Step Functions' limit of 1,048,576 bytes; node configs are not part of it (they are in the node table), so it is the graph that is too large: split it into smaller workflows (a SUBGRAPH inlines its nodes, a wide FORK adds states per path)`,
  );
}

function internal(message: string): StepthreadError {
  return new StepthreadError('ASL_COMPILE_ERROR', `cannot compile: ${message}`);
}
