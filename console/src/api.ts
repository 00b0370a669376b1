/** The console's client of the `stepthread dev` JSON API (same origin). */

import type { AwsCost } from '../../cli/aws-cost.ts';
import type { NodeStatus, StepFunctionsView } from '../../cli/deployed/execution-view.ts';
import type { StreamingReply } from '../../cli/dev/streaming-replies.ts';

/** Declared once with the dev server that sends them (type-only: nothing of cli/ enters the bundle). */
export type { AwsCost } from '../../cli/aws-cost.ts';
export type { NodeStatus, StateRun, StepFunctionsView } from '../../cli/deployed/execution-view.ts';
export type { StreamingReply, TokenEvent } from '../../cli/dev/streaming-replies.ts';
export type { ComparedStep, Comparison, StepInput } from '../../cli/dev/workbench-types.ts';

import type { Comparison, StepInput } from '../../cli/dev/workbench-types.ts';

export interface CodedError {
  code: string;
  message: string;
  nodeId?: string;
  path?: string;
}

export interface WorkflowEntry {
  file: string;
  id?: string;
  description?: string;
  valid: boolean;
  errors: CodedError[];
}

export interface GraphView {
  workflowId: string;
  startId: string;
  nodes: { id: string; type: string; label: string; subgraphPath: string[]; detail?: string }[];
  edges: { from: string; to: string; kind: 'next' | 'loop' }[];
  forks: { forkId: string; joinId: string; paths: { pathId: string; nodeIds: string[] }[] }[];
  loops: { loopId: string; startId: string; endId: string; bodyIds: string[] }[];
  /** SUBGRAPH nodes (inlined: no node of their own), outermost first, with the nodes inside each. */
  subgraphs: { subgraphId: string; label: string; nodeIds: string[] }[];
}

export interface WorkflowDetail extends WorkflowEntry {
  graph?: GraphView;
  workflow?: unknown;
}

export interface ExecutionRow {
  executionId: string;
  workflowId: string;
  rootThreadId?: string;
  status: string;
  startTime: string;
  endTime?: string;
  durationMs?: number;
  /** Continue-as-new: the execution this one continues, and the one that continued it. */
  continuedFrom?: string;
  continuedAs?: string;
  /** A deployed execution: how Step Functions sees it, and its page in the Step Functions console. */
  stepFunctionsStatus?: string;
  consoleUrl?: string;
  /** INTERRUPTED (its process is gone): the command that resumes it. */
  resume?: string;
}

export interface NodeRun {
  nodeId: string;
  nodeType: string;
  status: string;
  startedAt: string;
  endedAt?: string;
  durationMs?: number;
  attempt: number;
}

export interface ThreadReport {
  threadId: string;
  parentThreadId?: string;
  forkPathId?: string;
  copiedFrom?: string;
  status: string;
  currentNodeId?: string;
  startTime: string;
  endTime?: string;
  errors: CodedError[];
  /** A copy's own edits before its first step, in the order they were applied. */
  edits?: RecordedEdit[];
  /** Its latest 100 node runs; `earlierRuns` says how many came before. */
  nodes: NodeRun[];
  earlierRuns?: number;
  children: string[];
}

export interface Interaction {
  interactionId: string;
  executionId: string;
  threadId: string;
  nodeId: string;
  interactionType: 'ask_for_approval' | 'ask_for_input' | 'ask_for_selection' | 'show_message';
  message?: string;
  options?: string[];
  requestedAt: string;
  answerable: boolean;
  /** An LLM node's tool call held for approval: the tool, its arguments, the model's message. */
  toolCall?: { id: string; name: string; arguments: unknown; message: string };
  /** The variable an ask_for_input's answer is stored in, when its declared type bounds the answer. */
  answerVariable?: { name: string; type: string };
}

export interface ExecutionPage {
  execution: ExecutionRow;
  workflowId: string;
  rootThreadId?: string;
  error?: CodedError;
  threads: ThreadReport[];
  nodeStatus: Record<string, NodeStatus>;
  /** What the whole run spent, and its budget. */
  cost?: RunCost;
  /** What the run costs on AWS, deployed: an estimate from its steps (each node's in nodeStatus.awsUsd). */
  awsCost?: AwsCost;
  pending: Interaction[];
  copies: { threadId: string; copiedFrom: string; executionId: string; status: string }[];
  stepFunctions?: StepFunctionsView;
  /** The workflow this execution ran, when recorded (the file may have changed since). */
  definition?: { workflow: unknown; graph: GraphView };
  /** A run in flight on this server: its LLM replies streaming now, as far as they came. */
  streaming?: { seq: number; replies: StreamingReply[] };
}

export interface Message {
  role: string;
  content: string;
  name?: string;
  toolCalls?: { id: string; name: string; arguments: unknown }[];
}

