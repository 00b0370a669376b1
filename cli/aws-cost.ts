/**
 * What a run costs on AWS, deployed: an estimate from what the run records, beside its model cost
 * (cli/run-cost.ts). AWS meters none of it per run, so each part is counted from the run's steps:
 *
 * - Step Functions Standard state transitions, from the compiled definition's shape
 *   (engine/asl/compile.ts): every node execution enters its Task state; a ROUTE, LOOP_START or
 *   LOOP_END then its Choice; a question (USER_INTERACTION) a second Task that commits the answer; an
 *   LLM node whose tools may ask approval its Choice after each Task, and per question a wait Task and
 *   its Task again; a FORK its Parallel or Map state; each fork branch or list item its entry Pass, a
 *   Choice and the Pass that ends it (not after a completed path's report under an ALL_COMPLETED join
 *   without a timeout, which ends the path), and a report Task to the JOIN unless its last node
 *   reported it (a path that completed at a node whose Task goes straight to the JOIN:
 *   engine/asl/compile.ts). Every definition starts at a Choice (where a
 *   copy or a continuation enters at its node), and each continuation enters five states across the
 *   two executions; a failed run enters the fail Task and the Fail state.
 * - Lambda requests: one per Task above that invokes a function; GB-seconds: each step's recorded
 *   duration (at least MIN_BILLED_MS: its reads and writes of the stores) at its function's memory
 *   (infra/handler-registry.ts), and MIN_BILLED_MS for the Tasks that record no step.
 * - DynamoDB and S3 requests per step as the stores make them on AWS (STEP_REQUESTS, measured per node
 *   type with the Lambdas' stores on the examples), per model call (the spend item's ADD, and its read
 *   before the call when the run has a budget: functions/nodes/run-budget.ts), per
 *   tool call (its ADD), per question, per approval and per fork branch; write units at the mix's
 *   measured WRITE_UNITS_PER_WRITE.
 *
 * Not counted: S3 GETs (warm Lambdas cache the immutable segments), CloudWatch Logs, X-Ray, a JOIN
 * timeout's timer branch, the extra Parallel states of a serial FORK, a Distributed Map's child
 * executions beyond their states, and Task retries. test/e2e/aws-cost.test.ts holds the estimate of
 * each example within AWS_COST_TOLERANCE of what bench/example-costs.ts measures for it.
 */
import type { NodeType } from '../engine/model/schema.ts';
import type { Thread } from '../engine/thread/types.ts';
import { executionChain, threadsOfChain } from '../functions/stores/execution-chain.ts';
import type { ExecutionIndex, ExecutionRecord } from '../functions/stores/execution-index.ts';
import type { StepMeter, ThreadStore } from '../functions/stores/thread-store.ts';
import { HANDLER_SPECS } from '../infra/handler-registry.ts';

/** When the prices below were read (AWS pricing pages, us-east-1, on demand, arm64 Lambda). */
export const AWS_PRICES_AS_OF = '2025-06-01';

/** US dollars per unit, us-east-1 list prices. */
export const AWS_PRICES = {
  /** Step Functions Standard, per state transition. */
  transition: 0.000025,
  lambdaRequest: 0.0000002,
  /** Lambda duration, arm64, per GB-second. */
  lambdaGbSecond: 0.0000133334,
  /** DynamoDB on-demand, per read request unit. */
  dynamoRead: 0.000000125,
  /** DynamoDB on-demand, per write request unit. */
  dynamoWrite: 0.000000625,
  s3Put: 0.000005,
  s3Get: 0.0000004,
} as const;

/** How far the estimate of an example may be from what bench/example-costs.ts measures for it. */
export const AWS_COST_TOLERANCE = 0.05;

/** The least a Lambda invocation is taken to bill: a step's store requests, as bench/runtime.ts assumes. */
export const MIN_BILLED_MS = 100;

