import { Logger } from '@aws-lambda-powertools/logger';
import middy from '@middy/core';
import type { NodeType } from '../../engine/model/schema.ts';
import { createLambdaClients, type LambdaClients } from '../aws/lambda-clients.ts';
import { resolveAwsTarget, resolveResourceNames } from '../aws/target.ts';
import { createCancelMarks } from '../cancel/marks.ts';
import { rootThreadIdOf, waitsOutside, withCancelWatch } from '../cancel/watch.ts';
import { type EventPublisher, publisherFromEnvironment } from '../events/publisher.ts';
import { type ConversationStore, createConversationStore } from '../stores/conversation-store.ts';
import { createExecutionIndex } from '../stores/execution-index.ts';
import { createInteractionStore } from '../stores/interaction-store.ts';
import { createItemListStore, type ItemListStore } from '../stores/item-lists.ts';
import { createJoinStore } from '../stores/join-store.ts';
import { createS3NodeTables } from '../stores/node-tables.ts';
import { retentionDaysFromEnv } from '../stores/retention.ts';
import { createSpendStore } from '../stores/spend-store.ts';
import { createThreadStore } from '../stores/thread-store.ts';
import { createValueStore, type ValueStore } from '../stores/value-store.ts';
import { flushTracing } from '../telemetry/index.ts';
import type { HandlerDeps, NodeLogsEntry } from './deps.ts';
import { type ActionsOf, createDispatch, type DispatchTable } from './dispatch-table.ts';
import type { NodeTableSource } from './node-tables.ts';
import { systemEnv } from './system-env.ts';

const baseLogger = new Logger({ serviceName: 'stepthread' });

function environmentClients(): LambdaClients {
  return createLambdaClients(resolveAwsTarget(process.env), resolveResourceNames(process.env));
}

let environmentPublisher: EventPublisher | undefined;

/** The event publisher, one per container: its EventBridge client loads on the first publish. */
function environmentEvents(clients: LambdaClients): EventPublisher {
  environmentPublisher ??= publisherFromEnvironment(process.env, clients.target, (message, fields) =>
    baseLogger.warn(message, fields),
  );
  return environmentPublisher;
}

/** The conversation store, built on its first use: loading the S3 client is left to nodes that read logs. */
function lazyConversationStore(clients: LambdaClients): ConversationStore {
  let store: Promise<ConversationStore> | undefined;
  const get = () => {
    store ??= clients.s3().then((s3) => createConversationStore({ s3, bucketName: clients.bucketName }));
    return store;
  };
  return {
    appendMessages: async (pointer, messages) => (await get()).appendMessages(pointer, messages),
    prepareAppend: async (pointer, messages) => (await get()).prepareAppend(pointer, messages),
    readLog: async (pointer, options) => (await get()).readLog(pointer, options),
    readMessage: async (segmentId, position) => (await get()).readMessage(segmentId, position),
  };
}

/** The large-value store, built on its first use like the conversation store. */
function lazyValueStore(clients: LambdaClients, conversations: ConversationStore): ValueStore {
  let store: Promise<ValueStore> | undefined;
  const get = () => {
    store ??= clients
      .s3()
      .then((s3) => createValueStore({ s3, bucketName: clients.bucketName }, conversations));
    return store;
  };
  return {
    putValues: async (values) => (await get()).putValues(values),
    read: async (refs) => (await get()).read(refs),
  };
}

/** The item sources and lists of FORKs over a list, built on first use (only a FORK over a list and its items' first steps need S3 here). */
function lazyItemListStore(clients: LambdaClients): ItemListStore {
  let store: Promise<ItemListStore> | undefined;
  const get = () => {
    store ??= clients.s3().then((s3) => createItemListStore({ s3, bucketName: clients.bucketName }));
    return store;
  };
  return {
    putItemSource: async (id, template, items) => (await get()).putItemSource(id, template, items),
    putItemList: async (id, items) => (await get()).putItemList(id, items),
    readItemList: async (bucket, key) => (await get()).readItemList(bucket, key),
    readItemSource: async (key, range) => (await get()).readItemSource(key, range),
  };
}

const nodeTableSources = new Map<string, NodeTableSource>();

/** The node tables in the stack's bucket, each read once per container (by bucket, as the clients are). */
function containerNodeTables(clients: LambdaClients): NodeTableSource {
  let source = nodeTableSources.get(clients.bucketName);
  if (source === undefined) {
    source = createS3NodeTables({ s3: clients.s3, bucketName: clients.bucketName });
    nodeTableSources.set(clients.bucketName, source);
  }
  return source;
}

