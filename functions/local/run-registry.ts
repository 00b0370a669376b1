/**
 * Local runs, for `stepthread runs` and `stepthread resume`: beside each execution's index item
 * (`EXEC#<id>` / `EXEC`, written by START) the process that runs it locally writes `EXEC#<id>` /
 * `LOCAL` before the first node — which process (pid and host, so a dead one is recognised as an
 * interrupted run), the workflow it runs (so `resume` needs nothing but the id) and the file it came
 * from. A resumed run rewrites it with its own process — under the execution it resumes, which for a
 * run that continued (continue-as-new) is a later one than the first: the newest record along a run's
 * chain of executions names the process that ran it last.
 *
 * The record is also the execution's lock: one process holds a run at a time. A resume takes it with a
 * conditional write against the record it found dead (its `claim`), so of two resumes started
 * together one wins and the other is refused with EXECUTION_BUSY naming the holder; the holder lets go
 * when its run returns (`releasedAt`) or by dying.
 *
 * The workflow, the answers and the input go in the item when they are small, else together in one
 * S3 object beside it (`runs/<executionId>.json`): an item holds 400 KB at most, and a run with a
 * large input or answers must start, and resume, like any other.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { GetCommand, PutCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { StepthreadError } from '../../engine/errors.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { ObjectClient } from '../aws/s3-client.ts';
import { entityOf, isConditionalCheckFailed, type TableRef } from '../stores/dynamo-items.ts';
import type { ExecutionRecord, ExecutionStatus } from '../stores/execution-index.ts';
import { createInteractionStore, type Interaction } from '../stores/interaction-store.ts';
import { PLAIN_COMMAND_FORM, resumeCommand } from './interaction-hints.ts';
import { isSameProcessAlive, ownStamp } from './process-liveness.ts';
import { lastActivityOf } from './run-activity.ts';

const LOCAL_SORT_KEY = 'LOCAL';
const LOCAL_KIND = 'localRun';

export interface LocalRunRecord {
  readonly executionId: string;
  readonly pid: number;
  /** The process's stamp beside its pid (process-liveness.ts): a later process with its pid is another. */
  readonly stamp?: string;
  readonly host: string;
  readonly workflowId: string;
  /** The workflow as it ran, JSON (absent when it is in `detailsKey`'s object). */
  readonly workflow?: string;
  /** The workflow file, absolute, when it came from one. */
  readonly file?: string;
  /** When this process took the run (ISO). */
  readonly claimedAt: string;
  /** The `--answers` the run was given (JSON), used again when it is resumed without any. */
  readonly answers?: string;
  /** The run's input (JSON), for a run killed before its START step committed. */
  readonly input?: string;
  /** The continue-as-new threshold the run was compiled with (history events, or false: never). */
  readonly continueAfterEvents?: number | false;
  /** The S3 key of the object holding `workflow`, `answers` and `input`, when too large for the item. */
  readonly detailsKey?: string;
  /** Unique to this taking of the run: what a later one's conditional write compares (records since issue 31). */
  readonly claim?: string;
  /** When its process let the run go (its run returned): no longer held, though the process lives. */
  readonly releasedAt?: string;
}

/** A local run's workflow, answers and input, parsed. */
export interface RunDetails {
  readonly workflow?: Workflow;
  readonly answers?: unknown;
  readonly input?: Record<string, unknown>;
}

/** Where the registry writes: the table, and the bucket for details too large for an item. */
export interface RegistryStores extends TableRef {
  readonly s3: ObjectClient;
  readonly bucketName: string;
}

/** What `runs` lists: the execution, or only its local record when START never ran. */
export interface RunListing {
  readonly executionId: string;
  readonly workflowId: string;
  /** The execution's status; INTERRUPTED: RUNNING, but the local process running it is gone. */
  readonly status: ExecutionStatus | 'INTERRUPTED';
  readonly startTime: string;
  readonly endTime?: string;
  readonly rootThreadId?: string;
  /**
   * An interrupted run: the command that resumes it (with `--answers` for the questions it stopped
   * at), and when it last did anything (run-activity.ts), where its duration ends.
   */
  readonly resume?: string;
  readonly lastActivityTime?: string;
  /** Continue-as-new: the execution this one continues, and the one that continued it. */
  readonly continuedFrom?: string;
  readonly continuedAs?: string;
}