/** What a thread keeps stored: its DynamoDB items (as billed) and the S3 objects it owns. */
export interface StoredBytes {
  threadId: string;
  items: number;
  itemBytes: number;
  objects: number;
  objectBytes: number;
  bytes: number;
}

export interface Conversation {
  threadId: string;
  step: number;
  stepCount: number;
  messages: Message[];
  variables: unknown;
}

export interface StepRow {
  step: number;
  nodeId: string;
  nodeType: string;
  status: string;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  attempt: number;
  output?: unknown;
  /** What a CODE node's code printed in this step, capped (`cut` says what the cap left out). */
  logs?: StepLogs;
  error?: CodedError;
  tokenUsage?: { promptTokens: number; completionTokens: number; totalTokens: number };
  /** An LLM step's own model calls: tokens, and their cost when the model has a price. */
  usage?: ModelUsage;
  /** An LLM step's tool calls, and how many returned an error to the model (the step completes). */
  toolCalls?: { calls: number; failed: number };
}

/** Model calls' tokens, and their cost in US dollars when the model has a price. */
export interface ModelUsage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd?: number;
}

/** What a whole run spent (all its threads and executions), and its budget (cli/run-cost.ts). */
export interface RunCost {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  tokens: number;
  costUsd: number;
  unpricedCalls: number;
  toolCalls: number;
  budget?: { maxTokens?: number; maxCostUsd?: number; maxToolCalls?: number };
  spent?: Record<string, { spent: number; limit: number; fraction: number }>;
}

/** Dollars to the micro-dollar: model calls cost fractions of a cent. */
export function formatUsd(usd: number): string {
  return `$${usd.toFixed(6)}`;
}

/** An AWS estimate: `≈ $0.000620`. */
export function formatAwsUsd(usd: number): string {
  return `≈ ${formatUsd(usd)}`;
}

export interface StepLogs {
  lines: string[];
  cut?: { lines: number; chars: number };
}

export interface ThreadSteps {
  threadId: string;
  stepCount: number;
  /** The first step asked for: by default the first of the latest 100; earlier ones are not in `steps`. */
  from: number;
  steps: StepRow[];
}

/** A thread's journal from its step `from` on (the events outside steps all there). */
export interface ThreadEvents {
  threadId: string;
  stepCount: number;
  from: number;
  events: JournalEvent[];
}

/** One entry of a thread's journal (engine/events.ts): its type, when, the node, and its own fields. */
export interface JournalEvent {
  type: string;
  at: string;
  nodeId?: string;
  [field: string]: unknown;
}

export interface ThreadHead {
  threadId: string;
  workflowId: string;
  status: string;
  currentNodeId?: string;
  step: number;
  metadata: {
    copiedFrom?: string;
    copiedAtStep?: number;
    forkPathId?: string;
    parentThreadId?: string;
    executionId?: string;
    /** A copy's own edits, as the copy recorded them (engine/thread/copy-edits.ts). */
    edits?: RecordedEdit[];
    /** The node config and profile edits the thread runs with: its sources', then its own. */
    workflowEdits?: RecordedEdit[];
  };
  input: unknown;
  output?: unknown;
  variables: unknown;
}

/**
 * An edit a copy made before its first step (`metadata.edits`, engine/thread/copy-edits.ts): a
 * variable, the input, one config key of a node, or a whole profile.
 */
export type RecordedEdit = { at: string; value: unknown } & (
  | { kind: 'variable'; name: string; scope: string }
  | { kind: 'input' }
  | { kind: 'nodeConfig'; nodeId: string; key: string }
  | { kind: 'profile'; profileId: string }
);

export interface CopyRequest {
  fromStep?: number;
  fromNodeId?: string;
  /** Variables to set on the copy, by name. */
  set?: Record<string, unknown>;
  /** The copy's input instead of its source's. */
  input?: Record<string, unknown>;
  /** Config keys of nodes the copy runs with instead of the workflow's: node id → key → value. */
  nodeConfig?: Record<string, Record<string, unknown>>;
  /** Whole profiles the copy runs with instead of the workflow's, by id. */
  profile?: Record<string, unknown>;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: CodedError,
    /** Every problem, when the server lists them (a refused copy edit, an invalid workflow). */
    readonly errors: CodedError[] = [error],
  ) {
    super(`${error.code}: ${error.message}`);
  }
}

