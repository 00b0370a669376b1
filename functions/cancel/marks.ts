/**
 * The cancel mark of a run: one small item beside its root thread (`THREAD#<root>` / `CANCEL`),
 * written once by whoever cancels the run (`stepthread cancel`, dev's Stop) and read by whatever waits
 * on the run's behalf — a model or tool call in the LLM and TOOL functions, a local run waiting on a
 * model, a tool or a person — so the wait ends within one poll. A separate item, not a head
 * attribute: a poll reads a few bytes (half a read unit), and writing the mark moves no version, so it
 * never makes a step in flight conflict; the run's records are cancelled apart (cancel-run.ts).
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { entityOf, isConditionalCheckFailed, type TableRef } from '../stores/dynamo-items.ts';
import { itemKeys } from '../stores/table.ts';

/** Why and when a run was cancelled, and the execution it was running then. */
export interface CancelMark {
  readonly rootThreadId: string;
  readonly executionId: string;
  /** ISO time. */
  readonly at: string;
  readonly reason?: string;
}

export interface CancelMarks {
  /**
   * Marks the run cancelled; the first mark stays (a second cancel keeps the first reason). Returns
   * the mark as stored.
   */
  put(mark: CancelMark): Promise<CancelMark>;
  /** The run's mark, if it was cancelled. Eventually consistent unless `consistent`: polls need no more. */
  get(rootThreadId: string, options?: { consistent?: boolean }): Promise<CancelMark | undefined>;
}

const CANCEL_SORT_KEY = 'CANCEL';

const keyOf = (rootThreadId: string) => ({ pk: itemKeys.thread(rootThreadId).pk, sk: CANCEL_SORT_KEY });

export function createCancelMarks(table: TableRef): CancelMarks {
  const { dynamo, tableName } = table;
  const get: CancelMarks['get'] = async (rootThreadId, options = {}) => {
    const { Item } = await dynamo.send(
      new GetCommand({
        TableName: tableName,
        Key: keyOf(rootThreadId),
        ...(options.consistent ? { ConsistentRead: true } : {}),
      }),
    );
    if (Item === undefined) return undefined;
    return entityOf<CancelMark>(Item);
  };
  return {
    get,
    async put(mark) {
      try {
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: { ...keyOf(mark.rootThreadId), kind: 'cancelMark', ...mark },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return mark;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      return (await get(mark.rootThreadId, { consistent: true })) ?? mark;
    },
  };
}
