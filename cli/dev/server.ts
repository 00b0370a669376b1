/**
 * `stepthread dev`'s server: one process that owns the local stores, runs workflows in-process on the
 * embedded runtime, and serves a JSON API, a live event stream (Server-Sent Events) and the web
 * console. It binds to loopback, answers only requests whose Host is this server (DNS rebinding),
 * and refuses writes from another origin. Runs belong to the server, never to a browser tab: a
 * closed page changes nothing, a reloaded one reads the same state and subscribes again.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { type CodedError, type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import { buildGraph } from '../../engine/graph/build.ts';
import { inexactNumberIn, MAX_VALUE_DEPTH, valueDepth } from '../../engine/model/json-values.ts';
import type { Message, Workflow } from '../../engine/model/schema.ts';
import { type CopyEdit, copyEditsOf } from '../../engine/thread/copy-edits.ts';
import { CopyEditRefused, workflowForThread } from '../../engine/thread/copy-workflow-edits.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { AwsClients } from '../../functions/aws/clients.ts';
import { RunCancelled } from '../../functions/cancel/watch.ts';
import type { NodeLogsEntry, NodeResultEntry, ReplyTextEntry } from '../../functions/handlers/deps.ts';
import type { SfnSend } from '../../functions/handlers/task-tokens.ts';
import type { ProviderFactory } from '../../functions/llm/provider.ts';
import {
  type CommandForm,
  PLAIN_COMMAND_FORM,
  resumeCommand,
} from '../../functions/local/interaction-hints.ts';
import { AnsweredElsewhere } from '../../functions/local/offered-replies.ts';
import {
  detailsOfRun,
  executionBusy,
  getLocalRun,
  isRunnerAlive,
  latestLocalRun,
  recordLocalRun,
  runnerGone,
} from '../../functions/local/run-registry.ts';
import {
  createLocalRuntime,
  type LocalRuntime,
  refuseOtherWorkflow,
  runnableStartOf,
} from '../../functions/local/runtime.ts';
import type { LocalEvent } from '../../functions/local/state-machine.ts';
import { forkStepOfJoinKey, rootThreadIdFor } from '../../functions/nodes/ids.ts';
import { answerFor, type InteractionReply } from '../../functions/nodes/user-interaction.ts';
import { executionChain, threadsOfChain } from '../../functions/stores/execution-chain.ts';
import type { ExecutionRecord } from '../../functions/stores/execution-index.ts';
import { type Interaction, parseInteractionId } from '../../functions/stores/interaction-store.ts';
import { createStoredBytesReader } from '../../functions/stores/stored-bytes.ts';
import { copySourceOf } from '../../functions/stores/thread-store.ts';
import { threadBefore } from '../../functions/stores/time-travel.ts';
import { claimCheck, hydrateAll } from '../../functions/stores/value-store.ts';
import { fileAnswers, firstAnswer } from '../answers.ts';
import { missingApiKeys } from '../api-keys.ts';
import {
  type AwsCost,
  addMeters,
  estimateAwsCost,
  type NodeMeters,
  runMeters,
  threadsOfRun,
} from '../aws-cost.ts';
import { checkWorkflow } from '../check-workflow.ts';
import { type CancelJson, cancelJsonOf, stopDeployedExecution } from '../commands/cancel.ts';
import type { NodeRun } from '../commands/inspect.ts';
import { openInteractions } from '../commands/pending.ts';
import { deliverReply } from '../commands/respond.ts';
import { executionArnOf, type SfnLike } from '../commands/start.ts';
import { definitionsOnStack, deployedCopyChecks, deployedStoppedAt } from '../deployed/copy-checks.ts';
import { startCopyOnStack } from '../deployed/copy-start.ts';
import type { NodeStatus } from '../deployed/execution-view.ts';
import { combinedStatus, type DeployedRun, listDeployedRuns } from '../deployed/runs.ts';
import {
  type DeployedStateMachine,
  type DescribedExecution,
  deployedStateMachines,
  describeDeployedExecution,
  startOnLiveAlias,
  stepFunctionsConsoleUrl,
  workflowIdOfExecutionArn,
} from '../deployed/step-functions.ts';
import { stackNodeTables } from '../deployed/workflow-declarations.ts';
import { parseWorkflowText } from '../load-workflow.ts';
import { addUsage, runCostOf } from '../run-cost.ts';
import { inForkOrder, pathOrderOf } from '../thread-order.ts';
import { stepFunctionsViewOf, taskNodesOf, withStateRuns } from './deployed-view.ts';
import { type GraphView, graphViewOf } from './graph-view.ts';
import { asInterrupted } from './interrupted-view.ts';
import { addToolCalls, createNodeRunsCache, type NodeRunsSummary } from './node-runs-cache.ts';
import { createRemoteReplies, type ReplyWatch } from './remote-replies.ts';
import { createStreamingReplies } from './streaming-replies.ts';
import { subgraphFollowerOf } from './subgraph-live.ts';
import { comparisonOf, stepInputOf } from './workbench-reads.ts';

export { stepFunctionsConsoleUrl };

export interface DevServerOptions {
  readonly clients: AwsClients;
  /** The folder whose .json / .yaml / .yml workflow files the console lists. */
  readonly workflowsDir: string;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
  /** The built console (index.html and assets); default console/dist of this package. */
  readonly consoleDir?: string;
  /** LLM providers (tests); default: each workflow's profiles. */
  readonly providers?: ProviderFactory;
  /**
   * Serve a deployed stack instead of running locally: `clients` point at its table and bucket, runs
   * start with StartExecution on `<prefix>-<workflowId>`, answers go back with SendTaskSuccess.
   */
  readonly deployed?: DeployedStack;
  /**
   * How a `stepthread` command it suggests is written to run as pasted: the CLI as `dev` was run, and
   * ` --data-dir DIR` as it was given (default: `stepthread`, no arguments).
   */
  readonly commandForm?: CommandForm;
  /**
   * What a CODE node printed in a run this server started, once its step committed (`dev` prints it
   * in its terminal as `run` does).
   */
  readonly onNodeLogs?: (entry: NodeLogsEntry) => void;
}

export interface DeployedStack {
  readonly sfn: SfnLike;
  /** State machines are named `<prefix>-<workflowId>`. */
  readonly prefix: string;
  /** How often the status of a run in flight is read again (it has no local events). Default 2000 ms. */
  readonly pollMs?: number;
  /** The replies its executions stream (the stack's Events API); absent, none are shown. */
  readonly replies?: ReplyWatch;
}

/** Steps (and their events) the thread APIs give when not asked for a range: the latest ones. */
export const LATEST_STEPS = 100;

/** The first of the latest `limit` (default LATEST_STEPS) of `stepCount` steps; 1 when `to` names a range's end. */
function firstOfLatest(stepCount: number, range: { to?: number; limit?: number }): number {
  if (range.to !== undefined) return 1;
  return Math.max(1, stepCount - (range.limit ?? LATEST_STEPS) + 1);
}

export interface DevServer {
  readonly url: string;
  readonly port: number;
  /** Ends pending answers, waits for the runs in flight, closes the streams and the socket. */
  close(): Promise<void>;
  /** Runs started here (on this machine) that have not ended: what stopping the process interrupts. */
  unfinishedRuns(): string[];
}

/** A thread of an execution page: `inspect --json`'s thread report without the message count. */
export interface ThreadReport {
  threadId: string;
  parentThreadId?: string;
  forkPathId?: string;
  copiedFrom?: string;
  status: string;
  currentNodeId?: string;
  startTime: string;
  endTime?: string;
  errors: Thread['errors'];
  /** Its latest LATEST_STEPS node runs (`GET /api/threads/:id/steps?from=` has the earlier ones). */
  nodes: NodeRun[];
  /** How many node runs before `nodes` are not listed. */
  earlierRuns?: number;
  children: string[];
}

/** A row of the executions list and the head of an execution page. */
export interface ExecutionRow {
  executionId: string;
  workflowId: string;
  rootThreadId?: string;
  status: string;
  /** Deployed: how Step Functions sees the execution. */
  stepFunctionsStatus?: string;
  startTime: string;
  endTime?: string;
  durationMs?: number;
  continuedFrom?: string;
  continuedAs?: string;
  /** Deployed: the execution's page in the Step Functions console. */
  consoleUrl?: string;
  /** INTERRUPTED: the command that resumes it. */
  resume?: string;
}

/** Live status of a node in a run in flight, from its Task states' events. */
export type LiveStatus = 'RUNNING' | 'WAITING' | 'COMPLETED' | 'FAILED';

interface LiveRun {
  readonly executionId: string;
  readonly workflowId: string;
  readonly rootThreadId: string;
  readonly startedAt: string;
  status: 'RUNNING' | 'DONE';
  error?: CodedError;
  readonly nodes: Map<string, { status: LiveStatus; at: string; threadId?: string }>;
  readonly threads: Set<string>;
  readonly done: Promise<void>;
}

interface Waiter {
  readonly interaction: Interaction;
  readonly answer: (reply: InteractionReply) => void;
}

interface LoadedWorkflowFile {
  readonly file: string;
  readonly id?: string;
  readonly workflow?: Workflow;
  readonly description?: string;
  readonly errors: readonly CodedError[];
}

const MAX_BODY_BYTES = 1024 * 1024;
/** Deployed executions polled at once for the pages showing them (DescribeExecution each, every 2 s). */
const MAX_WATCHED_EXECUTIONS = 100;
/** How long the dev server trusts its list of the stack's state machines. */
const STATE_MACHINES_TTL_MS = 60_000;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
const WORKFLOW_FILE = /\.(json|ya?ml)$/i;
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.ico': 'image/x-icon',
};

/** An API failure: the HTTP status and the coded error the body carries. */
export class ApiError extends StepthreadError {
  readonly status: number;
  readonly details: readonly CodedError[] | undefined;
  constructor(status: number, code: ErrorCode, message: string, details?: readonly CodedError[]) {
    super(code, message);
    this.status = status;
    this.details = details;
  }
}