function retentionOf(env: NodeJS.ProcessEnv): { retentionDays?: number } {
  const days = retentionDaysFromEnv(env);
  return days === undefined ? {} : { retentionDays: days };
}

/** Deps for a deployed Lambda: clients for the target named by the environment (cached per container). */
export function depsFromEnvironment(signal?: AbortSignal): HandlerDeps {
  const clients = environmentClients();
  const conversations = lazyConversationStore(clients);
  return {
    threads: createThreadStore(clients),
    conversations,
    values: lazyValueStore(clients, conversations),
    joins: createJoinStore(clients),
    executions: createExecutionIndex(clients),
    interactions: createInteractionStore(clients),
    itemLists: lazyItemListStore(clients),
    spend: createSpendStore(clients),
    nodeTables: containerNodeTables(clients),
    env: systemEnv,
    events: environmentEvents(clients),
    ...retentionOf(process.env),
    cancelWatch: { marks: createCancelMarks(clients), intervalMs: LAMBDA_CANCEL_POLL_MS },
    ...(signal ? { signal } : {}),
  };
}

/**
 * How often an LLM or TOOL function looks for its run's cancel mark while the model or tool works:
 * one eventually consistent GetItem (half a read unit) per 2 s of waiting, so a cancelled run's call
 * is closed within a few seconds of `stepthread cancel`.
 */
export const LAMBDA_CANCEL_POLL_MS = 2000;

interface LoggedFields {
  action?: unknown;
  node?: { id?: unknown; type?: unknown };
  envelope?: { executionId?: unknown; threadId?: unknown; step?: unknown };
  executionId?: unknown;
}

/** Only identifiers: what to log about a Task input. */
function logKeys(event: unknown): Record<string, string | number> {
  const e = (event ?? {}) as LoggedFields;
  const keys: Record<string, string | number> = {};
  const put = (name: string, value: unknown) => {
    if (typeof value === 'string' || typeof value === 'number') keys[name] = value;
  };
  put('action', e.action ?? 'execute');
  put('nodeId', e.node?.id);
  put('nodeType', e.node?.type);
  put('executionId', e.envelope?.executionId ?? e.executionId);
  put('threadId', e.envelope?.threadId);
  put('step', e.envelope?.step);
  return keys;
}

/**
 * A CODE node's console output in the function's log (CloudWatch), one entry per line as a Lambda's
 * own `console.log` would give, after the step committed. Only the log: the state payload never
 * carries it, and the step record keeps it for inspect and the console.
 */
function logCodeOutput(logger: Logger): (entry: NodeLogsEntry) => void {
  return ({ step, logs }) => {
    for (const line of logs.lines) logger.info(line, { codeOutput: true, committedStep: step });
    if (logs.cut) logger.info('code output cut', { codeOutput: true, committedStep: step, cut: logs.cut });
  };
}

/**
 * The Lambda handler of one node type, serving the actions in `actions` (its own node type's code
 * only). `makeDeps` defaults to clients from the environment; tests pass their own.
 */
export function createNodeHandler<T extends NodeType>(
  nodeType: T,
  actions: ActionsOf<T>,
  makeDeps: (signal?: AbortSignal) => HandlerDeps = depsFromEnvironment,
) {
  const dispatch = createDispatch({ [nodeType]: actions } as DispatchTable);
  return middy().handler(async (event: unknown, context: { awsRequestId?: string } | undefined, opts) => {
    const logger = baseLogger.createChild({ persistentKeys: { functionNodeType: nodeType } });
    logger.appendKeys({
      ...logKeys(event),
      ...(context?.awsRequestId ? { requestId: context.awsRequestId } : {}),
    });
    const started = performance.now();
    try {
      const deps: HandlerDeps = { onNodeLogs: logCodeOutput(logger), ...makeDeps(opts?.signal) };
      // A model or tool call ends early when its run is cancelled (functions/cancel/watch.ts).
      const watch = waitsOutside(nodeType) ? deps.cancelWatch : undefined;
      const next = await withCancelWatch(watch, rootThreadIdOf(event), deps.signal, (signal) =>
        dispatch(event, signal ? { ...deps, signal } : deps),
      );
      logger.info('task completed', {
        durationMs: Math.round(performance.now() - started),
        nextStep: next.step,
      });
      return next;
    } catch (error) {
      const name = error instanceof Error ? error.name : 'unknown';
      logger.warn('task ended with an error', {
        errorName: name,
        durationMs: Math.round(performance.now() - started),
      });
      throw error;
    } finally {
      // A Lambda may be frozen once it returns: its spans go out before (nothing loaded without tracing).
      await flushTracing();
    }
  });
}