/**
 * Write request units per DynamoDB write: items over 1 KB bill more than one (bench/runtime.ts sizes
 * every item the examples write: 4,098 units for 3,492 writes).
 */
export const WRITE_UNITS_PER_WRITE = 1.17;

interface Requests {
  readonly reads: number;
  readonly writes: number;
  readonly s3Puts: number;
}

const PLAIN_STEP: Requests = { reads: 1, writes: 2, s3Puts: 0 };

/**
 * Each node type's step beyond its model calls, tool calls, questions and branches: the head's read,
 * the step record's PutItem and the head's UpdateItem, and what the type adds (START creates the
 * thread and the execution's items; END also ends the execution item; a step that appends to the
 * conversation writes a segment; the JOIN reads its branches' results and records two items).
 */
export const STEP_REQUESTS: Readonly<Record<NodeType, Requests>> = {
  START: { reads: 0, writes: 4, s3Puts: 0 },
  END: { reads: 2, writes: 3, s3Puts: 0 },
  LLM: { reads: 1, writes: 2, s3Puts: 1 },
  CONTEXT_PROCESSOR: { reads: 1, writes: 2, s3Puts: 1 },
  USER_INTERACTION: { reads: 1, writes: 3, s3Puts: 1 },
  FORK: PLAIN_STEP,
  JOIN: { reads: 2, writes: 3, s3Puts: 0 },
  ROUTE: PLAIN_STEP,
  LOOP_START: PLAIN_STEP,
  LOOP_END: PLAIN_STEP,
  VARIABLE: PLAIN_STEP,
  CODE: PLAIN_STEP,
  TOOL: PLAIN_STEP,
  SUBGRAPH: PLAIN_STEP,
};

/** The spend item's GetItem before a model call and its ADD after it. */
const PER_MODEL_CALL: Requests = { reads: 1, writes: 1, s3Puts: 0 };
/** A run with no budget: the ADD alone. */
const PER_MODEL_CALL_NO_BUDGET: Requests = { reads: 0, writes: 1, s3Puts: 0 };
/** The spend item's ADD. */
const PER_TOOL_CALL: Requests = { reads: 0, writes: 1, s3Puts: 0 };
/** A USER_INTERACTION's wait Task: it reads the thread and records the question. */
const PER_QUESTION: Requests = { reads: 3, writes: 1, s3Puts: 0 };
/** A tool call held for approval: the turn held, the question recorded and closed, the request read again. */
const PER_APPROVAL: Requests = { reads: 12, writes: 4, s3Puts: 0 };
/** A fork branch or list item: its thread and listing created, its outcome in the join item, the JOIN's Query. */
const PER_BRANCH: Requests = { reads: 1, writes: 3, s3Puts: 0 };
/** A branch's report Task (`branch-done`, `branch-failed`): its thread, root and last record read, its end recorded. */
const PER_REPORT: Requests = { reads: 3, writes: 2, s3Puts: 0 };

/** Node types whose step never reports its path itself: a Choice or a question's answer Task follows it. */
const REPORTED_APART: ReadonlySet<NodeType> = new Set([
  'ROUTE',
  'LOOP_START',
  'LOOP_END',
  'USER_INTERACTION',
]);
/** A continuation's resume Task in the new execution. */
const PER_CONTINUATION: Requests = { reads: 1, writes: 2, s3Puts: 0 };

/** Node types whose Task is followed by a Choice state. */
const CHOICE_AFTER: ReadonlySet<NodeType> = new Set(['ROUTE', 'LOOP_START', 'LOOP_END']);

/** What one node's steps in a run add up to. */
export interface NodeMeters {
  readonly nodeId: string;
  readonly nodeType: NodeType;
  readonly steps: number;
  /** Lambda milliseconds billed for its steps (each at least MIN_BILLED_MS). */
  readonly billedMs: number;
  readonly modelCalls: number;
  readonly toolCalls: number;
  /** Steps of a node whose tools may ask approval (each enters the Choice after its Task). */
  readonly approvalSteps: number;
  /** Questions its tool calls asked. */
  readonly approvals: number;
}