const STATUS_OF: Partial<Record<ErrorCode, number>> = {
  THREAD_NOT_FOUND: 404,
  EXECUTION_NOT_FOUND: 404,
  INTERACTION_NOT_FOUND: 404,
  WORKFLOW_NOT_FOUND: 404,
  NODE_NOT_FOUND: 400,
  COPY_POINT_NOT_FOUND: 400,
  COPY_POINT_IN_FORK_BRANCH: 400,
  // A copy's edits (`set`, `input`, `nodeConfig`, `profile`) that the workflow refuses (a refused
  // workflow edit is a 400 whatever its code: see httpStatusOf).
  INVALID_COPY_EDIT: 400,
  UNKNOWN_VARIABLE_REFERENCE: 400,
  INVALID_VARIABLE: 400,
  INPUT_INVALID: 400,
  COPY_EDIT_NOT_DEPLOYABLE: 400,
  INVALID_INTERACTION_ANSWER: 400,
  INTERACTION_ALREADY_ANSWERED: 409,
  INTERACTION_NOT_DELIVERED: 409,
  INTERACTION_TIMED_OUT: 409,
  INVALID_STATUS_TRANSITION: 409,
  RUN_ALREADY_ENDED: 409,
  RUN_CANCELLED: 409,
  RUN_NOT_RESUMABLE: 409,
  EXECUTION_BUSY: 409,
  INVALID_STATE_MACHINE: 409,
  INVALID_TASK_INPUT: 409,
};

/**
 * A copy request's edits: `set` (variable name → JSON value), `input` (an object), `profile` (profile
 * id → the whole profile) and `nodeConfig` (node id → config key → JSON value).
 */
function copyEditsOfBody(body: Record<string, unknown>): CopyEdit[] {
  const { set, input, profile, nodeConfig } = body;
  if (set !== undefined && !isRecord(set)) {
    throw new ApiError(400, 'INVALID_COPY_EDIT', '"set" must be an object of variable names to values');
  }
  if (input !== undefined && !isRecord(input)) {
    throw new ApiError(400, 'INPUT_INVALID', '"input" must be a JSON object');
  }
  const edits: CopyEdit[] = Object.entries(set ?? {}).map(([name, value]) => ({
    kind: 'variable',
    name,
    value,
  }));
  if (input !== undefined) edits.push({ kind: 'input', value: input });
  if (profile !== undefined && !isRecord(profile)) {
    throw new ApiError(400, 'INVALID_COPY_EDIT', '"profile" must be an object of profile ids to profiles');
  }
  for (const [profileId, value] of Object.entries(profile ?? {})) {
    edits.push({ kind: 'profile', profileId, value });
  }
  if (nodeConfig !== undefined && !isRecord(nodeConfig)) {
    throw new ApiError(
      400,
      'INVALID_COPY_EDIT',
      '"nodeConfig" must be an object of node ids to objects of config keys to values',
    );
  }
  for (const [nodeId, config] of Object.entries(nodeConfig ?? {})) {
    if (!isRecord(config)) {
      throw new ApiError(
        400,
        'INVALID_COPY_EDIT',
        `"nodeConfig"."${nodeId}" must be an object of config keys to values`,
      );
    }
    for (const [key, value] of Object.entries(config)) edits.push({ kind: 'nodeConfig', nodeId, key, value });
  }
  return edits;
}

function httpStatusOf(error: unknown): { status: number; body: Record<string, unknown> } {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      body: { error: error.toJSON(), ...(error.details ? { errors: error.details } : {}) },
    };
  }
  if (error instanceof CopyEditRefused) {
    // An edit the workflow refuses, with every problem it has (a validation may find several).
    return { status: 400, body: { error: error.toJSON(), errors: error.errors } };
  }
  if (error instanceof StepthreadError) {
    return { status: STATUS_OF[error.code] ?? 500, body: { error: error.toJSON() } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: { error: { code: 'NODE_EXECUTION_FAILED', message } } };
}

const badRequest = (message: string) => new ApiError(400, 'API_BAD_REQUEST', message);

/** A run whose LLM nodes read their API key from an unset environment variable is refused before it starts, as `run` refuses it. */
function refuseMissingApiKeys(workflow: Workflow): void {
  const missing = missingApiKeys(workflow, process.env);
  if (missing.length > 0) throw new ApiError(400, 'LLM_MISSING_API_KEY', missing[0]!.message, missing);
}

/** A path segment's percent-decoding; a malformed escape (`%zz`) is the client's error, not the server's. */
function decodePath(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw badRequest(`the path ${JSON.stringify(part)} has a malformed percent-escape`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Public fields of an interaction (never its task token). */
function interactionJson(interaction: Interaction, answerable: boolean) {
  const { taskToken: _token, ...rest } = interaction;
  return { ...rest, answerable };
}

/** The reply a request body gives: exactly one of approve, reject, input, select (reason optional). */
export function replyOfBody(body: unknown): Exclude<InteractionReply, { kind: 'fail' }> {
  if (!isRecord(body)) throw badRequest('the body must be a JSON object');
  const given = (['approve', 'reject', 'input', 'select'] as const).filter((key) => body[key] !== undefined);
  if (given.length !== 1) {
    throw badRequest('give exactly one of "approve": true, "reject": true, "input": <json>, "select": <n>');
  }
  const reason = body.reason;
  if (reason !== undefined && typeof reason !== 'string') throw badRequest('"reason" must be a string');
  const why = reason === undefined ? {} : { reason };
  if (body.approve !== undefined) {
    if (body.approve !== true) throw badRequest('"approve" must be true');
    return { kind: 'approve', ...why };
  }
  if (body.reject !== undefined) {
    if (body.reject !== true) throw badRequest('"reject" must be true');
    return { kind: 'reject', ...why };
  }
  if (body.select !== undefined) {
    const choice = body.select;
    if (!(typeof choice === 'string' || (typeof choice === 'number' && Number.isInteger(choice)))) {
      throw badRequest('"select" must be an option index or the option itself');
    }
    return { kind: 'select', choice };
  }
  return { kind: 'input', value: body.input };
}

/**
 * The thread a Task state runs on. Its state input is the envelope itself (the `{action, node,
 * envelope}` of engine/asl/task-input.ts is built from it by Parameters, after the event), so the id
 * is at the top; START's input is the execution's input, which names no thread.
 */
function threadIdOfInput(input: unknown): string | undefined {
  if (!isRecord(input)) return undefined;
  return typeof input.threadId === 'string' ? input.threadId : undefined;
}

/**
 * The file that serves a workflow id among the folder's (sorted by name): the one named after the id
 * (`<id>.json`, `.yaml`, `.yml`), else the first that declares it.
 */
function ownerOfId<T extends { readonly file: string; readonly id?: string }>(
  files: readonly T[],
  id: string,
): T | undefined {
  const declaring = files.filter((entry) => entry.id === id);
  return declaring.find((entry) => entry.file.replace(WORKFLOW_FILE, '') === id) ?? declaring[0];
}

/**
 * Why a workflows folder cannot be served, if it cannot: a mistyped one would otherwise serve an
 * empty console with no word of why.
 */
export function workflowsFolderProblem(dir: string): StepthreadError | undefined {
  const info = statSync(dir, { throwIfNoEntry: false });
  if (info?.isDirectory()) return undefined;
  return new StepthreadError(
    'DEV_FOLDER_NOT_FOUND',
    info === undefined
      ? `no folder ${dir}: give the folder of your workflow files (e.g. \`stepthread dev examples\`)`
      : `${dir} is a file, not a folder: give the folder of your workflow files`,
  );
}

/** Listens on the port, or says which port could not be had and how to choose another. */
async function listenOn(server: Server, port: number, host: string): Promise<void> {
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(portProblem(error, port, host)));
    server.listen(port, host, () => resolveListen());
  });
}

