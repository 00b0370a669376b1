/**
 * USER_INTERACTION items: one per (thread, node) — `THREAD#<id>` / `INTERACTION#<node>` — holding
 * what a person needs to answer (type, message, options, deadline) and the task token `respond`
 * sends the answer with. A node visited again (a loop) overwrites its item at the higher step.
 *
 * Only PENDING items carry GSI1 keys, all in one sparse partition (`INTERACTIONS#OPEN`, sorted by
 * execution, then time): every listing is a Query, and answered items drop out of it. The item is
 * closed (PENDING → ANSWERED | FAILED) by the `answer` Task that commits the node's step, with one
 * conditional update that a retry repeats harmlessly; operators only read it.
 */
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import type { AnswerVariable } from '../../engine/model/interaction-reply.ts';
import type { UserInteractionType } from '../../engine/model/schema.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { entityOf, isConditionalCheckFailed, type TableRef } from './dynamo-items.ts';
import {
  GSI1_NAME,
  GSI1_PARTITION_KEY,
  GSI1_SORT_KEY,
  gsi1Keys,
  gsi1Partitions,
  itemKeys,
  openInteractionsOfExecution,
  TTL_ATTRIBUTE,
} from './table.ts';

export const INTERACTION_KIND = 'interaction';
export const HELD_TURN_KIND = 'held-turn';

export type InteractionStatus = 'PENDING' | 'ANSWERED' | 'FAILED';

/** A person's answer, checked against the interaction's type. */
export type InteractionAnswer =
  | { readonly kind: 'approval'; readonly approved: boolean; readonly reason?: string }
  | { readonly kind: 'input'; readonly value: unknown }
  | { readonly kind: 'selection'; readonly index: number; readonly option: string }
  /** show_message: nothing to answer; the message was shown. */
  | { readonly kind: 'acknowledged' };

/** How an interaction ended: answered (the run continues) or failed (the run takes its Catch). */
export type InteractionResolution =
  | { readonly outcome: 'ANSWERED'; readonly answer: InteractionAnswer }
  | { readonly outcome: 'FAILED'; readonly code: ErrorCode; readonly reason: string };

/**
 * A resolution as the item keeps it: an answer over 16 KB is kept as its digest, since the item
 * holds 400 KB at most and the answer itself is in the node's step (by reference when large). What
 * reads it back only compares it with a reply sent again (`answersMatch`).
 */
export type StoredResolution =
  | InteractionResolution
  | {
      readonly outcome: 'ANSWERED';
      readonly answerDigest: { readonly sha256: string; readonly bytes: number };
    };

const MAX_INLINE_ANSWER_BYTES = 16 * 1024;

export function storedResolution(resolution: InteractionResolution): StoredResolution {
  if (resolution.outcome !== 'ANSWERED') return resolution;
  const json = canonicalJson(resolution.answer);
  const bytes = Buffer.byteLength(json);
  if (bytes <= MAX_INLINE_ANSWER_BYTES) return resolution;
  return { outcome: 'ANSWERED', answerDigest: { sha256: sha256Hex(json), bytes } };
}

/** Whether a stored resolution recorded exactly this answer. */
export function answersMatch(stored: StoredResolution, answer: InteractionAnswer): boolean {
  if (stored.outcome !== 'ANSWERED') return false;
  const json = canonicalJson(answer);
  return 'answerDigest' in stored
    ? stored.answerDigest.sha256 === sha256Hex(json)
    : canonicalJson(stored.answer) === json;
}

export interface Interaction {
  /** `<threadId>/<nodeId>`: what `stepthread respond` accepts. */
  readonly interactionId: string;
  readonly executionId: string;
  readonly workflowId: string;
  readonly rootThreadId: string;
  readonly threadId: string;
  readonly nodeId: string;
  /** The node id as its workflow file spells it (differs inside subgraphs). */
  readonly authorNodeId: string;
  /** The thread's step count when the node was reached (the answer is that step's commit). */
  readonly step: number;
  readonly interactionType: UserInteractionType;
  readonly message?: string;
  readonly options?: readonly string[];
  /**
   * The variable the answer is stored in and its declared type, when that bounds the answer (an
   * ask_for_input into a `number` variable): an answer that does not fit is refused before it is
   * sent, so the run goes on waiting instead of failing. Absent when any answer fits.
   */
  readonly answerVariable?: AnswerVariable;
  /** ISO times. */
  readonly requestedAt: string;
  readonly deadline?: string;
  readonly taskToken: string;
  readonly status: InteractionStatus;
  readonly resolution?: StoredResolution;
  readonly resolvedAt?: string;
  /**
   * An LLM node's tool call held for approval (an `ask_for_approval`): which call, what the model
   * asked it with, and the text of the model's message that asked.
   */
  readonly toolCall?: HeldToolCall;
  /**
   * Which question of the visit this is, from 1, when one visit asks several (an LLM node asks one
   * approval after the other); absent for a USER_INTERACTION, which asks once.
   */
  readonly ask?: number;
}

