/**
 * The execution index: one item per execution (`EXEC#<executionId>`) naming its root thread,
 * workflow and status, listed per workflow through GSI1.
 */
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { StepthreadError } from '../../engine/errors.ts';
import type { ThreadStatus } from '../../engine/thread/types.ts';
import { contentHash } from './canonical-json.ts';
import {
  batchGetItems,
  ExpressionBuilder,
  entityOf,
  isConditionalCheckFailed,
  queryGsi1Partition,
  type TableRef,
} from './dynamo-items.ts';
import { gsi1Keys, gsi1Partitions, itemKeys, TTL_ATTRIBUTE } from './table.ts';

/** A thread's statuses, and CONTINUED: the run went on in the execution named by `continuedAs`. */
export type ExecutionStatus = ThreadStatus | 'CONTINUED';

export interface ExecutionRecord {
  readonly executionId: string;
  readonly rootThreadId: string;
  readonly workflowId: string;
  readonly workflowVersion: number;
  readonly status: ExecutionStatus;
  /** ISO timestamps. */
  readonly startTime: string;
  readonly endTime?: string;
  /** Continue-as-new: the execution this one continues, and the one that continued it. */
  readonly continuedFrom?: string;
  readonly continuedAs?: string;
  /**
   * Of an execution that continues a run: the root thread's step when its predecessor continued, and
   * the predecessor's history estimate then (the envelope it handed over), so the input this execution
   * started with can be rebuilt (`stepthread resume`).
   */
  readonly continuedFromStep?: number;
  readonly continuedFromHistory?: number;
}

export interface ExecutionIndex {
  /** Idempotent: the same record again is a no-op; a different one is CREATE_CONFLICT. */
  putExecution(record: ExecutionRecord, options?: { expiresAt?: number }): Promise<{ created: boolean }>;
  /** Consistent read; EXECUTION_NOT_FOUND when absent. */
  getExecution(executionId: string): Promise<ExecutionRecord>;
  /**
   * Sets the status (and end time). With `fromStatus`, only if the current status is that one;
   * VERSION_CONFLICT otherwise.
   */
  setExecutionStatus(
    executionId: string,
    status: ExecutionStatus,
    options?: { endTime?: string; fromStatus?: ExecutionStatus; continuedAs?: string },
  ): Promise<void>;
  /** Sets the item's expiry (DynamoDB TTL, epoch seconds), if the item exists (retention.ts). */
  expireExecution(executionId: string, expiresAt: number): Promise<void>;
  /** The records of those executions that have one, by id (BatchGetItem: consistent, 100 per request). */
  getExecutions(executionIds: readonly string[]): Promise<Map<string, ExecutionRecord>>;
  /**
   * Executions of a workflow, oldest first, or newest first with `newestFirst` (GSI: eventually
   * consistent). `limit` takes that many from the start of that order.
   */
  listExecutions(
    workflowId: string,
    options?: { limit?: number; newestFirst?: boolean },
  ): Promise<ExecutionRecord[]>;
}

export function createExecutionIndex(table: TableRef): ExecutionIndex {
  const { dynamo, tableName } = table;
  const read = async (executionId: string) =>
    (
      await dynamo.send(
        new GetCommand({ TableName: tableName, Key: itemKeys.execution(executionId), ConsistentRead: true }),
      )
    ).Item;

  return {
    async putExecution(record, options = {}) {
      const createHash = contentHash(record);
      try {
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              ...record,
              ...itemKeys.execution(record.executionId),
              ...gsi1Keys.executionOfWorkflow(record.workflowId, record.startTime, record.executionId),
              kind: 'execution',
              createHash,
              ...(options.expiresAt !== undefined ? { [TTL_ATTRIBUTE]: options.expiresAt } : {}),
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return { created: true };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      const existing = await read(record.executionId);
      if (existing?.createHash === createHash) return { created: false };
      throw new StepthreadError(
        'CREATE_CONFLICT',
        `execution ${record.executionId} already exists with different content`,
      );
    },

    async getExecution(executionId) {
      const item = await read(executionId);
      if (!item) throw new StepthreadError('EXECUTION_NOT_FOUND', `execution ${executionId} not found`);
      return entityOf<ExecutionRecord>(item);
    },

    async setExecutionStatus(executionId, status, options = {}) {
      const x = new ExpressionBuilder();
      const sets = [`${x.name('status')} = ${x.value(status)}`];
      if (options.endTime !== undefined) sets.push(`${x.name('endTime')} = ${x.value(options.endTime)}`);
      if (options.continuedAs !== undefined) {
        sets.push(`${x.name('continuedAs')} = ${x.value(options.continuedAs)}`);
      }
      let condition = 'attribute_exists(pk)';
      if (options.fromStatus !== undefined)
        condition += ` AND ${x.name('status')} = ${x.value(options.fromStatus)}`;
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.execution(executionId),
            UpdateExpression: `SET ${sets.join(', ')}`,
            ConditionExpression: condition,
            ExpressionAttributeNames: x.names,
            ExpressionAttributeValues: x.values,
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        // Only the failure path pays for a read, to say which condition failed.
        const existing = await read(executionId);
        if (!existing) throw new StepthreadError('EXECUTION_NOT_FOUND', `execution ${executionId} not found`);
        throw new StepthreadError(
          'VERSION_CONFLICT',
          `execution ${executionId} is ${String(existing.status)}, not ${String(options.fromStatus)}`,
          { cause: error },
        );
      }
    },

    async expireExecution(executionId, expiresAt) {
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.execution(executionId),
            UpdateExpression: 'SET #ttl = :ttl',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
            ExpressionAttributeValues: { ':ttl': expiresAt },
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    },

    async getExecutions(executionIds) {
      const keys = [...new Set(executionIds)].map((id) => ({ ...itemKeys.execution(id) }));
      const records = (await batchGetItems(table, keys)).map((item) => entityOf<ExecutionRecord>(item));
      return new Map(records.map((record) => [record.executionId, record]));
    },

    async listExecutions(workflowId, options = {}) {
      const items = await queryGsi1Partition(
        table,
        gsi1Partitions.executionsOfWorkflow(workflowId),
        options.limit,
        { newestFirst: options.newestFirst ?? false },
      );
      return items.map((item) => entityOf<ExecutionRecord>(item));
    },
  };
}