function portProblem(error: NodeJS.ErrnoException, port: number, host: string): StepthreadError {
  const why =
    error.code === 'EADDRINUSE'
      ? 'is in use (another `stepthread dev`, or another program)'
      : error.code === 'EACCES'
        ? 'is not allowed to this user (ports below 1024 need privileges)'
        : `cannot be listened on (${error.message})`;
  return new StepthreadError(
    'DEV_PORT_UNAVAILABLE',
    `port ${port} on ${host} ${why}: choose another with --port <n>, or --port 0 for any free one`,
    { cause: error },
  );
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const folderProblem = workflowsFolderProblem(resolve(options.workflowsDir));
  if (folderProblem) throw folderProblem;
  const runtime: LocalRuntime = createLocalRuntime({
    clients: options.clients,
    ...(options.providers ? { providers: options.providers } : {}),
  });
  const stores = runtime.stores;
  const storedBytes = createStoredBytesReader(options.clients, options.clients);
  const interactions = stores.interactions!;
  const consoleDir = options.consoleDir ?? builtConsoleDir();
  const workflowsDir = resolve(options.workflowsDir);
  const host = options.host ?? '127.0.0.1';
  const runs = new Map<string, LiveRun>();
  const waiters = new Map<string, Waiter>();
  /**
   * Visits (`<interactionId>@<step>`) answered through a waiter here, newest last: until its run
   * commits the answer the item still says PENDING, and a second answer meanwhile was answered too.
   */
  const delivered = new Set<string>();
  const visitKey = (interaction: Pick<Interaction, 'interactionId' | 'step'>) =>
    `${interaction.interactionId}@${interaction.step}`;
  const streams = new Set<{ res: ServerResponse; execution?: string }>();
  /** The replies streaming in this server's runs, for pages opened mid-reply. */
  const streaming = createStreamingReplies();
  let port = 0;

  // --- cancel --------------------------------------------------------------------------------

  /**
   * Cancels a run (the console's Stop): a run of this server stops at once, one of another process on
   * the data directory at its next look at the cancel mark, a deployed one by StopExecution. What it
   * returns is what `stepthread cancel --json` prints.
   */
  const cancelExecution = async (executionId: string, reason: string | undefined): Promise<CancelJson> => {
    const outcome = await runtime.cancel(executionId, {
      ...(reason === undefined ? {} : { reason }),
      ...(options.deployed ? { stop: stopDeployedExecution(options.deployed.sfn) } : {}),
    });
    if (outcome.status !== 'CANCELLED') {
      throw new ApiError(
        409,
        'RUN_ALREADY_ENDED',
        `execution ${outcome.executionId} ended ${outcome.status} before it could be cancelled`,
      );
    }
    broadcast('execution', { executionId: outcome.executionId, status: 'CANCELLED' });
    return cancelJsonOf(outcome);
  };

  // --- workflows -------------------------------------------------------------------------------

  const loadWorkflows = async (): Promise<LoadedWorkflowFile[]> => {
    const names = (await readdir(workflowsDir)).filter((name) => WORKFLOW_FILE.test(name)).sort();
    return withoutDuplicateIds(await loadFiles(names));
  };

  /**
   * Files sharing a workflow id (a copy of an example beside it, say): one keeps the id — the file
   * named after it, else the first by name — so the original stays runnable whatever is copied next to
   * it; each other one is refused with DUPLICATE_WORKFLOW_ID naming the file that has the id.
   */
  const withoutDuplicateIds = (files: LoadedWorkflowFile[]): LoadedWorkflowFile[] =>
    files.map((entry) => {
      if (entry.id === undefined) return entry;
      const owner = ownerOfId(files, entry.id)!;
      if (owner === entry) return entry;
      const { workflow: _workflow, ...rest } = entry;
      const error = {
        code: 'DUPLICATE_WORKFLOW_ID' as const,
        message: `workflow id ${entry.id} is the id of ${owner.file}, which the console serves under it: give ${entry.file} its own id`,
      };
      return { ...rest, errors: [error, ...entry.errors] };
    });

  const loadFiles = (names: readonly string[]): Promise<LoadedWorkflowFile[]> =>
    Promise.all(
      names.map(async (file): Promise<LoadedWorkflowFile> => {
        const parsed = parseWorkflowText(await readFile(join(workflowsDir, file), 'utf8'), file);
        if (parsed.kind !== 'loaded') {
          return { file, errors: parsed.kind === 'unparsable' ? [parsed.error] : [] };
        }
        const data = parsed.data as { id?: unknown; description?: unknown };
        const result = await checkWorkflow(parsed.data);
        return {
          file,
          ...(typeof data.id === 'string' ? { id: data.id } : {}),
          ...(typeof data.description === 'string' ? { description: data.description } : {}),
          ...(result.workflow && result.errors.length === 0 ? { workflow: result.workflow } : {}),
          errors: result.errors,
        };
      }),
    );

  const findWorkflow = async (id: string): Promise<LoadedWorkflowFile> => {
    const found = ownerOfId(await loadWorkflows(), id);
    if (found === undefined) {
      throw new ApiError(404, 'WORKFLOW_NOT_FOUND', `no workflow ${id} in ${workflowsDir}`);
    }
    return found;
  };

  /** The workflow the folder serves under `id`, and its file's path (what `resume` reads it again from). */
  const validWorkflow = async (id: string): Promise<{ workflow: Workflow; file: string }> => {
    const found = await findWorkflow(id);
    if (found.workflow === undefined) {
      throw new ApiError(
        422,
        found.errors[0]?.code ?? 'SCHEMA_INVALID',
        `workflow ${id} (${found.file}) is not valid`,
        found.errors,
      );
    }
    return { workflow: found.workflow, file: join(workflowsDir, found.file) };
  };

  // --- live events -----------------------------------------------------------------------------

  const broadcast = (type: string, data: Record<string, unknown>): void => {
    const frame = `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const stream of streams) {
      if (stream.execution !== undefined && stream.execution !== data.executionId) continue;
      stream.res.write(frame);
    }
  };
  /** Replies a deployed execution streams, as `token` events like a local run's (remote-replies.ts). */
  const remoteReplies = createRemoteReplies(options.deployed?.replies, streaming, (token) =>
    broadcast('token', { ...token }),
  );

  // --- runs ------------------------------------------------------------------------------------

  const answerSource =
    (executionId: string) =>
    (interaction: Interaction, { signal }: { signal?: AbortSignal }): Promise<InteractionReply | undefined> =>
      new Promise((resolveReply) => {
        const { interactionId } = interaction;
        const settle = (reply: InteractionReply | undefined) => {
          waiters.delete(interactionId);
          resolveReply(reply);
        };
        const answered = () => {
          delivered.add(visitKey(interaction));
          // Bounded: only answers whose commit may still be under way matter.
          if (delivered.size > 1000) delivered.delete(delivered.values().next().value!);
          broadcast('interaction', {
            executionId,
            interactionId,
            nodeId: interaction.nodeId,
            status: 'ANSWERED',
          });
        };
        const waiter: Waiter = {
          interaction,
          answer: (reply) => {
            settle(reply);
            answered();
          },
        };
        waiters.set(interactionId, waiter);
        signal?.addEventListener(
          'abort',
          () => {
            if (waiters.get(interactionId) !== waiter) return;
            settle(undefined);
            // `stepthread respond` in another terminal answered it: the console shows it answered.
            if (signal.reason instanceof AnsweredElsewhere) answered();
          },
          { once: true },
        );
        const at = new Date().toISOString();
        const live = runs.get(executionId)?.nodes;
        live?.set(interaction.nodeId, { status: 'WAITING', at, threadId: interaction.threadId });
        broadcast('interaction', {
          executionId,
          interactionId,
          threadId: interaction.threadId,
          nodeId: interaction.nodeId,
          status: 'PENDING',
        });
        broadcast('node', {
          executionId,
          threadId: interaction.threadId,
          nodeId: interaction.nodeId,
          status: 'WAITING',
          at,
        });
      });

  const track = (
    workflow: Workflow,
    executionId: string,
    rootThreadId: string,
    start: (run: {
      onEvent: (event: LocalEvent) => void;
      answerInteraction: ReturnType<typeof answerSource>;
      onNodeLogs?: (entry: NodeLogsEntry) => void;
      onNodeResult: (entry: NodeResultEntry) => void;
      onReplyText: (entry: ReplyTextEntry) => void;
    }) => Promise<{ status: string; error?: CodedError }>,
    nodeOfState: ReadonlyMap<string, string>,
  ): LiveRun => {
    const nodes: LiveRun['nodes'] = new Map();
    const threads = new Set<string>();
    const followSubgraphs = subgraphFollowerOf(workflow);
    const onEvent = (event: LocalEvent) => {
      const nodeId = event.stateName === undefined ? undefined : nodeOfState.get(event.stateName);
      if (nodeId === undefined) return;
      // START's events carry no envelope: it runs on the run's first thread.
      const threadId = threadIdOfInput(event.input) ?? rootThreadId;
      if (!threads.has(threadId)) {
        threads.add(threadId);
        broadcast('thread', { executionId, threadId, status: 'RUNNING' });
      }
      let status: LiveStatus | undefined;
      if (event.type === 'StateEntered') status = 'RUNNING';
      else if (event.type === 'StateExited') status = 'COMPLETED';
      else if (event.type === 'StateFailed') {
        // A branch that decides its join ends through an error by design.
        status = event.error?.startsWith('stepthread.Join') ? 'COMPLETED' : 'FAILED';
      }
      if (status === undefined) return;
      const previous = nodes.get(nodeId);
      if (previous?.status === 'WAITING' && status === 'RUNNING') return;
      const changes = [
        { nodeId, status },
        ...followSubgraphs({ nodeId, status, threadId }, (id) => nodes.get(id)),
      ];
      for (const change of changes) {
        nodes.set(change.nodeId, { status: change.status, at: event.timestamp, threadId });
        broadcast('node', { executionId, threadId, ...change, at: event.timestamp });
      }
    };
    const run: LiveRun = {
      executionId,
      workflowId: workflow.id,
      rootThreadId,
      startedAt: new Date().toISOString(),
      status: 'RUNNING',
      nodes,
      threads,
      done: Promise.resolve()
        .then(() =>
          start({
            onEvent,
            answerInteraction: answerSource(executionId),
            ...(options.onNodeLogs ? { onNodeLogs: options.onNodeLogs } : {}),
            // Pieces of LLM replies as they stream, until their step commits.
            onReplyText: (entry) => broadcast('token', { ...streaming.add(entry) }),
            onNodeResult: ({ threadId, result }) => streaming.done(executionId, threadId, result.nodeId),
          }),
        )
        .finally(() => streaming.ended(executionId))
        .then(
          (outcome) => {
            run.status = 'DONE';
            if (outcome.error) run.error = outcome.error;
            broadcast('execution', { executionId, workflowId: workflow.id, status: outcome.status });
          },
          (error: unknown) => {
            run.status = 'DONE';
            run.error = httpStatusOf(error).body.error as CodedError;
            broadcast('execution', {
              executionId,
              workflowId: workflow.id,
              status: 'FAILED',
              error: run.error,
            });
          },
        ),
    };
    runs.set(executionId, run);
    broadcast('execution', { executionId, workflowId: workflow.id, status: 'RUNNING' });
    return run;
  };

  const nodeOfStates = (tasks: readonly { stateName: string; nodeId?: string }[]) =>
    new Map(tasks.flatMap((task) => (task.nodeId ? [[task.stateName, task.nodeId] as const] : [])));

  const startRun = async (workflowId: string, input: Record<string, unknown>) => {
    const { workflow, file } = await validWorkflow(workflowId);
    if (options.deployed) return startDeployed(workflow, input, options.deployed);
    refuseMissingApiKeys(workflow);
    const prepared = runtime.prepare(workflow);
    const executionId = randomUUID();
    const rootThreadId = rootThreadIdFor(executionId);
    const now = new Date().toISOString();
    await recordLocalRun(options.clients, { executionId, workflow, file, input, now });
    track(
      workflow,
      executionId,
      rootThreadId,
      // A module tool's relative path is resolved from the workflow file's folder, as in `run`.
      (hooks) => prepared.run(input, { executionId, workflowDir: workflowsDir, ...hooks }),
      nodeOfStates(prepared.tasks),
    );
    return { executionId, threadId: rootThreadId, workflowId };
  };

  /**
   * The stack's state machines, listed at most once a minute: they change only when the stack is
   * deployed, and the console asks for the executions list every few seconds. A workflow not found in
   * the list reads it again (it may have just been deployed).
   */
  let machines: { readonly at: number; readonly list: Promise<DeployedStateMachine[]> } | undefined;
  const stackMachines = (stack: DeployedStack, fresh = false): Promise<DeployedStateMachine[]> => {
    if (fresh || machines === undefined || Date.now() - machines.at > STATE_MACHINES_TTL_MS) {
      const list = deployedStateMachines(stack.sfn, stack.prefix);
      const entry = { at: Date.now(), list };
      machines = entry;
      // A failed listing is not kept: the next request tries again.
      list.catch(() => {
        if (machines === entry) machines = undefined;
      });
    }
    return machines.list;
  };
  const machineArnOf = async (stack: DeployedStack, workflowId: string): Promise<string | undefined> => {
    const known = (await stackMachines(stack)).find((machine) => machine.workflowId === workflowId);
    if (known) return known.stateMachineArn;
    return (await stackMachines(stack, true)).find((machine) => machine.workflowId === workflowId)
      ?.stateMachineArn;
  };

  /** A run on the deployed stack: StartExecution, then its status is read again until it ends. */
  const startDeployed = async (workflow: Workflow, input: Record<string, unknown>, stack: DeployedStack) => {
    const stateMachineArn = await machineArnOf(stack, workflow.id);
    if (stateMachineArn === undefined) {
      throw new ApiError(
        404,
        'WORKFLOW_NOT_FOUND',
        `no state machine ${stack.prefix}-${workflow.id} on the stack: deploy the workflow first`,
      );
    }
    const name = randomUUID();
    const checked = await claimCheck(stores.values, input);
    // On the `live` alias: the run is pinned to the version of the latest deploy.
    const started = await startOnLiveAlias(stack.sfn, {
      stateMachineArn,
      name,
      input: JSON.stringify({ input: checked }),
    });
    const executionId = started.executionArn ?? executionArnOf(stateMachineArn, name);
    const run = trackDeployed(executionId, workflow.id, rootThreadIdFor(executionId), stack);
    return run.started;
  };

  /** A run started on the stack, followed (DescribeExecution) until it ends. */
  const trackDeployed = (
    executionId: string,
    workflowId: string,
    rootThreadId: string,
    stack: DeployedStack,
  ) => {
    let finish: () => void = () => {};
    const run: LiveRun = {
      executionId,
      workflowId,
      rootThreadId,
      startedAt: new Date().toISOString(),
      status: 'RUNNING',
      nodes: new Map(),
      threads: new Set(),
      done: new Promise<void>((resolveDone) => {
        finish = resolveDone;
      }),
    };
    runs.set(executionId, run);
    watchRemote(executionId, stack, () => {
      run.status = 'DONE';
      finish();
    });
    broadcast('execution', { executionId, workflowId, status: 'RUNNING' });
    const consoleUrl = stepFunctionsConsoleUrl(executionId);
    return {
      done: run.done,
      started: { executionId, threadId: rootThreadId, workflowId, ...(consoleUrl ? { consoleUrl } : {}) },
    };
  };

  /**
   * A copied thread started on the stack (the console's "run the copy" over `dev --target aws`): on its
   * workflow's state machine, through the definition's entry, as `start --thread` does.
   */
  const startDeployedThread = async (threadId: string, stack: DeployedStack) => {
    const { thread } = await stores.threads.getThread(threadId);
    // Refused here (finished, a fork branch, started already), before anything starts.
    runnableStartOf(thread);
    const stateMachineArn = await machineArnOf(stack, thread.workflowId);
    if (stateMachineArn === undefined) {
      throw new ApiError(
        404,
        'WORKFLOW_NOT_FOUND',
        `no state machine ${stack.prefix}-${thread.workflowId} on the stack: deploy the workflow first`,
      );
    }
    const started = await startCopyOnStack(stack.sfn, {
      stateMachineArn,
      thread,
      name: randomUUID(),
      nodeTables: stackNodeTables(options.clients),
    });
    return trackDeployed(started.executionArn, thread.workflowId, thread.id, stack);
  };

  /**
   * Deployed executions in flight that this server started or a page showed: there are no local
   * events for them, so each poll (DescribeExecution) tells the pages to read again, until the end.
   */
  const remote = new Map<string, () => void>();
  let polling: ReturnType<typeof setInterval> | undefined;
  let pollingNow = false;
  const watchRemote = (executionId: string, stack: DeployedStack, done?: () => void) => {
    if (remote.has(executionId)) return;
    // Only runs shown on a page are capped: a run started here must be seen to end (close waits for it).
    if (done === undefined && remote.size >= MAX_WATCHED_EXECUTIONS) return;
    remote.set(executionId, done ?? (() => {}));
    remoteReplies.follow(executionId);
    polling ??= setInterval(() => void pollRemote(stack), stack.pollMs ?? 2000);
    polling.unref();
  };
  const pollRemote = async (stack: DeployedStack) => {
    // A slow round (many watched, a slow endpoint) is not overlapped by the next one.
    if (pollingNow) return;
    pollingNow = true;
    try {
      for (const [executionId, done] of remote) {
        const [described, record] = await Promise.all([
          describeDeployedExecution(stack.sfn, executionId).catch(() => undefined),
          getExecutionRecord(executionId).catch(() => undefined),
        ]);
        const status = described
          ? combinedStatus(record?.status, described.status)
          : (record?.status ?? 'RUNNING');
        broadcast('execution', { executionId, workflowId: record?.workflowId, status });
        if (status !== 'RUNNING') {
          remote.delete(executionId);
          remoteReplies.stop(executionId);
          done();
        }
      }
    } finally {
      pollingNow = false;
    }
  };

  /** Threads a run was started on here and has not ended: a second start (a double click) is refused. */
  const startedThreads = new Set<string>();
  const runThread = async (threadId: string) => {
    // Checked and marked before any await, so two requests at once cannot both pass.
    if (startedThreads.has(threadId)) {
      throw new StepthreadError('INVALID_STATUS_TRANSITION', `thread ${threadId} is being run already`);
    }
    startedThreads.add(threadId);
    try {
      const run = await startThreadRun(threadId);
      void run.done.finally(() => startedThreads.delete(threadId));
      return run.started;
    } catch (error) {
      startedThreads.delete(threadId);
      throw error;
    }
  };
  const startThreadRun = async (threadId: string) => {
    if (options.deployed) return startDeployedThread(threadId, options.deployed);
    const { thread } = await stores.threads.getThread(threadId);
    // Refused here (finished, a fork branch, started already), before anything is tracked, so the
    // caller gets a 409 rather than a failed run.
    const startNodeId = runnableStartOf(thread);
    const valid = await validWorkflow(thread.workflowId);
    const { file } = valid;
    // A copy made with node config or profile edits runs the workflow with them.
    const workflow = workflowForThread(valid.workflow, thread);
    refuseMissingApiKeys(workflow);
    const prepared = runtime.prepare(workflow, { startNodeId });
    const executionId = randomUUID();
    // As `run` does: should this process stop, `runs` shows the run INTERRUPTED and `resume` goes on.
    await recordLocalRun(options.clients, { executionId, workflow, file, now: new Date().toISOString() });
    const run = track(
      workflow,
      executionId,
      threadId,
      (hooks) => prepared.runThread(threadId, { executionId, workflowDir: workflowsDir, ...hooks }),
      nodeOfStates(prepared.tasks),
    );
    return { done: run.done, started: { executionId, threadId, workflowId: workflow.id } };
  };

  /**
   * Resumes an interrupted local run here (the console's Resume), as `stepthread resume` does: the
   * execution in flight runs again under its own id, committed steps replay from their records, and
   * the question it stopped at is asked again in the page (answers it was started with come first).
   */
  const resumeRun = async (executionId: string) => {
    if (options.deployed) {
      throw new StepthreadError(
        'INVALID_STATE_MACHINE',
        'a deployed run is never interrupted (its state machine runs it): the console resumes local runs only',
      );
    }
    const asked = await getLocalRun(options.clients, executionId);
    const plan = await runtime.resumePlanOf(
      executionId,
      asked ? { workflowId: asked.workflowId } : undefined,
    );
    const local = (await latestLocalRun(options.clients, plan.chain)) ?? asked;
    const held =
      plan.executionId === executionId ? asked : await getLocalRun(options.clients, plan.executionId);
    // A run of this server, or of another live process, is not interrupted.
    for (const record of [local, held]) {
      if (record !== undefined && isRunnerAlive(record)) throw executionBusy(record.executionId, record);
    }
    const details = local ? await detailsOfRun(options.clients, local) : {};
    const { workflow } = details;
    if (workflow === undefined) {
      throw new StepthreadError(
        'RUN_NOT_RESUMABLE',
        `execution ${plan.executionId} has no local record of its workflow; resume it with stepthread resume --workflow <file>`,
      );
    }
    refuseOtherWorkflow(executionId, plan, workflow.id);
    refuseMissingApiKeys(workflow);
    const threshold = local?.continueAfterEvents;
    const prepared = runtime.prepare(workflow, {
      ...(plan.startNodeId === undefined ? {} : { startNodeId: plan.startNodeId }),
      ...(threshold === undefined ? {} : { continueAfterEvents: threshold }),
    });
    await recordLocalRun(options.clients, {
      executionId: plan.executionId,
      workflow,
      ...(local?.file === undefined ? {} : { file: local.file }),
      ...(details.answers === undefined ? {} : { answers: details.answers }),
      ...(details.input === undefined ? {} : { input: details.input }),
      ...(threshold === undefined ? {} : { continueAfterEvents: threshold }),
      now: new Date().toISOString(),
      takingOver: { held },
    });
    const recorded = details.answers === undefined ? undefined : fileAnswers(details.answers);
    track(
      workflow,
      plan.executionId,
      plan.rootThreadId,
      (hooks) =>
        prepared.resume(
          plan.executionId,
          {
            workflowDir: local?.file === undefined ? workflowsDir : dirname(local.file),
            ...hooks,
            ...(recorded ? { answerInteraction: firstAnswer(recorded, hooks.answerInteraction) } : {}),
          },
          details.input,
        ),
      nodeOfStates(prepared.tasks),
    );
    return { executionId: plan.executionId, threadId: plan.rootThreadId, workflowId: workflow.id };
  };

  /** The workflow a thread ran: its run's record, else the folder's file of its id. */
  const workflowOfThread = async (thread: Thread): Promise<Workflow | undefined> => {
    const executionId = thread.metadata.executionId;
    const recorded = typeof executionId === 'string' ? await definitionOf(executionId) : undefined;
    return recorded?.workflow ?? ownerOfId(await loadWorkflows(), thread.workflowId)?.workflow;
  };

  // --- reads -----------------------------------------------------------------------------------

  const getExecutionRecord = async (executionId: string): Promise<ExecutionRecord | undefined> => {
    try {
      return await stores.executions.getExecution(executionId);
    } catch (error) {
      if (error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND') return undefined;
      throw error;
    }
  };

  /** The executions of the folder's workflows (or one of them), newest first. */
  const listExecutions = async (workflowFilter?: string) => {
    const ids = workflowFilter
      ? [workflowFilter]
      : [...new Set((await loadWorkflows()).flatMap((entry) => (entry.id ? [entry.id] : [])))];
    const rows = options.deployed ? await deployedRows(ids, options.deployed) : await localRows(ids);
    const byId = new Set(rows.map((row) => row.executionId));
    // Runs started a moment ago may not be indexed yet.
    for (const run of runs.values()) {
      if (byId.has(run.executionId) || (workflowFilter && run.workflowId !== workflowFilter)) continue;
      rows.push({
        executionId: run.executionId,
        workflowId: run.workflowId,
        rootThreadId: run.rootThreadId,
        status: run.status === 'RUNNING' ? 'RUNNING' : 'FAILED',
        startTime: run.startedAt,
      });
    }
    rows.sort((a, b) => b.startTime.localeCompare(a.startTime));
    return rows;
  };

  /** The newest 200 of each workflow from the table's index. */
  const localRows = async (workflowIds: readonly string[]): Promise<ExecutionRow[]> => {
    const records = (
      await Promise.all(
        workflowIds.map((id) => stores.executions.listExecutions(id, { limit: 200, newestFirst: true })),
      )
    ).flat();
    const byId = new Map(records.map((record) => [record.executionId, record]));
    return Promise.all([...byId.values()].map((record) => withInterruption(record, executionRow(record))));
  };

  /**
   * A local run left RUNNING by a process that is gone (a `dev` or `run` stopped with Ctrl-C, or
   * killed) never ends by itself: it is INTERRUPTED, as `stepthread runs` shows it, with the command
   * that resumes it. A run of this server never is.
   */
  const withInterruption = async (record: ExecutionRecord, row: ExecutionRow): Promise<ExecutionRow> => {
    if (row.status !== 'RUNNING') return row;
    const resume = await resumeOfInterrupted(record);
    return resume === undefined ? row : { ...row, status: 'INTERRUPTED', resume };
  };

  /** The command that resumes a run whose process is gone; undefined for any other run. */
  const resumeOfInterrupted = async (record: ExecutionRecord): Promise<string | undefined> => {
    if (options.deployed || runs.has(record.executionId)) return undefined;
    const gone = await runnerGone(record, {
      localOf: (id) => getLocalRun(options.clients, id),
      executionOf: getExecutionRecord,
    });
    if (!gone) return undefined;
    // With `--answers` for the questions it stopped at, as `stepthread runs` gives it.
    const waiting = await interactions.listOpenOfExecution(record.executionId);
    return resumeCommand(record.executionId, waiting, options.commandForm ?? PLAIN_COMMAND_FORM);
  };

  /** The newest 200 from Step Functions, with what the table adds (`stepthread runs --stack` alike). */
  const deployedRows = async (
    workflowIds: readonly string[],
    stack: DeployedStack,
  ): Promise<ExecutionRow[]> => {
    const { runs: listed } = await listDeployedRuns({
      sfn: stack.sfn,
      stateMachines: await stackMachines(stack),
      executions: stores.executions,
      prefix: stack.prefix,
      workflowIds,
      limit: 200,
    });
    return listed.map((run) => deployedRow(run));
  };

  const deployedRow = (run: DeployedRun): ExecutionRow => ({
    executionId: run.executionId,
    workflowId: run.workflowId,
    ...(run.rootThreadId ? { rootThreadId: run.rootThreadId } : {}),
    status: run.status,
    stepFunctionsStatus: run.stepFunctionsStatus,
    startTime: run.startTime,
    ...(run.endTime ? { endTime: run.endTime } : {}),
    ...(run.endTime ? { durationMs: Date.parse(run.endTime) - Date.parse(run.startTime) } : {}),
    ...(run.continuedFrom ? { continuedFrom: run.continuedFrom } : {}),
    ...(run.continuedAs ? { continuedAs: run.continuedAs } : {}),
    ...(run.consoleUrl ? { consoleUrl: run.consoleUrl } : {}),
  });

  /**
   * An execution's row from its record; on a deployed stack with what Step Functions says of it
   * (status where the table does not know the outcome, its start and stop dates).
   */
  const executionRow = (record: ExecutionRecord, described?: DescribedExecution): ExecutionRow => {
    const live = runs.get(record.executionId);
    const status = described
      ? combinedStatus(record.status, described.status)
      : live?.status === 'RUNNING'
        ? 'RUNNING'
        : record.status;
    const startTime = described?.startDate ?? record.startTime;
    const endTime = described?.stopDate ?? (status === 'RUNNING' ? undefined : record.endTime);
    const consoleUrl = stepFunctionsConsoleUrl(record.executionId);
    return {
      executionId: record.executionId,
      workflowId: record.workflowId,
      rootThreadId: record.rootThreadId,
      status,
      ...(described ? { stepFunctionsStatus: described.status } : {}),
      startTime,
      ...(endTime ? { endTime, durationMs: Date.parse(endTime) - Date.parse(startTime) } : {}),
      ...(record.continuedFrom ? { continuedFrom: record.continuedFrom } : {}),
      ...(record.continuedAs ? { continuedAs: record.continuedAs } : {}),
      ...(consoleUrl ? { consoleUrl } : {}),
    };
  };

  /** An execution Step Functions knows and the table does not (START never ran). */
  const describedRow = (described: DescribedExecution, workflowId: string): ExecutionRow => {
    const consoleUrl = stepFunctionsConsoleUrl(described.executionArn);
    return {
      executionId: described.executionArn,
      workflowId,
      status: combinedStatus(undefined, described.status),
      stepFunctionsStatus: described.status,
      startTime: described.startDate,
      ...(described.stopDate
        ? {
            endTime: described.stopDate,
            durationMs: Date.parse(described.stopDate) - Date.parse(described.startDate),
          }
        : {}),
      ...(consoleUrl ? { consoleUrl } : {}),
    };
  };

  /** Step Functions' view of a deployed execution, with its Task states mapped to the folder's nodes. */
  const taskNodes = new Map<string, ReadonlyMap<string, string>>();
  const deployedViewOf = async (
    executionId: string,
    workflowId: string | undefined,
    stack: DeployedStack,
  ) => {
    const id = workflowId ?? workflowIdOfExecutionArn(executionId, stack.prefix);
    const workflow = id === undefined ? undefined : ownerOfId(await loadWorkflows(), id)?.workflow;
    const nodeOfState = workflow ? taskNodesOf(taskNodes, workflow) : new Map<string, string>();
    const found = await stepFunctionsViewOf(stack.sfn, executionId, nodeOfState);
    return found === undefined ? undefined : { ...found, workflowId: id ?? 'unknown', workflow };
  };

  /** Each thread's node runs, folded from its steps committed since the page last showed it. */
  const nodeRuns = createNodeRunsCache(stores.threads, LATEST_STEPS);

  /**
   * The threads of an execution's run with their latest node runs, as `inspect --json` reports them
   * but without conversations (the page reads one when it shows it), and each thread's runs per node
   * (`byNode`, counted whole). A thread's step records are read once, all threads in parallel; a
   * refresh reads only the steps committed since (cli/dev/node-runs-cache.ts).
   */
  const executionReport = async (
    record: ExecutionRecord,
    pathOrder: ReadonlyMap<string, number>,
  ): Promise<{
    rootThreadId?: string;
    executions?: { executionId: string; status: string }[];
    threads: ThreadReport[];
    byNode: NodeRunsSummary['byNode'][];
    heads: Thread[];
    /** What the run costs on AWS, deployed (cli/aws-cost.ts), from the same folds. */
    awsCost?: AwsCost;
  }> => {
    const chain = await executionChain(stores.executions, record);
    let listed = (await threadsOfChain(stores.threads, chain)).map((entry) => entry.thread);
    // The index is eventually consistent: make sure the root is there.
    if (!listed.some((thread) => thread.id === record.rootThreadId)) {
      try {
        listed.unshift((await stores.threads.getThread(record.rootThreadId)).thread);
      } catch (error) {
        // START creates the root thread: a run that just started may have none yet.
        if (!(error instanceof StepthreadError && error.code === 'THREAD_NOT_FOUND')) throw error;
      }
    }
    const rootId = record.rootThreadId;
    listed = inForkOrder(listed, rootId, pathOrder);
    const summaries = await Promise.all(listed.map((thread) => nodeRuns.nodeRunsOf(thread)));
    const threads = listed.map((thread, i): ThreadReport => {
      const { metadata } = thread;
      const { latest, total } = summaries[i]!;
      return {
        threadId: thread.id,
        ...(metadata.parentThreadId ? { parentThreadId: metadata.parentThreadId } : {}),
        ...(metadata.forkPathId ? { forkPathId: metadata.forkPathId } : {}),
        ...(metadata.copiedFrom ? { copiedFrom: metadata.copiedFrom } : {}),
        // A copy's edits, as `inspect --json` gives them: its page lists them.
        ...(copyEditsOf(thread).length > 0 ? { edits: copyEditsOf(thread) } : {}),
        status: thread.status,
        ...(thread.currentNodeId ? { currentNodeId: thread.currentNodeId } : {}),
        startTime: thread.startTime,
        ...(thread.endTime ? { endTime: thread.endTime } : {}),
        errors: thread.errors,
        // Its latest runs only: a long thread's page would otherwise list thousands.
        nodes: latest,
        children: listed
          .filter((other) => other.metadata.parentThreadId === thread.id && other.metadata.forkPathId)
          .map((other) => other.id),
        ...(total > latest.length ? { earlierRuns: total - latest.length } : {}),
      };
    });
    const root = listed.find((thread) => thread.id === rootId);
    const own = root && new Set(threadsOfRun(root, listed).map((thread) => thread.id));
    const nodes = new Map<string, NodeMeters>();
    for (const [i, thread] of listed.entries()) {
      if (!own?.has(thread.id)) continue;
      for (const meters of summaries[i]!.meters)
        nodes.set(meters.nodeId, addMeters(nodes.get(meters.nodeId), meters));
    }
    const ownThreads = listed.filter((thread) => own?.has(thread.id));
    return {
      rootThreadId: rootId,
      ...(chain.length > 1
        ? { executions: chain.map(({ executionId, status }) => ({ executionId, status })) }
        : {}),
      threads,
      byNode: summaries.map((summary) => summary.byNode),
      heads: listed,
      ...(root
        ? { awsCost: estimateAwsCost(runMeters(root, ownThreads, [...nodes.values()], chain.length)) }
        : {}),
    };
  };

  /** The workflow an execution ran, from its local run record (kept once read: it never changes). */
  const definitions = new Map<string, { workflow: Workflow; graph: GraphView }>();
  const definitionOf = async (executionId: string) => {
    const known = definitions.get(executionId);
    if (known) return known;
    const local = await getLocalRun(options.clients, executionId);
    const workflow = local ? (await detailsOfRun(options.clients, local)).workflow : undefined;
    if (workflow === undefined) return undefined;
    const definition = { workflow, graph: graphViewOf(workflow) };
    definitions.set(executionId, definition);
    if (definitions.size > 200) definitions.delete(definitions.keys().next().value!);
    return definition;
  };

  const executionPage = async (executionId: string) => {
    const record = await getExecutionRecord(executionId);
    const live = runs.get(executionId);
    const deployed = options.deployed
      ? await deployedViewOf(executionId, record?.workflowId ?? live?.workflowId, options.deployed)
      : undefined;
    if (record === undefined && live === undefined && deployed === undefined) {
      throw new StepthreadError('EXECUTION_NOT_FOUND', `no execution ${executionId}`);
    }
    const definition = options.deployed ? undefined : await definitionOf(executionId);
    // Fork children are listed in their FORK's path order: the graph the run ran says it.
    const forks = (definition?.graph ?? (deployed?.workflow ? graphViewOf(deployed.workflow) : undefined))
      ?.forks;
    const report =
      record === undefined
        ? { threads: [], byNode: [], heads: [] }
        : await executionReport(record, pathOrderOf(forks ?? []));
    let nodeStatus: Record<string, NodeStatus> = {};
    // Each node as its latest run left it (the last thread that ran it: threads taken in the order
    // they started), with every run counted.
    const byStartTime = [...report.threads.keys()].sort(
      (a, b) =>
        Number(report.threads[b]!.threadId === report.rootThreadId) -
          Number(report.threads[a]!.threadId === report.rootThreadId) ||
        report.threads[a]!.startTime.localeCompare(report.threads[b]!.startTime),
    );
    for (const index of byStartTime) {
      const thread = report.threads[index]!;
      for (const [nodeId, { runs, last, usage, toolCalls }] of report.byNode[index]!) {
        const before = nodeStatus[nodeId]?.usage;
        const used = usage === undefined ? before : addUsage(before, usage);
        const calledBefore = nodeStatus[nodeId]?.toolCalls;
        const called = toolCalls === undefined ? calledBefore : addToolCalls(calledBefore, toolCalls);
        const awsUsd = report.awsCost?.byNode[nodeId];
        nodeStatus[nodeId] = {
          status: last.status,
          ...(last.durationMs === undefined ? {} : { durationMs: last.durationMs }),
          attempt: last.attempt,
          runs: (nodeStatus[nodeId]?.runs ?? 0) + runs,
          threadId: thread.threadId,
          ...(used === undefined ? {} : { usage: used }),
          ...(called === undefined ? {} : { toolCalls: called }),
          ...(awsUsd === undefined ? {} : { awsUsd }),
        };
      }
    }
    if (live?.status === 'RUNNING') {
      for (const [nodeId, state] of live.nodes) {
        if (state.status === 'RUNNING' || state.status === 'WAITING') {
          nodeStatus[nodeId] = {
            ...(nodeStatus[nodeId] ?? { runs: 0 }),
            status: state.status,
            ...(state.threadId ? { threadId: state.threadId } : {}),
          };
        }
      }
    }
    if (deployed) nodeStatus = withStateRuns(nodeStatus, deployed.view.states);
    const pending = await openInteractions(interactions, executionId, stores.executions);
    // A question asked and not answered: its node waits, whatever the live events said last.
    for (const interaction of pending) {
      nodeStatus[interaction.nodeId] = {
        ...(nodeStatus[interaction.nodeId] ?? { runs: 0 }),
        status: 'WAITING',
        threadId: interaction.threadId,
      };
    }
    const workflowId = record?.workflowId ?? live?.workflowId ?? deployed!.workflowId;
    const threadIds = new Set(report.threads.map((thread) => thread.threadId));
    const copies = await copiesOf(workflowId, threadIds);
    let execution: ExecutionRow;
    if (record) execution = await withInterruption(record, executionRow(record, deployed?.described));
    else if (deployed) execution = describedRow(deployed.described, workflowId);
    else execution = { executionId, workflowId, status: 'RUNNING', startTime: live!.startedAt };
    // Shown while it runs: the page follows it as it would a run of this server.
    if (options.deployed && execution.status === 'RUNNING') watchRemote(executionId, options.deployed);
    let { threads } = report;
    if (execution.status === 'INTERRUPTED') {
      const graph = definition ? buildGraph(definition.workflow) : undefined;
      ({ threads, nodeStatus } = asInterrupted(graph, threads, report.heads, nodeStatus));
    }
    return {
      execution,
      ...(deployed ? { stepFunctions: deployed.view } : {}),
      ...(definition ? { definition } : {}),
      workflowId,
      ...(live?.error ? { error: live.error } : await failureOf(execution, report.heads, runtime)),
      rootThreadId: report.rootThreadId ?? live?.rootThreadId,
      ...(report.executions ? { executions: report.executions } : {}),
      // What the whole run spent, and its budget (all threads and executions of it).
      ...(report.rootThreadId === undefined
        ? {}
        : { cost: runCostOf(await stores.spend?.get(report.rootThreadId)) }),
      // Its AWS side deployed, estimated from its steps (each node's share in nodeStatus).
      ...(report.awsCost ? { awsCost: report.awsCost } : {}),
      // Counted whole in nodeStatus, but a long thread's page lists only its latest runs.
      threads,
      nodeStatus,
      pending: pending.map((interaction) =>
        interactionJson(
          interaction,
          options.deployed !== undefined || waiters.has(interaction.interactionId),
        ),
      ),
      copies,
      // A run of this server's: the LLM replies streaming now, as far as they came (`seq` orders them
      // with the token events).
      ...(live?.status === 'RUNNING' || remoteReplies.following(executionId)
        ? { streaming: streaming.snapshot(executionId) }
        : {}),
    };
  };

  /** Executions of the workflow whose root thread is a copy of one of `threadIds`. */
  const copiesOf = async (workflowId: string, threadIds: ReadonlySet<string>) => {
    if (threadIds.size === 0) return [];
    const records = await stores.executions.listExecutions(workflowId, { limit: 200, newestFirst: true });
    const roots = await stores.threads.getThreads([...new Set(records.map((r) => r.rootThreadId))]);
    const copied = new Map(
      roots
        .filter(({ thread }) => thread.metadata.copiedFrom && threadIds.has(thread.metadata.copiedFrom))
        .map(({ thread }) => [thread.id, thread]),
    );
    return Promise.all(
      records
        .filter((record) => copied.has(record.rootThreadId))
        .map(async (record) => ({
          threadId: record.rootThreadId,
          copiedFrom: copied.get(record.rootThreadId)!.metadata.copiedFrom!,
          executionId: record.executionId,
          status:
            runs.get(record.executionId)?.status === 'RUNNING'
              ? 'RUNNING'
              : (await resumeOfInterrupted(record)) === undefined
                ? record.status
                : 'INTERRUPTED',
        })),
    );
  };

  const threadJson = async (thread: Thread) => {
    const hydrated = (
      await hydrateAll(stores.values, [
        { input: thread.input, output: thread.output, variables: thread.variables },
      ])
    ).data[0]!;
    return {
      threadId: thread.id,
      workflowId: thread.workflowId,
      status: thread.status,
      ...(thread.currentNodeId ? { currentNodeId: thread.currentNodeId } : {}),
      step: thread.step ?? 0,
      startTime: thread.startTime,
      ...(thread.endTime ? { endTime: thread.endTime } : {}),
      metadata: thread.metadata,
      input: hydrated.input,
      ...(hydrated.output === undefined ? {} : { output: hydrated.output }),
      variables: hydrated.variables,
      errors: thread.errors,
      tokenUsage: thread.conversation.tokenUsage ?? null,
    };
  };

  interface ConversationAt {
    threadId: string;
    step: number;
    stepCount: number;
    messages: Message[];
    variables: unknown;
  }
  const conversationAt = async (
    threadId: string,
    stepParam: string | null,
    /** Read as a copy's source: a pruned thread its copies still read is found too. */
    asSource = false,
  ): Promise<ConversationAt> => {
    const { thread } = await (asSource
      ? stores.threads.getCopySource(threadId)
      : stores.threads.getThread(threadId));
    const stepCount = thread.step ?? 0;
    const step = stepParam === null ? stepCount : Number(stepParam);
    if (!Number.isInteger(step) || step < 0) throw badRequest('"step" must be a whole number ≥ 0');
    if (step === 0 && stepCount > 0) {
      // Before its first step: a copy holds its source's state at the copy, a fork child its
      // parent's conversation after the FORK's step (which its join key names), a root thread nothing.
      const { parentThreadId, joinKey } = thread.metadata;
      const forkStep = typeof joinKey === 'string' ? forkStepOfJoinKey(joinKey) : undefined;
      const from =
        copySourceOf(thread) ??
        (typeof parentThreadId === 'string' && forkStep !== undefined
          ? { threadId: parentThreadId, step: forkStep }
          : undefined);
      if (from === undefined) return { threadId, step, stepCount, messages: [], variables: null };
      const source = await conversationAt(from.threadId, String(from.step), true);
      return { ...source, threadId, step, stepCount };
    }
    // As the thread was after step `step`: before step `step + 1` ran.
    const at =
      step < stepCount ? (await threadBefore(stores.threads, thread, { step: step + 1 })).thread : thread;
    const messages = await runtime.conversationOf(at);
    const variables = (await hydrateAll(stores.values, [{ variables: at.variables }])).data[0]!.variables;
    return { threadId, step: Math.min(step, stepCount), stepCount, messages, variables };
  };

  /**
   * A thread's step records: `from`–`to`, or by default its latest `limit` (LATEST_STEPS), so a
   * thread of thousands of steps answers a page; `from` in the answer says where it starts.
   */
  const stepsOf = async (threadId: string, range: { from?: number; to?: number; limit?: number }) => {
    const { thread } = await stores.threads.getThread(threadId);
    const stepCount = thread.step ?? 0;
    const from = range.from ?? firstOfLatest(stepCount, range);
    const to = Math.min(range.to ?? Number.POSITIVE_INFINITY, stepCount);
    // Nothing there (a copy that has not run: its steps so far are its source's; a range past the
    // end) reads nothing: a Query from a step to an earlier one is refused by DynamoDB.
    const records = from > to ? [] : await stores.threads.readSteps(threadId, { from, to });
    // Outputs and console output stored by reference (large values) are read back: one parallel
    // round of reads.
    const outputs = (
      await hydrateAll(
        stores.values,
        records.map(({ result }) => ({
          output: result.output,
          ...(result.logs === undefined ? {} : { logs: result.logs }),
        })),
      )
    ).data;
    return {
      threadId,
      stepCount,
      from,
      steps: records.map((record, index) => {
        const output = outputs[index]?.output;
        const logs = outputs[index]?.logs;
        const usage = (record.state?.conversation as { tokenUsage?: unknown } | undefined)?.tokenUsage;
        return {
          step: record.step,
          nodeId: record.result.nodeId,
          nodeType: record.result.nodeType,
          status: record.result.status,
          startedAt: record.result.startedAt,
          endedAt: record.result.endedAt,
          durationMs: Date.parse(record.result.endedAt) - Date.parse(record.result.startedAt),
          attempt: record.result.attempt ?? 1,
          ...(output === undefined ? {} : { output }),
          ...(logs === undefined ? {} : { logs }),
          ...(record.result.error ? { error: record.result.error } : {}),
          ...(record.state?.variables ? { variables: record.state.variables } : {}),
          ...(usage ? { tokenUsage: usage } : {}),
          ...(record.result.usage ? { usage: record.result.usage } : {}),
          // An LLM step's tool calls, and how many the model was shown an error for.
          ...(record.result.toolCalls ? { toolCalls: record.result.toolCalls } : {}),
          events: record.events.map((event) => event.type),
        };
      }),
    };
  };

  /**
   * A thread's events: by default those of its latest LATEST_STEPS steps (`limit`), with `from` those
   * of its steps from that one on; from step 1, all of them (a copy's source's too), as before. The
   * events recorded outside steps (status changes) are always there. Only those steps' records are read.
   */
  const eventsOf = async (threadId: string, range: { from?: number; limit?: number }) => {
    const { thread } = await stores.threads.getThread(threadId);
    const stepCount = thread.step ?? 0;
    const from = range.from ?? firstOfLatest(stepCount, range);
    // Positions count a copy's source's steps first: the thread's own step `from` is past them.
    const journal = await stores.threads.readJournal(
      threadId,
      from <= 1 ? {} : { window: (length) => [{ from: length - stepCount + from, to: length }] },
    );
    return { threadId, stepCount, from: Math.max(from, 1), events: journal.events };
  };

  // --- HTTP ------------------------------------------------------------------------------------

  const readJson = async (req: IncomingMessage): Promise<unknown> => {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        throw new ApiError(413, 'API_PAYLOAD_TOO_LARGE', `the body is over ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    if (size === 0) return {};
    if (type !== 'application/json') {
      throw new ApiError(415, 'API_UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw badRequest(`the body is not valid JSON: ${(error as Error).message}`);
    }
    // What `run` refuses in --input and --answers, refused here too (the body wraps the value once).
    const inexact = inexactNumberIn(text);
    if (inexact !== undefined) {
      throw new ApiError(
        400,
        'INPUT_NUMBER_INEXACT',
        `the body holds the number ${inexact}, which a JSON number (a double) cannot hold exactly (an integer beyond 2^53, a number beyond ±1.8e308, or a non-zero one below 5e-324, which becomes 0); send it as a string`,
      );
    }
    if (valueDepth(body, MAX_VALUE_DEPTH + 1) > MAX_VALUE_DEPTH + 1) {
      throw new ApiError(
        400,
        'VALUE_TOO_DEEP',
        `the body's value nests arrays and objects more than ${MAX_VALUE_DEPTH} levels deep`,
      );
    }
    return body;
  };

  const hostAllowed = (req: IncomingMessage): boolean => {
    if (!LOOPBACK.has(host)) return true;
    const hostHeader = req.headers.host ?? '';
    const name = hostHeader.replace(/:\d+$/, '');
    return LOOPBACK.has(name) && hostHeader.endsWith(`:${port}`);
  };

  /** A write must come from this server's own pages (or a client that sends no Origin, like curl). */
  const checkWriteOrigin = (req: IncomingMessage): void => {
    const origin = req.headers.origin;
    const site = req.headers['sec-fetch-site'];
    const own = origin === undefined || [...LOOPBACK].some((name) => origin === `http://${name}:${port}`);
    if (!own || (site !== undefined && site !== 'same-origin' && site !== 'none')) {
      throw new ApiError(403, 'API_FORBIDDEN_ORIGIN', `writes from ${origin ?? site} are refused`);
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      throw new ApiError(415, 'API_UNSUPPORTED_MEDIA_TYPE', 'send writes as application/json');
    }
  };

  const send = (res: ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.end(text);
  };

  /** A step number or count in the query (`?from=3`): a whole number ≥ 1, or absent. */
  const stepParam = (url: URL, name: string): number | undefined => {
    const raw = url.searchParams.get(name);
    if (raw === null) return undefined;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < 1 || !Number.isSafeInteger(value)) {
      throw badRequest(`"${name}" must be a whole number ≥ 1 (given ${JSON.stringify(raw)})`);
    }
    return value;
  };

  /** `?from=&to=&limit=` of a thread's steps; a range that ends before it starts is refused. */
  const stepRange = (url: URL) => {
    const range = { from: stepParam(url, 'from'), to: stepParam(url, 'to'), limit: stepParam(url, 'limit') };
    if (range.from !== undefined && range.to !== undefined && range.from > range.to) {
      throw badRequest(`"from" (${range.from}) is after "to" (${range.to}): give from ≤ to`);
    }
    return range;
  };

  type Handler = (req: IncomingMessage, url: URL, params: string[]) => Promise<[number, unknown]>;
  const routes: { method: string; path: RegExp; handler: Handler }[] = [];
  const route = (method: string, path: string, handler: Handler) => {
    const pattern = new RegExp(`^${path.replaceAll(':id', '([^/]+)')}$`);
    routes.push({ method, path: pattern, handler });
  };

  route('GET', '/api/health', async () => [
    200,
    { ok: true, workflowsDir, target: options.deployed ? 'aws' : 'local' },
  ]);

  route('GET', '/api/workflows', async () => {
    const list = await loadWorkflows();
    return [
      200,
      list.map((entry) => ({
        file: entry.file,
        ...(entry.id ? { id: entry.id } : {}),
        ...(entry.description ? { description: entry.description } : {}),
        valid: entry.workflow !== undefined,
        errors: entry.errors,
      })),
    ];
  });

  route('GET', '/api/workflows/:id', async (_req, _url, [id]) => {
    const entry = await findWorkflow(id!);
    let graph: GraphView | undefined;
    if (entry.workflow) graph = graphViewOf(entry.workflow);
    return [
      200,
      {
        file: entry.file,
        id: entry.id,
        ...(entry.description ? { description: entry.description } : {}),
        valid: entry.workflow !== undefined,
        errors: entry.errors,
        ...(entry.workflow ? { workflow: entry.workflow } : {}),
        ...(graph ? { graph } : {}),
      },
    ];
  });

  route('POST', '/api/workflows/:id/runs', async (req, _url, [id]) => {
    const body = await readJson(req);
    if (!isRecord(body)) throw badRequest('the body must be a JSON object');
    const input = body.input ?? {};
    if (!isRecord(input)) throw badRequest('"input" must be a JSON object');
    return [202, await startRun(id!, input)];
  });

  route('GET', '/api/executions', async (_req, url) => {
    const workflow = url.searchParams.get('workflow') ?? undefined;
    return [200, await listExecutions(workflow)];
  });

  route('GET', '/api/executions/:id', async (_req, _url, [id]) => [200, await executionPage(id!)]);

  route('POST', '/api/executions/:id/cancel', async (req, _url, [id]) => {
    const body = await readJson(req);
    if (!isRecord(body)) throw badRequest('the body must be a JSON object');
    const { reason } = body;
    if (reason !== undefined && typeof reason !== 'string') throw badRequest('"reason" must be a string');
    return [200, await cancelExecution(id!, reason)];
  });

  route('POST', '/api/executions/:id/resume', async (req, _url, [id]) => {
    await readJson(req);
    return [202, await resumeRun(id!)];
  });

  route('GET', '/api/compare', async (_req, url) => {
    const [a, b] = [url.searchParams.get('a'), url.searchParams.get('b')];
    if (!a || !b) throw badRequest('give the two threads (or executions) to compare: ?a=<id>&b=<id>');
    return [200, await comparisonOf(runtime, a, b)];
  });

  route('GET', '/api/threads/:id', async (_req, _url, [id]) => {
    const { thread } = await stores.threads.getThread(id!);
    return [200, await threadJson(thread)];
  });

  // Reads every item of the thread: the console asks once per thread and status, not on each refresh.
  route('GET', '/api/threads/:id/stored-bytes', async (_req, _url, [id]) => {
    const { thread } = await stores.threads.getThread(id!);
    const stored = await storedBytes.storedBytes([thread]);
    return [200, { threadId: thread.id, ...stored.get(thread.id)! }];
  });

  route('GET', '/api/threads/:id/conversation', async (_req, url, [id]) => [
    200,
    await conversationAt(id!, url.searchParams.get('step')),
  ]);

  route('GET', '/api/threads/:id/steps', async (_req, url, [id]) => [
    200,
    await stepsOf(id!, stepRange(url)),
  ]);

  route('GET', '/api/threads/:id/events', async (_req, url, [id]) => [
    200,
    await eventsOf(id!, { from: stepParam(url, 'from'), limit: stepParam(url, 'limit') }),
  ]);

  route('GET', '/api/threads/:id/steps/:id/input', async (_req, _url, [id, step]) => {
    if (!/^\d+$/.test(step!) || Number(step) < 1)
      throw badRequest(`a step is a whole number ≥ 1 (given "${step}")`);
    return [200, await stepInputOf(runtime, id!, Number(step), workflowOfThread)];
  });

  route('POST', '/api/threads/:id/copy', async (req, _url, [id]) => {
    const body = await readJson(req);
    if (!isRecord(body)) throw badRequest('the body must be a JSON object');
    const { fromStep, fromNodeId } = body;
    if (fromStep !== undefined && fromNodeId !== undefined) {
      throw badRequest('give "fromStep" or "fromNodeId", not both');
    }
    if (fromStep !== undefined && !(typeof fromStep === 'number' && Number.isInteger(fromStep))) {
      throw badRequest('"fromStep" must be a step number');
    }
    if (fromNodeId !== undefined && typeof fromNodeId !== 'string') {
      throw badRequest('"fromNodeId" must be a node id');
    }
    const edits = copyEditsOfBody(body);
    // The edits are checked against the workflow the folder runs the copy with, when it has it; on a
    // deployed stack, against the one its state machine's definition holds, as `copy --stack` does.
    const definitionOf =
      options.deployed === undefined
        ? undefined
        : definitionsOnStack(options.deployed.sfn, stackNodeTables(options.clients));
    const onStack =
      definitionOf && edits.length > 0
        ? await deployedCopyChecks(runtime, id!, definitionOf, edits, { stderr: () => {} })
        : {};
    const workflow =
      edits.length === 0 || options.deployed !== undefined
        ? undefined
        : ownerOfId(await loadWorkflows(), (await stores.threads.getThread(id!)).thread.workflowId)?.workflow;
    const copy = await runtime.copyThread(id!, {
      ...(fromStep === undefined ? {} : { fromStep: fromStep as number }),
      ...(fromNodeId === undefined ? {} : { fromNodeId: fromNodeId as string }),
      ...(edits.length === 0 ? {} : { edits }),
      ...(workflow === undefined ? {} : { workflow }),
      ...onStack,
      ...(definitionOf === undefined ? {} : { deployed: true, stoppedAt: deployedStoppedAt(definitionOf) }),
    });
    broadcast('thread', { threadId: copy.id, copiedFrom: id, status: copy.status });
    return [201, await threadJson(copy)];
  });

  route('POST', '/api/threads/:id/run', async (req, _url, [id]) => {
    await readJson(req);
    return [202, await runThread(id!)];
  });

  route('GET', '/api/interactions', async (_req, url) => {
    const ref = url.searchParams.get('thread') ?? url.searchParams.get('execution') ?? undefined;
    const open = await openInteractions(interactions, ref, stores.executions);
    return [
      200,
      open.map((interaction) =>
        interactionJson(
          interaction,
          options.deployed !== undefined || waiters.has(interaction.interactionId),
        ),
      ),
    ];
  });

  route('POST', '/api/interactions/:id/answer', async (req, _url, [id]) => {
    const reply = replyOfBody(await readJson(req));
    const parts = parseInteractionId(id!);
    if (parts === undefined) throw badRequest('an interaction id is <threadId>/<nodeId>');
    const interaction = await interactions.getInteraction(parts.threadId, parts.nodeId);
    answerFor(interaction, reply);
    if (options.deployed) {
      const result = await deliverReply(options.deployed.sfn as SfnSend, interaction, reply);
      broadcast('interaction', {
        executionId: interaction.executionId,
        interactionId: interaction.interactionId,
        nodeId: interaction.nodeId,
        status: 'ANSWERED',
      });
      return [
        202,
        {
          interactionId: interaction.interactionId,
          executionId: interaction.executionId,
          accepted: true,
          result,
        },
      ];
    }
    const waiter = waiters.get(interaction.interactionId);
    if (waiter === undefined) {
      if (interaction.status !== 'PENDING' || delivered.has(visitKey(interaction))) {
        throw new StepthreadError(
          'INTERACTION_ALREADY_ANSWERED',
          `interaction ${interaction.interactionId} is ${interaction.status === 'PENDING' ? 'answered' : interaction.status.toLowerCase()} already`,
        );
      }
      throw new StepthreadError(
        'INTERACTION_NOT_DELIVERED',
        `interaction ${interaction.interactionId} belongs to a run this server is not running`,
      );
    }
    waiter.answer(reply);
    return [
      202,
      { interactionId: interaction.interactionId, executionId: interaction.executionId, accepted: true },
    ];
  });

  const serveEvents = (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    const execution = url.searchParams.get('execution') ?? undefined;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    res.write('retry: 1000\n\n');
    const stream = { res, ...(execution ? { execution } : {}) };
    streams.add(stream);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    ping.unref();
    req.on('close', () => {
      clearInterval(ping);
      streams.delete(stream);
    });
  };

  const serveStatic = async (res: ServerResponse, pathname: string): Promise<void> => {
    const relative = normalize(decodePath(pathname)).replace(/^([/\\])+/, '');
    let file = resolve(consoleDir, relative);
    if (!file.startsWith(consoleDir + sep) && file !== consoleDir) {
      throw new ApiError(404, 'API_NOT_FOUND', `no file ${pathname}`);
    }
    const isFile = await stat(file).then(
      (info) => info.isFile(),
      () => false,
    );
    // Client-side routes get the app.
    if (!isFile) file = join(consoleDir, 'index.html');
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('The console is not built: run `npm run build:console`. The API is served under /api.\n');
      return;
    }
    res.writeHead(200, {
      'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
      'cache-control': file.includes(`${sep}assets${sep}`)
        ? 'public, max-age=31536000, immutable'
        : 'no-cache',
      'x-content-type-options': 'nosniff',
      'content-security-policy':
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'",
    });
    res.end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!hostAllowed(req)) {
      throw new ApiError(
        403,
        'API_FORBIDDEN_ORIGIN',
        `host ${req.headers.host ?? '(none)'} is not this server`,
      );
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    const method = req.method ?? 'GET';
    if (!url.pathname.startsWith('/api/')) {
      if (method !== 'GET' && method !== 'HEAD') {
        throw new ApiError(405, 'API_METHOD_NOT_ALLOWED', `${method} ${url.pathname} is not allowed`);
      }
      return serveStatic(res, url.pathname);
    }
    if (url.pathname === '/api/events' && method === 'GET') return serveEvents(req, res, url);
    let params: string[] | undefined;
    const matching = routes.filter((candidate) => {
      const match = candidate.path.exec(url.pathname);
      if (match) params = match.slice(1).map(decodePath);
      return match !== null;
    });
    if (matching.length === 0) throw new ApiError(404, 'API_NOT_FOUND', `no API at ${url.pathname}`);
    const target = matching.find((candidate) => candidate.method === method);
    if (target === undefined) {
      throw new ApiError(405, 'API_METHOD_NOT_ALLOWED', `${method} ${url.pathname} is not allowed`);
    }
    if (method !== 'GET') checkWriteOrigin(req);
    const [status, body] = await target.handler(req, url, params ?? []);
    send(res, status, body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const { status, body } = httpStatusOf(error);
      if (res.headersSent) res.end();
      else send(res, status, body);
    });
  });
  await listenOn(server, options.port ?? 0, host);
  port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${shownHost}:${port}`,
    port,
    async close() {
      if (polling) clearInterval(polling);
      remoteReplies.closeAll();
      for (const finish of remote.values()) finish();
      remote.clear();
      for (const waiter of waiters.values()) {
        waiter.answer({ kind: 'fail', reason: 'the dev server stopped before it was answered' });
      }
      await Promise.allSettled([...runs.values()].map((run) => run.done));
      for (const stream of streams) stream.res.end();
      streams.clear();
      await new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      });
    },
    unfinishedRuns: () =>
      options.deployed
        ? []
        : [...runs.values()].filter((run) => run.status === 'RUNNING').map((run) => run.executionId),
  };
}

/** Statuses of an execution that ended without completing: its page says why. */
const ENDED_UNCOMPLETED = new Set(['FAILED', 'TIMEOUT', 'CANCELLED']);

/**
 * Why an execution that ended without completing did, as `run` reports it: its root thread's latest
 * error, or for a cancelled run (which records no error) RUN_CANCELLED with the reason its cancel
 * mark keeps, whichever process ran or cancelled it. A run this server did not run has no live error
 * to give, so without these the page would say only FAILED or CANCELLED.
 */
async function failureOf(
  execution: ExecutionRow,
  heads: readonly Thread[],
  runtime: Pick<LocalRuntime, 'cancelMarkOf'>,
): Promise<{ error?: CodedError }> {
  if (!ENDED_UNCOMPLETED.has(execution.status)) return {};
  const error = heads.find((thread) => thread.id === execution.rootThreadId)?.errors.at(-1);
  if (error !== undefined) return { error };
  if (execution.status !== 'CANCELLED' || execution.rootThreadId === undefined) return {};
  const mark = await runtime.cancelMarkOf(execution.rootThreadId);
  return mark === undefined
    ? {}
    : { error: { code: 'RUN_CANCELLED', message: new RunCancelled(mark).message } };
}

/**
 * The package's console/dist, from wherever this module runs: the sources (cli/dev), the CLI bundle
 * (dist/bin) or the compiled library (dist/cli/dev).
 */
function builtConsoleDir(): string {
  const candidates = ['../../console/dist', '../../../console/dist'].map((up) =>
    resolve(import.meta.dirname, up),
  );
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0]!;
}