/** What a run records that its AWS cost follows from. */
export interface RunMeters {
  /** Per node, in the order the nodes first ran. */
  readonly nodes: readonly NodeMeters[];
  /** Fork branches and list items (the run's threads besides its root). */
  readonly branches: number;
  /** Of those, the ones a report Task ended (the others' last nodes reported them). */
  readonly reports: number;
  /**
   * Of those, the completed ones whose path ended at its report, with no Choice and ending Pass after
   * it (an ALL_COMPLETED join without a timeout: thread metadata `pathEndsAtReport`).
   */
  readonly endedAtReport: number;
  /** Executions after the first. */
  readonly continuations: number;
  /** The run failed: its fail Task and Fail state. */
  readonly failed: boolean;
  /** Its model calls read the spend item first: its root head does not say it has no budget. */
  readonly readsSpend: boolean;
}

/** A run's AWS side, deployed, as `inspect`, `runs --json` and dev's API give it. */
export interface AwsCost {
  /** The estimate in US dollars. */
  usd: number;
  stateTransitions: number;
  lambdaInvocations: number;
  lambdaGbSeconds: number;
  dynamoReads: number;
  dynamoWrites: number;
  dynamoWriteUnits: number;
  s3Puts: number;
  /** The estimate of each node's own steps. */
  byNode: Record<string, number>;
  /**
   * What is no node's own step: fork branches' entry, report and end states, a continuing
   * definition's entry, continuations, the fail path. With `byNode`, the whole of `usd`.
   */
  bookkeepingUsd: number;
  /** When the prices were read (AWS_PRICES_AS_OF). */
  pricesAsOf: string;
}

/** One step added to its node's meters. */
export function addStep(meters: NodeMeters | undefined, step: StepMeter): NodeMeters {
  const took = Date.parse(step.endedAt) - Date.parse(step.startedAt);
  const billedMs = Math.max(Number.isFinite(took) ? took : 0, MIN_BILLED_MS);
  const asks = step.toolCalls?.approvals !== undefined;
  return {
    nodeId: step.nodeId,
    nodeType: step.nodeType,
    steps: (meters?.steps ?? 0) + 1,
    billedMs: (meters?.billedMs ?? 0) + billedMs,
    modelCalls: (meters?.modelCalls ?? 0) + (step.usage?.modelCalls ?? 0),
    toolCalls: (meters?.toolCalls ?? 0) + (step.toolCalls?.calls ?? 0) + (step.nodeType === 'TOOL' ? 1 : 0),
    approvalSteps: (meters?.approvalSteps ?? 0) + (asks ? 1 : 0),
    approvals: (meters?.approvals ?? 0) + (step.toolCalls?.approvals ?? 0),
  };
}

/** The counts one node's steps bring, as the module comment says. */
interface Counts {
  transitions: number;
  invocations: number;
  gbSeconds: number;
  reads: number;
  writes: number;
  s3Puts: number;
}

const gb = (type: NodeType) => HANDLER_SPECS[type].memoryMb / 1024;

function times(requests: Requests, n: number): Pick<Counts, 'reads' | 'writes' | 's3Puts'> {
  return { reads: requests.reads * n, writes: requests.writes * n, s3Puts: requests.s3Puts * n };
}

function sum(...parts: Partial<Counts>[]): Counts {
  const total: Counts = { transitions: 0, invocations: 0, gbSeconds: 0, reads: 0, writes: 0, s3Puts: 0 };
  for (const part of parts) {
    for (const key of Object.keys(total) as (keyof Counts)[]) total[key] += part[key] ?? 0;
  }
  return total;
}

