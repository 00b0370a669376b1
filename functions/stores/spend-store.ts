/**
 * What a run spent and what it may spend: one small item per run (`THREAD#<root thread>` / `SPEND`),
 * shared by every thread of the run's tree (fork children, list items, subgraphs, and the
 * executions a run continues into, which keep its root thread). Counts only grow, by atomic `ADD`s,
 * so parallel branches never lose one another's spend; a tool call is counted by a conditional `ADD`
 * that refuses the call past `maxToolCalls`. The run's budget is kept beside the counts (START writes
 * it), so every step finds both in one read.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Budget } from '../../engine/model/schema.ts';
import { batchGetItems, isConditionalCheckFailed, type TableRef } from './dynamo-items.ts';
import { itemKeys } from './table.ts';

/** A run's spend so far and its budget (all counts 0 before its first model or tool call). */
export interface RunSpend {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Input plus output tokens: what `maxTokens` counts. */
  readonly tokens: number;
  /** The priced calls' cost in nano-dollars (1e-9 USD): what `maxCostUsd` counts. */
  readonly costNanoUsd: number;
  readonly modelCalls: number;
  /** Model calls whose model had no price (their cost is unknown, counted as 0). */
  readonly unpricedCalls: number;
  readonly toolCalls: number;
  /** The run's budget (absent: no limits). */
  readonly budget?: Budget;
}

/** One model call's spend. */
export interface ModelCallSpend {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Undefined when the model has no price. */
  readonly costNanoUsd: number | undefined;
}

export interface SpendStore {
  /** Sets the run's budget (a retried START sets the same), keeping the counts. */
  setBudget(rootThreadId: string, budget: Budget): Promise<void>;
  /** Consistent read; undefined before the run spent anything and when it has no budget. */
  get(rootThreadId: string): Promise<RunSpend | undefined>;
  /** Several runs at once (BatchGetItem), by root thread id; runs with no item are left out. */
  getMany(rootThreadIds: readonly string[]): Promise<Map<string, RunSpend>>;
  /** Adds one model call; returns the run's spend after it. */
  addModelCall(rootThreadId: string, call: ModelCallSpend): Promise<RunSpend>;
  /**
   * Counts one tool call unless the run's `maxToolCalls` is spent: the spend after it, or undefined
   * when refused (then nothing is counted).
   */
  reserveToolCall(rootThreadId: string): Promise<RunSpend | undefined>;
}

// Short attribute names: the item is rewritten by every model call, and billed by its size.
const A = {
  inputTokens: 'ti',
  outputTokens: 'to',
  costNanoUsd: 'cn',
  modelCalls: 'mc',
  unpricedCalls: 'mu',
  toolCalls: 'tc',
  budget: 'budget',
} as const;

function num(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}

export function spendOf(item: Record<string, unknown>): RunSpend {
  const inputTokens = num(item[A.inputTokens]);
  const outputTokens = num(item[A.outputTokens]);
  const budget = item[A.budget] as Budget | undefined;
  return {
    inputTokens,
    outputTokens,
    tokens: inputTokens + outputTokens,
    costNanoUsd: num(item[A.costNanoUsd]),
    modelCalls: num(item[A.modelCalls]),
    unpricedCalls: num(item[A.unpricedCalls]),
    toolCalls: num(item[A.toolCalls]),
    ...(budget !== undefined ? { budget } : {}),
  };
}

export function createSpendStore({ dynamo, tableName }: TableRef): SpendStore {
  return {
    async setBudget(rootThreadId, budget) {
      await dynamo.send(
        new UpdateCommand({
          TableName: tableName,
          Key: itemKeys.spend(rootThreadId),
          UpdateExpression: 'SET #kind = :kind, #budget = :budget',
          ExpressionAttributeNames: { '#kind': 'kind', '#budget': A.budget },
          ExpressionAttributeValues: { ':kind': 'spend', ':budget': budget },
        }),
      );
    },

    async get(rootThreadId) {
      const { Item } = await dynamo.send(
        new GetCommand({ TableName: tableName, Key: itemKeys.spend(rootThreadId), ConsistentRead: true }),
      );
      return Item ? spendOf(Item) : undefined;
    },

    async getMany(rootThreadIds) {
      const items = await batchGetItems(
        { dynamo, tableName },
        [...new Set(rootThreadIds)].map((id) => ({ ...itemKeys.spend(id) })),
      );
      return new Map(items.map((item) => [String(item.pk).slice('THREAD#'.length), spendOf(item)]));
    },

    async addModelCall(rootThreadId, call) {
      const priced = call.costNanoUsd !== undefined;
      const { Attributes } = await dynamo.send(
        new UpdateCommand({
          TableName: tableName,
          Key: itemKeys.spend(rootThreadId),
          UpdateExpression: `SET #kind = :kind ADD #ti :ti, #to :to, #mc :one, ${priced ? '#cn :cn' : '#mu :one'}`,
          ExpressionAttributeNames: {
            '#kind': 'kind',
            '#ti': A.inputTokens,
            '#to': A.outputTokens,
            '#mc': A.modelCalls,
            ...(priced ? { '#cn': A.costNanoUsd } : { '#mu': A.unpricedCalls }),
          },
          ExpressionAttributeValues: {
            ':kind': 'spend',
            ':ti': call.inputTokens,
            ':to': call.outputTokens,
            ':one': 1,
            ...(priced ? { ':cn': call.costNanoUsd } : {}),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return spendOf(Attributes ?? {});
    },

    async reserveToolCall(rootThreadId) {
      try {
        const { Attributes } = await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.spend(rootThreadId),
            UpdateExpression: 'SET #kind = :kind ADD #tc :one',
            // Past the limit the call is refused, so parallel branches never run more than it allows.
            ConditionExpression:
              'attribute_not_exists(#budget.#max) OR attribute_not_exists(#tc) OR #tc < #budget.#max',
            ExpressionAttributeNames: {
              '#kind': 'kind',
              '#tc': A.toolCalls,
              '#budget': A.budget,
              '#max': 'maxToolCalls',
            },
            ExpressionAttributeValues: { ':kind': 'spend', ':one': 1 },
            ReturnValues: 'ALL_NEW',
          }),
        );
        return spendOf(Attributes ?? {});
      } catch (error) {
        if (isConditionalCheckFailed(error)) return undefined;
        throw error;
      }
    },
  };
}