export interface HeldToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
  /** The text of the model's message that asked for the call ('' when it said nothing). */
  readonly message: string;
}

/**
 * An LLM node's request stopped before a tool call that waits for approval: where it was (`turn`,
 * JSON of the tool loop's state, or `turnRef` to it in the value store when large), so the answer
 * continues it without asking the model that turn again. One item per (thread, node), replaced by
 * each later question of the visit; `step` and `ask` say which.
 */
export interface HeldTurn {
  readonly threadId: string;
  readonly nodeId: string;
  readonly step: number;
  readonly ask: number;
  readonly call: HeldToolCall;
  readonly turn?: string;
  readonly turnRef?: unknown;
}

/** Which visit of which interaction: the item of (thread, node) as asked at `step`. */
export interface InteractionVisit {
  readonly threadId: string;
  readonly nodeId: string;
  readonly step: number;
  /** Which question of the visit, when it asks several (Interaction.ask). */
  readonly ask?: number;
}

export interface InteractionStore {
  /**
   * Records a PENDING interaction unless this step's interaction was already resolved; returns the
   * stored item either way (a retried request refreshes the task token of a still-PENDING item).
   */
  recordPending(interaction: Interaction, options?: { expiresAt?: number }): Promise<Interaction>;
  /** INTERACTION_NOT_FOUND when absent. */
  getInteraction(threadId: string, nodeId: string): Promise<Interaction>;
  /**
   * PENDING → resolved, for that visit only. Idempotent: false (and no change) when the visit was
   * already closed, was replaced by a later visit, or is gone.
   */
  close(visit: InteractionVisit, resolution: InteractionResolution, at: string): Promise<boolean>;
  /** Keeps where an LLM node's request stopped for an approval (replacing the node's earlier one). */
  holdTurn(turn: HeldTurn, options?: { expiresAt?: number }): Promise<void>;
  /** The held turn of (thread, node), whichever visit it is of; undefined when there is none. */
  getHeldTurn(threadId: string, nodeId: string): Promise<HeldTurn | undefined>;
  /** Open interactions of a thread (one Query on its partition). */
  listOpenOfThread(threadId: string): Promise<Interaction[]>;
  /** Open interactions of an execution, oldest first (one GSI1 Query, eventually consistent). */
  listOpenOfExecution(executionId: string): Promise<Interaction[]>;
  /** Every open interaction, oldest first (one GSI1 Query on the sparse partition). */
  listOpen(): Promise<Interaction[]>;
  /**
   * Locally only (`stepthread respond` to a run another process runs): leaves `reply` (JSON) on the
   * still-PENDING visit whose task token this is, for the waiting process to take. False when it is
   * closed, asked again, or holds an offer not yet due (`until`, ISO) from another respond.
   */
  offerLocalReply(interaction: Interaction, offer: LocalReplyOffer, now: string): Promise<boolean>;
  /** Whether this visit holds an offer not yet taken (one consistent read). */
  hasLocalReply(interaction: Interaction): Promise<boolean>;
  /** The offer on this visit, removed (so exactly one waiter takes it); undefined when there is none. */
  takeLocalReply(interaction: Interaction): Promise<LocalReplyOffer | undefined>;
  /** Removes this very offer unless it was taken; true when it was still there (nobody took it). */
  withdrawLocalReply(interaction: Interaction, offer: LocalReplyOffer): Promise<boolean>;
}

/** An answer `respond` left on a local interaction's item for the process that waits on it. */
export interface LocalReplyOffer {
  /** The reply, as JSON. */
  readonly reply: string;
  /** ISO: respond withdraws it unless taken by then; after it, another respond may offer its own. */
  readonly until: string;
}

/** The item attribute holding a LocalReplyOffer; never part of an Interaction as read. */
const LOCAL_REPLY = 'localReply';

export function interactionIdOf(threadId: string, nodeId: string): string {
  return `${threadId}/${nodeId}`;
}

/** Thread ids never contain `/`, node ids may: split at the first one. */
export function parseInteractionId(value: string): { threadId: string; nodeId: string } | undefined {
  const at = value.indexOf('/');
  if (at <= 0 || at === value.length - 1) return undefined;
  return { threadId: value.slice(0, at), nodeId: value.slice(at + 1) };
}

