/**
 * The single DynamoDB table: every item kind, its keys and the one GSI used for listings.
 * infra/ mirrors `tableDefinition` in CDK; the embedded runtime creates the table from it.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export const PARTITION_KEY = 'pk';
export const SORT_KEY = 'sk';
export const GSI1_NAME = 'gsi1';
export const GSI1_PARTITION_KEY = 'gsi1pk';
export const GSI1_SORT_KEY = 'gsi1sk';
/** Epoch seconds; DynamoDB TTL deletes expired items (declared in infra; dynalite ignores it). */
export const TTL_ATTRIBUTE = 'expiresAt';

/** Attributes the stores own on every item; they never collide with a Thread field name. */
export const RESERVED_ATTRIBUTES = [
  PARTITION_KEY,
  SORT_KEY,
  GSI1_PARTITION_KEY,
  GSI1_SORT_KEY,
  TTL_ATTRIBUTE,
  'kind',
  'version',
  'createHash',
  // The key of the latest batch of events recorded outside steps (its item holds the events).
  'eventsTail',
  // Earlier layouts: the head's latest batch itself, and the version that committed it (still read).
  'recentEvents',
  'recentEventsAt',
  // The steps copies pinned on a source's head (retention.ts).
  'retentionPins',
] as const;

export interface ItemKey {
  readonly pk: string;
  readonly sk: string;
}

export interface Gsi1Key {
  readonly gsi1pk: string;
  readonly gsi1sk: string;
}

/** Sort-key prefixes of a thread's step records and latest node results (see thread-store.ts). */
export const STEP_PREFIX = 'STEP#';
export const NODE_RESULT_PREFIX = 'NODE#';
/** Batches of events recorded outside steps, moved off the head (see thread-store.ts). */
export const EVENTS_PREFIX = 'EVENTS#';
/** Sort key of a pruned thread's head kept for its copies (`itemKeys.prunedHead`). */
export const PRUNED_HEAD_SORT_KEY = 'PRUNED';
/** Zero-padded so records sort by step. */
const STEP_DIGITS = 10;

/** What follows EVENTS# in a batch's sort key (and what the head's `eventsTail` holds). */
export function eventBatchId(version: number, hash?: string): string {
  const padded = String(version).padStart(STEP_DIGITS, '0');
  return hash === undefined ? padded : `${padded}#${hash}`;
}

/** Primary keys per item kind. One item per entity; all writes are single-item and conditional. */
export const itemKeys = {
  thread: (threadId: string): ItemKey => ({ pk: `THREAD#${threadId}`, sk: 'THREAD' }),
  execution: (executionId: string): ItemKey => ({ pk: `EXEC#${executionId}`, sk: 'EXEC' }),
  join: (joinKey: string): ItemKey => ({ pk: `JOIN#${joinKey}`, sk: 'JOIN' }),
  /** A thread's entry in the executions listing (carries the GSI1 keys, so the head need not). */
  listing: (threadId: string): ItemKey => ({ pk: `THREAD#${threadId}`, sk: 'LISTING' }),
  /** The record step `step` (from 1) of a thread left, written once. */
  step: (threadId: string, step: number): ItemKey => ({
    pk: `THREAD#${threadId}`,
    sk: `${STEP_PREFIX}${String(step).padStart(STEP_DIGITS, '0')}`,
  }),
  /**
   * A batch of events recorded outside steps by the update that made the head version `version`;
   * `hash` tells apart batches two racing updates of the same version wrote (one of them commits).
   * Without `hash`: an earlier layout's batch, moved off the head once committed.
   */
  events: (threadId: string, version: number, hash?: string): ItemKey => ({
    pk: `THREAD#${threadId}`,
    sk: `${EVENTS_PREFIX}${eventBatchId(version, hash)}`,
  }),
  /** The latest result of node `nodeId` on a thread. */
  nodeResult: (threadId: string, nodeId: string): ItemKey => ({
    pk: `THREAD#${threadId}`,
    sk: `${NODE_RESULT_PREFIX}${nodeId}`,
  }),
  /**
   * What stays of a pruned thread that a copy still reads through `copiedFrom` (prune.ts): its head
   * as it was, under another sort key, so nothing that reads heads finds the thread.
   */
  prunedHead: (threadId: string): ItemKey => ({ pk: `THREAD#${threadId}`, sk: PRUNED_HEAD_SORT_KEY }),
  /** What a run spent (tokens, cost, tool calls) and its budget, on its root thread's partition. */
  spend: (rootThreadId: string): ItemKey => ({ pk: `THREAD#${rootThreadId}`, sk: 'SPEND' }),
  pendingInteraction: (threadId: string, nodeId: string): ItemKey => ({
    pk: `THREAD#${threadId}`,
    sk: `INTERACTION#${nodeId}`,
  }),
  /** An LLM node's request held for a tool call's approval (see interaction-store.ts, HeldTurn). */
  heldTurn: (threadId: string, nodeId: string): ItemKey => ({
    pk: `THREAD#${threadId}`,
    sk: `HELD#${nodeId}`,
  }),
} as const;

const OPEN_INTERACTIONS = 'INTERACTIONS#OPEN';

/**
 * The GSI1 sort-key prefix of one execution's open interactions. Execution names cannot contain `#`,
 * so no other execution's keys share it.
 */
export function openInteractionsOfExecution(executionId: string): string {
  return `${executionId}#`;
}

/** GSI1 keys per listing. Sort keys start with an ISO time where order matters. */
export const gsi1Keys = {
  /** Threads of one execution (root, fork children, copies started inside it). */
  threadOfExecution: (executionId: string, threadId: string): Gsi1Key => ({
    gsi1pk: `THREADS#${executionId}`,
    gsi1sk: threadId,
  }),
  /** Executions of one workflow, oldest first. */
  executionOfWorkflow: (workflowId: string, startTime: string, executionId: string): Gsi1Key => ({
    gsi1pk: `EXECUTIONS#${workflowId}`,
    gsi1sk: `${startTime}#${executionId}`,
  }),
  /**
   * Open (PENDING) interactions, in one sparse partition: only open items carry it, so every open
   * interaction is one Query away, and the sort key's execution prefix narrows it to one execution.
   */
  openInteraction: (executionId: string, requestedAt: string, threadId: string, nodeId: string): Gsi1Key => ({
    gsi1pk: OPEN_INTERACTIONS,
    gsi1sk: `${openInteractionsOfExecution(executionId)}${requestedAt}#${threadId}#${nodeId}`,
  }),
} as const;

/** Partition values to Query GSI1 with, matching the builders above. */
export const gsi1Partitions = {
  threadsOfExecution: (executionId: string): string => `THREADS#${executionId}`,
  executionsOfWorkflow: (workflowId: string): string => `EXECUTIONS#${workflowId}`,
  openInteractions: (): string => OPEN_INTERACTIONS,
} as const;

/** The CreateTable input, on-demand billing. TTL is set separately (UpdateTimeToLive) on AWS only. */
export function tableDefinition(tableName: string): CreateTableCommandInput & { TableName: string } {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: PARTITION_KEY, AttributeType: 'S' },
      { AttributeName: SORT_KEY, AttributeType: 'S' },
      { AttributeName: GSI1_PARTITION_KEY, AttributeType: 'S' },
      { AttributeName: GSI1_SORT_KEY, AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: PARTITION_KEY, KeyType: 'HASH' },
      { AttributeName: SORT_KEY, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: GSI1_NAME,
        KeySchema: [
          { AttributeName: GSI1_PARTITION_KEY, KeyType: 'HASH' },
          { AttributeName: GSI1_SORT_KEY, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
  };
}