async function call<T>(path: string, init?: { method: string; body: unknown }): Promise<T> {
  const response = await fetch(
    path,
    init
      ? {
          method: init.method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(init.body),
        }
      : undefined,
  );
  const data = (await response.json()) as T & { error?: CodedError; errors?: CodedError[] };
  if (!response.ok) {
    const error = data.error ?? { code: 'HTTP', message: response.statusText };
    throw new ApiFailure(
      response.status,
      error,
      Array.isArray(data.errors) && data.errors.length > 0 ? data.errors : [error],
    );
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  workflows: () => call<WorkflowEntry[]>('/api/workflows'),
  workflow: (id: string) => call<WorkflowDetail>(`/api/workflows/${enc(id)}`),
  start: (id: string, input: unknown) =>
    call<{ executionId: string; threadId: string }>(`/api/workflows/${enc(id)}/runs`, {
      method: 'POST',
      body: { input },
    }),
  executions: () => call<ExecutionRow[]>('/api/executions'),
  execution: (id: string) => call<ExecutionPage>(`/api/executions/${enc(id)}`),
  thread: (id: string) => call<ThreadHead>(`/api/threads/${enc(id)}`),
  conversation: (id: string, step?: number) =>
    call<Conversation>(`/api/threads/${enc(id)}/conversation${step === undefined ? '' : `?step=${step}`}`),
  /** The thread's steps from `from` on; without it, its latest 100. */
  steps: (id: string, from?: number) =>
    call<ThreadSteps>(`/api/threads/${enc(id)}/steps${from === undefined ? '' : `?from=${from}`}`),
  /** The events of the thread's steps from `from` on; without it, of its latest 100. */
  events: (id: string, from?: number) =>
    call<ThreadEvents>(`/api/threads/${enc(id)}/events${from === undefined ? '' : `?from=${from}`}`),
  /** Reads every item of the thread: ask once per thread and status. */
  storedBytes: (id: string) => call<StoredBytes>(`/api/threads/${enc(id)}/stored-bytes`),
  answer: (interactionId: string, body: unknown) =>
    call<{ accepted: boolean }>(`/api/interactions/${enc(interactionId)}/answer`, { method: 'POST', body }),
  /** A copy of the thread from a step or node, with its edits (`set`, `input`, `nodeConfig`, `profile`). */
  copy: (threadId: string, body: CopyRequest) =>
    call<ThreadHead>(`/api/threads/${enc(threadId)}/copy`, { method: 'POST', body }),
  /** What a step's node read as it ran: the rendered prompt, tool calls, the values it read. */
  stepInput: (threadId: string, step: number) =>
    call<StepInput>(`/api/threads/${enc(threadId)}/steps/${step}/input`),
  /** Two threads (or executions) compared as `stepthread diff` compares them. */
  compare: (a: string, b: string) => call<Comparison>(`/api/compare?a=${enc(a)}&b=${enc(b)}`),
  /** Runs an interrupted run again from where it stopped (`stepthread resume`). */
  resume: (executionId: string) =>
    call<{ executionId: string; threadId: string }>(`/api/executions/${enc(executionId)}/resume`, {
      method: 'POST',
      body: {},
    }),
  /** Stops a run for good (`stepthread cancel`): it ends CANCELLED, its calls in flight closed. */
  cancel: (executionId: string, reason?: string) =>
    call<{ executionId: string; status: 'CANCELLED'; threadsCancelled: number }>(
      `/api/executions/${enc(executionId)}/cancel`,
      { method: 'POST', body: reason === undefined ? {} : { reason } },
    ),
  run: (threadId: string) =>
    call<{ executionId: string }>(`/api/threads/${enc(threadId)}/run`, { method: 'POST', body: {} }),
};

/**
 * Re-reads of one view overlap (one per burst of live events, one after an action) and may answer
 * out of order: under load, one asked while a run still ran can answer after one asked once it
 * ended, and would show the run running again with no event left to correct it. Each call of the
 * returned function starts a read and gives back whether that read is still the newest asked.
 */
export function newestReads(): () => () => boolean {
  let asked = 0;
  return () => {
    const mine = ++asked;
    return () => mine === asked;
  };
}

/** The live events that change what the pages read (`token` events only add to a reply in flight). */
export const STATE_EVENTS = ['node', 'thread', 'execution', 'interaction'];

/** Calls `onEvent` for every live event of `types` (of one execution, or all); returns the unsubscribe. */
export function subscribe(
  execution: string | undefined,
  onEvent: (type: string, data: unknown) => void,
  types: readonly string[] = STATE_EVENTS,
) {
  const source = new EventSource(`/api/events${execution ? `?execution=${enc(execution)}` : ''}`);
  for (const type of types) {
    source.addEventListener(type, (event) => onEvent(type, JSON.parse((event as MessageEvent).data)));
  }
  return () => source.close();
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  // Minutes and up: what a wait for a person's answer takes.
  const seconds = Math.round(ms / 1000);
  const [h, m, s] = [Math.floor(seconds / 3600), Math.floor(seconds / 60) % 60, seconds % 60];
  return h > 0 ? `${h} h ${m} min` : `${m} min ${s} s`;
}

/** 1.5 KB, 2.0 MB: as `stepthread inspect --bytes` prints them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

export function formatTime(iso: string): string {
  return new Date(iso).toLocaleString();
}