export class InteractionConflict extends StepthreadError {
  readonly current: Interaction;
  constructor(current: Interaction) {
    super(
      'INTERACTION_ALREADY_ANSWERED',
      `interaction ${current.interactionId} is already ${current.status.toLowerCase()}${current.resolvedAt ? ` (at ${current.resolvedAt})` : ''}`,
      { nodeId: current.nodeId },
    );
    this.current = current;
  }
}

function toInteraction(item: Record<string, unknown>): Interaction {
  const {
    kind: _kind,
    [LOCAL_REPLY]: _offer,
    ...rest
  } = entityOf<Interaction & { kind?: string; [LOCAL_REPLY]?: unknown }>(item);
  return rest;
}

export function createInteractionStore(table: TableRef): InteractionStore {
  const { dynamo, tableName } = table;

  const get = async (threadId: string, nodeId: string): Promise<Interaction | undefined> => {
    const { Item } = await dynamo.send(
      new GetCommand({
        TableName: tableName,
        Key: itemKeys.pendingInteraction(threadId, nodeId),
        ConsistentRead: true,
      }),
    );
    return Item ? toInteraction(Item) : undefined;
  };

  /** Open items of the sparse GSI1 partition, optionally under one sort-key prefix. */
  const queryOpen = async (prefix?: string): Promise<Interaction[]> => {
    const items: Interaction[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await dynamo.send(
        new QueryCommand({
          TableName: tableName,
          IndexName: GSI1_NAME,
          KeyConditionExpression:
            prefix === undefined ? '#pk = :pk' : '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: {
            '#pk': GSI1_PARTITION_KEY,
            ...(prefix === undefined ? {} : { '#sk': GSI1_SORT_KEY }),
          },
          ExpressionAttributeValues: {
            ':pk': gsi1Partitions.openInteractions(),
            ...(prefix === undefined ? {} : { ':prefix': prefix }),
          },
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(page.Items ?? []).map(toInteraction));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    // The index is eventually consistent: an item closed a moment ago may still be listed.
    return items.filter((interaction) => interaction.status === 'PENDING');
  };

  const hasLocalReply = async (interaction: Interaction): Promise<boolean> => {
    const { Item } = await dynamo.send(
      new GetCommand({
        TableName: tableName,
        Key: itemKeys.pendingInteraction(interaction.threadId, interaction.nodeId),
        ConsistentRead: true,
      }),
    );
    return Item?.[LOCAL_REPLY] !== undefined && Item.taskToken === interaction.taskToken;
  };

  return {
    async recordPending(interaction, options = {}) {
      const item = {
        ...interaction,
        ...itemKeys.pendingInteraction(interaction.threadId, interaction.nodeId),
        ...gsi1Keys.openInteraction(
          interaction.executionId,
          interaction.requestedAt,
          interaction.threadId,
          interaction.nodeId,
        ),
        kind: INTERACTION_KIND,
        ...(options.expiresAt === undefined ? {} : { [TTL_ATTRIBUTE]: options.expiresAt }),
      };
      const ask = interaction.ask;
      try {
        await dynamo.send(
          new PutCommand({
            TableName: tableName,
            Item: item,
            // A new visit (higher step) replaces the item; the same visit only while it is still open,
            // or — for a visit that asks several questions — with a later question of it.
            ConditionExpression:
              ask === undefined
                ? 'attribute_not_exists(pk) OR #step < :step OR (#step = :step AND #status = :pending)'
                : 'attribute_not_exists(pk) OR #step < :step OR (#step = :step AND (attribute_not_exists(#ask) OR #ask < :ask OR (#ask = :ask AND #status = :pending)))',
            ExpressionAttributeNames: {
              '#status': 'status',
              '#step': 'step',
              ...(ask === undefined ? {} : { '#ask': 'ask' }),
            },
            ExpressionAttributeValues: {
              ':step': interaction.step,
              ':pending': 'PENDING',
              ...(ask === undefined ? {} : { ':ask': ask }),
            },
          }),
        );
        return interaction;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        const current = await get(interaction.threadId, interaction.nodeId);
        if (current === undefined) throw error;
        return current;
      }
    },

    async getInteraction(threadId, nodeId) {
      const found = await get(threadId, nodeId);
      if (found === undefined) {
        throw new StepthreadError(
          'INTERACTION_NOT_FOUND',
          `no interaction of node ${nodeId} on thread ${threadId}`,
          { nodeId },
        );
      }
      return found;
    },

    async close(visit, resolution, at) {
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.pendingInteraction(visit.threadId, visit.nodeId),
            UpdateExpression:
              'SET #status = :status, resolution = :resolution, resolvedAt = :at REMOVE #gpk, #gsk',
            ConditionExpression:
              visit.ask === undefined
                ? '#status = :pending AND #step = :step'
                : '#status = :pending AND #step = :step AND #ask = :ask',
            ExpressionAttributeNames: {
              '#status': 'status',
              '#step': 'step',
              '#gpk': GSI1_PARTITION_KEY,
              '#gsk': GSI1_SORT_KEY,
              ...(visit.ask === undefined ? {} : { '#ask': 'ask' }),
            },
            ExpressionAttributeValues: {
              ':status': resolution.outcome,
              ':resolution': storedResolution(resolution),
              ':at': at,
              ':pending': 'PENDING',
              ':step': visit.step,
              ...(visit.ask === undefined ? {} : { ':ask': visit.ask }),
            },
          }),
        );
        return true;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        return false;
      }
    },

    async holdTurn(turn, options = {}) {
      await dynamo.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            ...turn,
            ...itemKeys.heldTurn(turn.threadId, turn.nodeId),
            kind: HELD_TURN_KIND,
            ...(options.expiresAt === undefined ? {} : { [TTL_ATTRIBUTE]: options.expiresAt }),
          },
        }),
      );
    },

    async getHeldTurn(threadId, nodeId) {
      const { Item } = await dynamo.send(
        new GetCommand({
          TableName: tableName,
          Key: itemKeys.heldTurn(threadId, nodeId),
          ConsistentRead: true,
        }),
      );
      if (Item === undefined) return undefined;
      const {
        kind: _kind,
        [TTL_ATTRIBUTE]: _ttl,
        ...turn
      } = entityOf<HeldTurn & { kind?: string; [TTL_ATTRIBUTE]?: number }>(Item);
      return turn;
    },

    async listOpenOfThread(threadId) {
      const { pk } = itemKeys.thread(threadId);
      const items: Interaction[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await dynamo.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
            FilterExpression: '#status = :pending',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':pk': pk, ':prefix': 'INTERACTION#', ':pending': 'PENDING' },
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        );
        items.push(...(page.Items ?? []).map(toInteraction));
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      return items;
    },

    async listOpenOfExecution(executionId) {
      return queryOpen(openInteractionsOfExecution(executionId));
    },

    async listOpen() {
      const open = await queryOpen();
      return open.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
    },

    async offerLocalReply(interaction, offer, now) {
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.pendingInteraction(interaction.threadId, interaction.nodeId),
            UpdateExpression: 'SET #offer = :offer',
            ConditionExpression:
              '#status = :pending AND taskToken = :token AND (attribute_not_exists(#offer) OR #offer.#until < :now)',
            ExpressionAttributeNames: { '#status': 'status', '#offer': LOCAL_REPLY, '#until': 'until' },
            ExpressionAttributeValues: {
              ':offer': offer,
              ':pending': 'PENDING',
              ':token': interaction.taskToken,
              ':now': now,
            },
          }),
        );
        return true;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        return false;
      }
    },

    hasLocalReply,

    async takeLocalReply(interaction) {
      // A read first: the waiting process polls, and almost every poll finds nothing to take.
      if (!(await hasLocalReply(interaction))) return undefined;
      const key = itemKeys.pendingInteraction(interaction.threadId, interaction.nodeId);
      try {
        const { Attributes } = await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: key,
            UpdateExpression: 'REMOVE #offer',
            ConditionExpression: 'attribute_exists(#offer) AND taskToken = :token',
            ExpressionAttributeNames: { '#offer': LOCAL_REPLY },
            ExpressionAttributeValues: { ':token': interaction.taskToken },
            ReturnValues: 'UPDATED_OLD',
          }),
        );
        return Attributes?.[LOCAL_REPLY] as LocalReplyOffer | undefined;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        return undefined;
      }
    },

    async withdrawLocalReply(interaction, offer) {
      try {
        await dynamo.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKeys.pendingInteraction(interaction.threadId, interaction.nodeId),
            UpdateExpression: 'REMOVE #offer',
            ConditionExpression: '#offer.#until = :until AND #offer.reply = :reply',
            ExpressionAttributeNames: { '#offer': LOCAL_REPLY, '#until': 'until' },
            ExpressionAttributeValues: { ':until': offer.until, ':reply': offer.reply },
          }),
        );
        return true;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        return false;
      }
    },
  };
}