function nodeCounts(node: NodeMeters, readsSpend: boolean): Counts {
  const questions = node.nodeType === 'USER_INTERACTION' ? node.steps : 0;
  const bookkeepingSeconds = MIN_BILLED_MS / 1000;
  return sum(
    {
      transitions:
        node.steps +
        (CHOICE_AFTER.has(node.nodeType) ? node.steps : 0) +
        (node.nodeType === 'FORK' ? node.steps : 0) +
        questions +
        node.approvalSteps +
        3 * node.approvals,
      invocations: node.steps + questions + 2 * node.approvals,
      gbSeconds:
        (node.billedMs / 1000) * gb(node.nodeType) +
        (questions + 2 * node.approvals) * bookkeepingSeconds * gb(node.nodeType),
    },
    times(STEP_REQUESTS[node.nodeType], node.steps),
    times(readsSpend ? PER_MODEL_CALL : PER_MODEL_CALL_NO_BUDGET, node.modelCalls),
    times(PER_TOOL_CALL, node.toolCalls),
    times(PER_QUESTION, questions),
    times(PER_APPROVAL, node.approvals),
  );
}

function runCounts(run: RunMeters): Counts {
  const bookkeepingSeconds = MIN_BILLED_MS / 1000;
  return sum(
    // Each branch: entry Pass, Choice, ending Pass (none of these two after a report that ended the
    // path); some a report Task (the JOIN function) too.
    {
      transitions: 3 * run.branches - 2 * run.endedAtReport + run.reports,
      invocations: run.reports,
      gbSeconds: run.reports * bookkeepingSeconds * gb('JOIN'),
    },
    times(PER_BRANCH, run.branches),
    times(PER_REPORT, run.reports),
    {
      transitions: 1 + 5 * run.continuations,
      invocations: run.continuations,
      gbSeconds: run.continuations * bookkeepingSeconds * gb('START'),
    },
    times(PER_CONTINUATION, run.continuations),
    run.failed ? { transitions: 2, invocations: 1, gbSeconds: bookkeepingSeconds * gb('END') } : {},
    run.failed ? times(STEP_REQUESTS.END, 1) : {},
  );
}

/** The dollars counts come to at AWS_PRICES. */
function usdOf(counts: Counts): number {
  const p = AWS_PRICES;
  return (
    counts.transitions * p.transition +
    counts.invocations * p.lambdaRequest +
    counts.gbSeconds * p.lambdaGbSecond +
    counts.reads * p.dynamoRead +
    counts.writes * WRITE_UNITS_PER_WRITE * p.dynamoWrite +
    counts.s3Puts * p.s3Put
  );
}

/** To `places` decimals: sums of prices carry binary noise (0.42500000000000004) a reader need not see. */
function rounded(value: number, places: number): number {
  const scale = 10 ** places;
  return Math.round(value * scale) / scale;
}

/** Dollars to the picodollar: a step's share is a few millionths of a dollar. */
const usdRounded = (counts: Counts): number => rounded(usdOf(counts), 12);

/** The estimate of a run from its meters. */
export function estimateAwsCost(run: RunMeters): AwsCost {
  const byNode: Record<string, number> = {};
  const own = runCounts(run);
  const parts = [own];
  for (const node of run.nodes) {
    const counts = nodeCounts(node, run.readsSpend);
    parts.push(counts);
    byNode[node.nodeId] = usdRounded(counts);
  }
  const total = sum(...parts);
  return {
    usd: usdRounded(total),
    stateTransitions: total.transitions,
    lambdaInvocations: total.invocations,
    lambdaGbSeconds: rounded(total.gbSeconds, 6),
    dynamoReads: total.reads,
    dynamoWrites: total.writes,
    dynamoWriteUnits: rounded(total.writes * WRITE_UNITS_PER_WRITE, 2),
    s3Puts: total.s3Puts,
    byNode,
    bookkeepingUsd: usdRounded(own),
    pricesAsOf: AWS_PRICES_AS_OF,
  };
}