/** Workflow, answers and input together up to this many characters stay in the item (400 KB at most). */
const MAX_INLINE_DETAILS = 64_000;
const DETAILS_PREFIX = 'runs/';

const keyOf = (executionId: string) => ({ pk: `EXEC#${executionId}`, sk: LOCAL_SORT_KEY });

export async function recordLocalRun(
  stores: RegistryStores,
  run: {
    executionId: string;
    workflow: Workflow;
    file?: string;
    answers?: unknown;
    input?: Record<string, unknown>;
    continueAfterEvents?: number | false;
    now: string;
    /**
     * Take the run over from this record (what the resume found at `executionId`, undefined for none):
     * refused with EXECUTION_BUSY when another process took it meanwhile. Absent: a new run's record.
     */
    takingOver?: { held: LocalRunRecord | undefined };
  },
): Promise<LocalRunRecord> {
  const details = {
    workflow: JSON.stringify(run.workflow),
    ...(run.answers === undefined ? {} : { answers: JSON.stringify(run.answers) }),
    ...(run.input === undefined ? {} : { input: JSON.stringify(run.input) }),
  };
  const inline =
    details.workflow.length + (details.answers?.length ?? 0) + (details.input?.length ?? 0) <=
    MAX_INLINE_DETAILS;
  const detailsKey = `${DETAILS_PREFIX}${run.executionId}.json`;
  if (!inline) {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    await stores.s3.send(
      new PutObjectCommand({
        Bucket: stores.bucketName,
        Key: detailsKey,
        Body: JSON.stringify(details),
        ContentType: 'application/json',
      }),
    );
  }
  const record: LocalRunRecord = {
    executionId: run.executionId,
    pid: process.pid,
    ...stampField(),
    host: hostname(),
    workflowId: run.workflow.id,
    ...(inline ? details : { detailsKey }),
    ...(run.file === undefined ? {} : { file: run.file }),
    claimedAt: run.now,
    ...(run.continueAfterEvents === undefined ? {} : { continueAfterEvents: run.continueAfterEvents }),
    claim: randomUUID(),
  };
  try {
    await stores.dynamo.send(
      new PutCommand({
        TableName: stores.tableName,
        Item: { ...record, ...keyOf(run.executionId), kind: LOCAL_KIND },
        ...(run.takingOver === undefined ? {} : unchangedSince(run.takingOver.held)),
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    throw executionBusy(run.executionId, await getLocalRun(stores, run.executionId));
  }
  return record;
}

/** The condition that the record at a key is still `held` (no record: still none). */
function unchangedSince(held: LocalRunRecord | undefined) {
  if (held === undefined) return { ConditionExpression: 'attribute_not_exists(pk)' };
  // Records written before claims existed are told apart by their process and time.
  return held.claim === undefined
    ? {
        ConditionExpression: 'attribute_not_exists(claim) AND pid = :pid AND claimedAt = :claimedAt',
        ExpressionAttributeValues: { ':pid': held.pid, ':claimedAt': held.claimedAt },
      }
    : { ConditionExpression: 'claim = :claim', ExpressionAttributeValues: { ':claim': held.claim } };
}

/** EXECUTION_BUSY: another process holds the run (`holder`, when its record could be read). */
export function executionBusy(executionId: string, holder: LocalRunRecord | undefined): StepthreadError {
  const who =
    holder === undefined
      ? 'another process'
      : `process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}`;
  return new StepthreadError(
    'EXECUTION_BUSY',
    `execution ${executionId} is being run by ${who}; wait for it to end, or stop it, then resume`,
  );
}

/**
 * Lets go of a run this process took (`record`), once its run returned: a later `resume` from this
 * same process (a test, a console) may take it then. A record another process took since is left.
 */
export async function releaseLocalRun(table: TableRef, record: LocalRunRecord): Promise<void> {
  try {
    await table.dynamo.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: keyOf(record.executionId),
        UpdateExpression: 'SET releasedAt = :now',
        ConditionExpression: 'claim = :claim',
        ExpressionAttributeValues: { ':now': new Date().toISOString(), ':claim': record.claim },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
  }
}

export async function getLocalRun(table: TableRef, executionId: string): Promise<LocalRunRecord | undefined> {
  const { Item } = await table.dynamo.send(
    new GetCommand({ TableName: table.tableName, Key: keyOf(executionId), ConsistentRead: true }),
  );
  return Item ? entityOf<LocalRunRecord>(Item) : undefined;
}

/**
 * The local record of the process that ran a run last: the newest along its executions (first to
 * last), since a resumed run records itself under the execution it resumed.
 */
export async function latestLocalRun(
  table: TableRef,
  chain: readonly string[],
): Promise<LocalRunRecord | undefined> {
  for (let i = chain.length - 1; i >= 0; i -= 1) {
    const run = await getLocalRun(table, chain[i]!);
    if (run !== undefined) return run;
  }
  return undefined;
}

/**
 * The local record of the process that runs an execution: its own, else its predecessor's along
 * `continuedFrom` (a run that continued is recorded under the execution it started or resumed in).
 */
async function localRunAlong(
  execution: ExecutionRecord,
  localOf: (executionId: string) => LocalRunRecord | undefined | Promise<LocalRunRecord | undefined>,
  executionOf: (executionId: string) => ExecutionRecord | undefined | Promise<ExecutionRecord | undefined>,
): Promise<LocalRunRecord | undefined> {
  const seen = new Set<string>();
  for (let at: ExecutionRecord | undefined = execution; at && !seen.has(at.executionId); ) {
    seen.add(at.executionId);
    const local = await localOf(at.executionId);
    if (local) return local;
    at = at.continuedFrom === undefined ? undefined : await executionOf(at.continuedFrom);
  }
  return undefined;
}

/** Where `runnerGone` finds the run records it follows: by id, from the table or from a scan already made. */
export interface RunnerLookups {
  readonly localOf: (executionId: string) => LocalRunRecord | undefined | Promise<LocalRunRecord | undefined>;
  readonly executionOf: (
    executionId: string,
  ) => ExecutionRecord | undefined | Promise<ExecutionRecord | undefined>;
}

/**
 * Whether an execution stored as RUNNING is in fact interrupted: run here by a local process (its own
 * record or its predecessor's along `continuedFrom`) that is gone. The one question `runs`, `inspect`,
 * `pending` and `dev` ask, so they never disagree on what is INTERRUPTED.
 */
export async function runnerGone(execution: ExecutionRecord, lookups: RunnerLookups): Promise<boolean> {
  if (execution.status !== 'RUNNING') return false;
  const runner = await localRunAlong(execution, lookups.localOf, lookups.executionOf);
  return runner !== undefined && !isRunnerAlive(runner);
}

/** The workflow, answers and input a local run was recorded with, from its item or its details object. */
export async function detailsOfRun(stores: RegistryStores, run: LocalRunRecord): Promise<RunDetails> {
  let recorded: Pick<LocalRunRecord, 'workflow' | 'answers' | 'input'> = run;
  const unreadable = (what: string, error: unknown) =>
    new StepthreadError(
      'RUN_NOT_RESUMABLE',
      `execution ${run.executionId}: its recorded ${what} is unreadable (${(error as Error).message})`,
      { cause: error },
    );
  if (run.detailsKey !== undefined) {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const response = await stores.s3.send(
        new GetObjectCommand({ Bucket: stores.bucketName, Key: run.detailsKey }),
      );
      recorded = JSON.parse((await response.Body?.transformToString('utf-8')) ?? '');
    } catch (error) {
      throw unreadable(`workflow, answers and input (${run.detailsKey})`, error);
    }
  }
  const parse = (what: 'workflow' | 'answers' | 'input') => {
    const text = recorded[what];
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw unreadable(what, error);
    }
  };
  const [workflow, answers, input] = [parse('workflow'), parse('answers'), parse('input')];
  return {
    ...(workflow === undefined ? {} : { workflow: workflow as Workflow }),
    ...(answers === undefined ? {} : { answers }),
    ...(input === undefined ? {} : { input: input as Record<string, unknown> }),
  };
}

/**
 * Whether the process that ran a local run still holds it: has not released it, and is alive, not a
 * zombie (on this host; another host's: assumed so).
 */
export function isRunnerAlive(run: Pick<LocalRunRecord, 'pid' | 'host' | 'stamp' | 'releasedAt'>): boolean {
  if (run.releasedAt !== undefined) return false;
  if (run.host !== hostname()) return true;
  if (run.pid === process.pid && run.stamp === ownStamp()) return true;
  return isSameProcessAlive(run.pid, run.stamp);
}

function stampField(): { stamp?: string } {
  const stamp = ownStamp();
  return stamp === undefined ? {} : { stamp };
}

/**
 * Every execution in the table with its local record, newest first (a Scan: for local data).
 * `form` (the CLI as the user ran it, and ` --data-dir <dir>` or '') writes the resume commands.
 */
export async function listRuns(table: TableRef, form = PLAIN_COMMAND_FORM): Promise<RunListing[]> {
  const executions = new Map<string, ExecutionRecord>();
  const locals = new Map<string, LocalRunRecord>();
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await table.dynamo.send(
      new ScanCommand({
        TableName: table.tableName,
        FilterExpression: '#kind IN (:execution, :local)',
        ExpressionAttributeNames: { '#kind': 'kind' },
        ExpressionAttributeValues: { ':execution': 'execution', ':local': LOCAL_KIND },
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      if (item.kind === LOCAL_KIND) {
        const run = entityOf<LocalRunRecord>(item);
        locals.set(run.executionId, run);
      } else {
        const execution = entityOf<ExecutionRecord>(item);
        executions.set(execution.executionId, execution);
      }
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  // A run that continued (continue-as-new) is one chain: an execution a successor has claimed continued
  // (its own record says so a moment later), and the one in flight is run by the process that recorded
  // itself last along the chain.
  const continued = new Set<string>();
  for (const execution of executions.values()) {
    const from = execution.continuedFrom === undefined ? undefined : executions.get(execution.continuedFrom);
    if (from?.rootThreadId === execution.rootThreadId) continued.add(from.executionId);
  }
  // The questions interrupted runs stopped at, asked for once (a Query of the open ones) if any is.
  let open: Promise<Interaction[]> | undefined;
  const waitingIn = async (executionId: string) => {
    open ??= createInteractionStore(table).listOpen();
    return (await open).filter((interaction) => interaction.executionId === executionId);
  };
  const listed: RunListing[] = [];
  for (const execution of executions.values()) {
    const status =
      execution.status === 'RUNNING' && continued.has(execution.executionId) ? 'CONTINUED' : execution.status;
    const interrupted =
      status === 'RUNNING' &&
      (await runnerGone(execution, {
        localOf: (id) => locals.get(id),
        executionOf: (id) => executions.get(id),
      }));
    const waiting = interrupted ? await waitingIn(execution.executionId) : [];
    const claimedAt = locals.get(execution.executionId)?.claimedAt;
    listed.push({
      executionId: execution.executionId,
      workflowId: execution.workflowId,
      status: interrupted ? 'INTERRUPTED' : status,
      startTime: execution.startTime,
      ...(execution.endTime ? { endTime: execution.endTime } : {}),
      rootThreadId: execution.rootThreadId,
      ...(interrupted
        ? {
            resume: resumeCommand(execution.executionId, waiting, form),
            lastActivityTime: await lastActivityOf(table, execution, {
              waiting,
              ...(claimedAt === undefined ? {} : { claimedAt }),
            }),
          }
        : {}),
      ...(execution.continuedFrom ? { continuedFrom: execution.continuedFrom } : {}),
      ...(execution.continuedAs ? { continuedAs: execution.continuedAs } : {}),
    });
  }
  // Killed before START committed: nothing ran; listed so the id printed at the start is found.
  for (const local of locals.values()) {
    if (executions.has(local.executionId)) continue;
    const alive = isRunnerAlive(local);
    listed.push({
      executionId: local.executionId,
      workflowId: local.workflowId,
      status: alive ? 'RUNNING' : 'INTERRUPTED',
      startTime: local.claimedAt,
      // Nothing ran: its last activity is when its process took it.
      ...(alive
        ? {}
        : {
            resume: resumeCommand(local.executionId, [], form),
            lastActivityTime: local.claimedAt,
          }),
    });
  }
  listed.sort((a, b) => b.startTime.localeCompare(a.startTime) || a.executionId.localeCompare(b.executionId));
  return listed;
}
