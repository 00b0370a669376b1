/** What a handler needs from outside: stores, clock and ids, LLM providers, cancellation. */
import type { EngineEnv, NodeLogs, NodeResult } from '../../engine/thread/types.ts';
import type { AwsClients } from '../aws/clients.ts';
import type { CancelWatch } from '../cancel/watch.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { ProviderFactory } from '../llm/provider.ts';
import { providerForProfile } from '../llm/providers.ts';
import { type ConversationStore, createConversationStore } from '../stores/conversation-store.ts';
import { createExecutionIndex, type ExecutionIndex } from '../stores/execution-index.ts';
import { createInteractionStore, type InteractionStore } from '../stores/interaction-store.ts';
import { createItemListStore, type ItemListStore } from '../stores/item-lists.ts';
import { createJoinStore, type JoinStore } from '../stores/join-store.ts';
import { createSpendStore, type SpendStore } from '../stores/spend-store.ts';
import { createThreadStore, type ThreadStore, type ThreadStoreOptions } from '../stores/thread-store.ts';
import { createValueStore, type ValueStore } from '../stores/value-store.ts';
import type { StepTelemetry } from '../telemetry/types.ts';
import type { ToolRuntime } from '../tools/runtime.ts';

export interface HandlerStores {
  readonly threads: ThreadStore;
  readonly conversations: ConversationStore;
  readonly joins: JoinStore;
  readonly executions: ExecutionIndex;
  /** Large values by reference (optional: without it every value is stored inline). */
  readonly values?: ValueStore;
  /** Pending USER_INTERACTIONs (optional so hand-built test stores need not stub it). */
  readonly interactions?: InteractionStore;
  /** Item lists of distributed FORKs over a list (optional: only those need it). */
  readonly itemLists?: ItemListStore;
  /** What each run spent, and its budget (optional so hand-built test stores need not stub it). */
  readonly spend?: SpendStore;
}

/** Completes a waitForTaskToken Task (SendTaskSuccess / SendTaskFailure): what `respond` sends. */
export interface TaskTokenSender {
  succeed(taskToken: string, output: unknown): Promise<void>;
  fail(taskToken: string, error: string, cause: string): Promise<void>;
}

export interface HandlerDeps extends HandlerStores {
  /**
   * Days an ended run's items are kept (the stack's `retentionDays`, STEPTHREAD_RETENTION_DAYS in the
   * Lambdas): the step that ends a run sets their TTL (functions/nodes/run-expiry.ts). Absent: forever.
   */
  readonly retentionDays?: number;
  /** Clock and id source; engine results depend on nothing else. */
  readonly env: EngineEnv;
  /** LLM provider per profile (default: the built-in providers). */
  readonly providers?: ProviderFactory;
  /** Aborts slow work (an LLM call) when the run ends or the join no longer needs the branch. */
  readonly signal?: AbortSignal;
  /**
   * Where the run's cancel mark is looked for while a step waits on a model, a tool or a person
   * (functions/cancel/watch.ts): its waits then also end when the run is cancelled.
   */
  readonly cancelWatch?: CancelWatch;
  /** The Task attempt, when known (recorded on node results). */
  readonly attempt?: number;
  /**
   * How long a fork branch's step keeps writing globals other branches keep changing before it fails
   * with GLOBAL_WRITE_CONTENDED (default GLOBAL_WRITE_PATIENCE_MS).
   */
  readonly globalWritePatienceMs?: number;
  /** Where tools run and where their secrets come from (default: read from the process environment). */
  readonly tools?: ToolRuntime;
  /** Where committed events are published (default: nowhere; they are still recorded on the thread). */
  readonly events?: EventPublisher;
  /**
   * Told what a node's code printed once its step committed (the result keeps it either way): the
   * CLI's progress shows it, a Lambda logs it. Never called for a step replayed from its record.
   */
  readonly onNodeLogs?: (entry: NodeLogsEntry) => void;
  /**
   * Told a node's result once its step committed, or was replayed from its record (a value stored by
   * reference stays its reference): the CLI's progress reads an LLM node's failed tool calls and a
   * loop's iteration from it.
   */
  readonly onNodeResult?: (entry: NodeResultEntry) => void;
  /**
   * Told each piece of an LLM node's reply as it streams, before its step commits (the CLI's progress
   * prints it, dev's console shows it growing). Absent, the providers ask for whole replies; a Lambda
   * has none yet. What the step commits is the same either way.
   */
  readonly onReplyText?: (entry: ReplyTextEntry) => void;
  /** Spans for the step's model and tool calls: set by the dispatch while tracing (functions/telemetry). */
  readonly telemetry?: StepTelemetry;
}

/** A piece of an LLM node's streamed reply, and where it belongs. */
export interface ReplyTextEntry {
  readonly executionId: string;
  readonly threadId: string;
  readonly nodeId: string;
  /** The step the node runs as: its record's once it commits. */
  readonly step: number;
  /** Which model call of the node's request the reply answers (0 first; tool calls add one each round). */
  readonly reply: number;
  /** The reply begins here: the text before for this reply, and any later one, is void (a retry starts over). */
  readonly restart: boolean;
  readonly text: string;
}

/** A committed step's result and where it came from. */
export interface NodeResultEntry {
  readonly threadId: string;
  readonly step: number;
  readonly result: NodeResult;
}

/** A committed step's console output and where it came from. */
export interface NodeLogsEntry {
  readonly threadId: string;
  readonly nodeId: string;
  readonly step: number;
  readonly logs: NodeLogs;
}

export function createHandlerStores(clients: AwsClients, options: ThreadStoreOptions = {}): HandlerStores {
  const conversations = createConversationStore(clients);
  return {
    threads: createThreadStore(clients, options),
    conversations,
    values: createValueStore(clients, conversations),
    joins: createJoinStore(clients),
    executions: createExecutionIndex(clients),
    interactions: createInteractionStore(clients),
    itemLists: createItemListStore(clients),
    spend: createSpendStore(clients),
  };
}

export function providerFactory(deps: HandlerDeps): ProviderFactory {
  return deps.providers ?? providerForProfile;
}