/** Two parts of one node's meters added (its steps on several threads: fork branches, list items). */
export function addMeters(a: NodeMeters | undefined, b: NodeMeters): NodeMeters {
  if (a === undefined) return b;
  return {
    nodeId: a.nodeId,
    nodeType: a.nodeType,
    steps: a.steps + b.steps,
    billedMs: a.billedMs + b.billedMs,
    modelCalls: a.modelCalls + b.modelCalls,
    toolCalls: a.toolCalls + b.toolCalls,
    approvalSteps: a.approvalSteps + b.approvalSteps,
    approvals: a.approvals + b.approvals,
  };
}

/** Per node, in the order the nodes first ran, the meters of these steps. */
export function nodeMetersOf(steps: Iterable<StepMeter>): NodeMeters[] {
  const nodes = new Map<string, NodeMeters>();
  for (const step of steps) nodes.set(step.nodeId, addStep(nodes.get(step.nodeId), step));
  return [...nodes.values()];
}

/**
 * A run's meters from its threads as stored (heads): each thread's own steps (one projected Query per
 * thread; a copy's steps before the copy were its source's run), the threads besides the root as
 * branches; `executions`: how many executions the run took (continue-as-new).
 */
export async function runMetersOf(
  store: Pick<ThreadStore, 'readStepMeters'>,
  root: Thread,
  threads: readonly Thread[],
  executions: number,
): Promise<RunMeters> {
  const own = threadsOfRun(root, threads);
  const steps = await Promise.all(own.map((thread) => store.readStepMeters(thread.id, thread.step ?? 0)));
  return runMeters(root, own, nodeMetersOf(steps.flat()), executions);
}

/** The run's own threads: its root, and the fork branches and list items (no copies made from them). */
export function threadsOfRun(root: Thread, threads: readonly Thread[]): Thread[] {
  return threads.filter(
    (thread) =>
      thread.id === root.id ||
      (thread.metadata.copiedFrom === undefined && thread.metadata.forkPathId !== undefined),
  );
}

/** A run's meters from its nodes' (`own`: threadsOfRun). */
export function runMeters(
  root: Thread,
  own: readonly Thread[],
  nodes: readonly NodeMeters[],
  executions: number,
): RunMeters {
  const typeOf = new Map(nodes.map((node) => [node.nodeId, node.nodeType]));
  const branches = own.filter((thread) => thread.id !== root.id);
  // A branch that completed at a node whose step could report it did; any other ended in a report Task.
  const reportedByNode = (thread: Thread) => {
    const last = thread.lastEnvelope?.last?.nodeId;
    const type = last === undefined ? undefined : typeOf.get(last);
    return thread.status === 'COMPLETED' && type !== undefined && !REPORTED_APART.has(type);
  };
  return {
    nodes,
    branches: branches.length,
    reports: branches.filter((thread) => !reportedByNode(thread)).length,
    endedAtReport: branches.filter(
      (thread) => thread.status === 'COMPLETED' && thread.metadata.pathEndsAtReport === true,
    ).length,
    continuations: Math.max(0, executions - 1),
    failed: root.status === 'FAILED',
    readsSpend: root.metadata.noBudget !== true,
  };
}

/**
 * The estimate of the run an execution record belongs to: every execution of it (continue-as-new),
 * every thread, each thread's steps. Undefined when its root thread is not there (yet).
 */
export async function awsCostOfRun(
  stores: { readonly threads: ThreadStore; readonly executions: ExecutionIndex },
  record: ExecutionRecord,
): Promise<AwsCost | undefined> {
  const chain = await executionChain(stores.executions, record);
  const threads = (await threadsOfChain(stores.threads, chain)).map((entry) => entry.thread);
  // The index is eventually consistent: the root is read when it is not listed yet.
  let root = threads.find((thread) => thread.id === record.rootThreadId);
  if (root === undefined) {
    root = (await stores.threads.getThread(record.rootThreadId).catch(() => undefined))?.thread;
    if (root === undefined) return undefined;
    threads.unshift(root);
  }
  return estimateAwsCost(await runMetersOf(stores.threads, root, threads, chain.length));
}
