/**
 * The node runs of the execution page, kept per thread between requests so a refresh reads only the
 * steps committed since the previous one. The console asks for the page again after each burst of
 * live events: folding each thread's whole journal every time made a refresh of a 4,500-step loop
 * read 4,500 step records, and a long run's later refreshes ever more.
 *
 * Why it is exact: a step record is written once and never changes after the head update that
 * commits it (functions/stores/thread-store.ts; a record past the head's `step` is an attempt that
 * may be re-run and is never read here), so the fold of steps 1..k is the same on every later
 * request. A copy's history starts with its source's steps up to the copy, committed before the copy
 * was made. The events recorded outside steps (the head's creation events, and the batches of
 * status changes) are read again on each request while the thread runs: they are few, and only
 * node events change the runs, so a thread with a node event outside its steps (none is recorded so
 * today) is folded whole as before. A thread that ended (a terminal status has no transition) is
 * not read again.
 */
import type { StepthreadEvent } from '../../engine/events.ts';
import { isTerminalStatus } from '../../engine/thread/status.ts';
import type { ModelUsage, Thread, ToolCallCounts } from '../../engine/thread/types.ts';
import { copySourceOf, type StepMeter, type ThreadStore } from '../../functions/stores/thread-store.ts';
import { addStep, type NodeMeters } from '../aws-cost.ts';
import { type NodeRun, runTypeOf, subgraphOf } from '../commands/inspect.ts';
import { addUsage } from '../run-cost.ts';

/** What the page shows of a thread's node runs. */
export interface NodeRunsSummary {
  /** Its latest `keep` runs, oldest first. */
  readonly latest: NodeRun[];
  /** How many runs it has in all. */
  readonly total: number;
  /** Per node, in the order the nodes first ran: how many runs, the latest of them, and their model calls in all. */
  readonly byNode: Map<string, NodeRunsOfNode>;
  /** Per node, what the thread's own steps bring to the run's AWS cost estimate (cli/aws-cost.ts). */
  readonly meters: readonly NodeMeters[];
}

export interface NodeRunsOfNode {
  runs: number;
  last: NodeRun;
  /** The node's model calls over all its runs on the thread (LLM nodes). */
  usage?: ModelUsage;
  /** An LLM node's tool calls over all its runs on the thread, and how many returned an error to the model. */
  toolCalls?: ToolCallCounts;
}

/** Two counts of tool calls added (`approvals` is the AWS estimate's, not the page's). */
export function addToolCalls(a: ToolCallCounts | undefined, b: ToolCallCounts): ToolCallCounts {
  return { calls: (a?.calls ?? 0) + b.calls, failed: (a?.failed ?? 0) + b.failed };
}

/** Threads whose fold is kept (least recently shown dropped first): a long-lived `dev` holds no more. */
export const MAX_CACHED_THREADS = 1000;

type Store = Pick<ThreadStore, 'getThread' | 'getCopySource' | 'readSteps' | 'readJournal'>;

const isNodeEvent = (event: StepthreadEvent) =>
  event.type === 'NODE_STARTED' || event.type === 'NODE_COMPLETED' || event.type === 'NODE_FAILED';

interface FoldState {
  latest: NodeRun[];
  total: number;
  byNode: Map<string, NodeRunsOfNode>;
  /** Runs started and not ended, by node (a node's new start replaces its open run, as in inspect). */
  open: Map<string, NodeRun>;
  /** The event before `pending`: a SUBGRAPH's start is typed by its neighbours. */
  previous: StepthreadEvent | undefined;
  /** The latest event, folded once the one after it is known (or at the end). */
  pending: StepthreadEvent | undefined;
}

/**
 * `nodeRunsOf` (cli/commands/inspect.ts) over a stream of events given in parts: each event is
 * folded when the next one is known, since a SUBGRAPH's NODE_STARTED is typed by its neighbours.
 * Keeps the latest `keep` runs (at most twice that, trimmed in bulk) and a summary per node.
 */
export class NodeRunFold {
  private state: FoldState = {
    latest: [],
    total: 0,
    byNode: new Map(),
    open: new Map(),
    previous: undefined,
    pending: undefined,
  };

  /** The thread's own steps, per node, for the AWS cost estimate (a copy's sources' steps are not its run's). */
  private readonly meters = new Map<string, NodeMeters>();

  constructor(private readonly keep: number) {}

  /** One of the thread's own steps, as its record's result says it ran. */
  meter(step: StepMeter | undefined): void {
    if (step !== undefined) this.meters.set(step.nodeId, addStep(this.meters.get(step.nodeId), step));
  }

  /**
   * One step's events (`result`: the step's model calls and tool calls, which belong to the run its
   * events end).
   */
  push(events: readonly StepthreadEvent[], result?: Pick<StepMeter, 'usage' | 'toolCalls'>): void {
    const { usage, toolCalls } = result ?? {};
    const ends = usage === undefined && toolCalls === undefined ? -1 : events.findLastIndex(isRunEnd);
    for (const [index, given] of events.entries()) {
      const counted = { ...(usage ? { usage } : {}), ...(toolCalls ? { toolCalls } : {}) };
      const event = index === ends ? ({ ...given, ...counted } as unknown as StepthreadEvent) : given;
      const { pending } = this.state;
      if (pending !== undefined) this.fold(this.state, pending, event);
      this.state.previous = pending;
      this.state.pending = event;
    }
  }

  /**
   * Events recorded between parts of the stream that are not node events (a copy's THREAD_COPIED
   * between its source's steps and its own): only their place matters, as a neighbour.
   */
  separate(): void {
    this.push([{ type: 'THREAD_COPIED' } as StepthreadEvent]);
  }

  /** The runs as the stream ends here, leaving the fold ready for more events. */
  summary(): NodeRunsSummary {
    const ended = structuredClone(this.state);
    if (ended.pending !== undefined) this.fold(ended, ended.pending, undefined);
    return {
      latest: ended.latest.slice(-this.keep),
      total: ended.total,
      byNode: ended.byNode,
      meters: [...this.meters.values()],
    };
  }

  private fold(state: FoldState, event: StepthreadEvent, next: StepthreadEvent | undefined): void {
    if (event.type === 'NODE_STARTED') {
      const neighbours = [state.previous, event, next] as StepthreadEvent[];
      const inside = subgraphOf(event.nodeId);
      const run: NodeRun = {
        nodeId: event.nodeId,
        nodeType: runTypeOf(neighbours, 1, event),
        ...(inside === undefined ? {} : { subgraphNodeId: inside }),
        status: 'RUNNING',
        startedAt: event.at,
        attempt: event.attempt ?? 1,
      };
      state.open.set(event.nodeId, run);
      state.latest.push(run);
      if (state.latest.length >= 2 * this.keep) state.latest.splice(0, state.latest.length - this.keep);
      state.total += 1;
      const seen = state.byNode.get(event.nodeId);
      state.byNode.set(event.nodeId, {
        runs: (seen?.runs ?? 0) + 1,
        last: run,
        ...(seen?.usage ? { usage: seen.usage } : {}),
        ...(seen?.toolCalls ? { toolCalls: seen.toolCalls } : {}),
      });
    } else if (event.type === 'NODE_COMPLETED' || event.type === 'NODE_FAILED') {
      const run = state.open.get(event.nodeId);
      if (run === undefined) return;
      state.open.delete(event.nodeId);
      run.status = event.type === 'NODE_FAILED' ? 'FAILED' : event.status;
      run.endedAt = event.at;
      run.durationMs = Date.parse(event.at) - Date.parse(run.startedAt);
      const { usage, toolCalls } = event as { usage?: ModelUsage; toolCalls?: ToolCallCounts };
      const seen = state.byNode.get(event.nodeId);
      if (usage !== undefined) {
        run.usage = usage;
        if (seen) seen.usage = addUsage(seen.usage, usage);
      }
      if (toolCalls !== undefined && seen) seen.toolCalls = addToolCalls(seen.toolCalls, toolCalls);
    }
  }
}

const isRunEnd = (event: StepthreadEvent) => event.type === 'NODE_COMPLETED' || event.type === 'NODE_FAILED';

/** One part of a copy's history before its own steps: steps 1..`steps` of its source `threadId`. */
interface Segment {
  readonly threadId: string;
  readonly steps: number;
}

interface CachedThread {
  /** The parts of a copy's history before its own steps (none for a thread that is no copy). */
  readonly sources: readonly Segment[];
  readonly fold: NodeRunFold;
  /** Positions of its history folded so far (all committed; a copy's count its sources' first). */
  folded: number;
  /** The update in progress: requests for the same thread fold one after the other. */
  busy: Promise<unknown>;
  /** Set once the fold holds every step of the thread as it ended: its own step count then. */
  ended?: number;
}

/**
 * Node-run summaries per thread, read incrementally: a request reads the thread's head (and a copy's
 * sources' heads), its batches of events recorded outside steps, and only the step records committed
 * since the previous request. At most `capacity` threads are kept, the least recently shown dropped.
 */
export function createNodeRunsCache(store: Store, keep: number, capacity = MAX_CACHED_THREADS) {
  const threads = new Map<string, CachedThread>();

  /** Keeps `entry` as the most recently shown (last), dropping the least recently shown (first). */
  const remember = (threadId: string, entry: CachedThread) => {
    threads.delete(threadId);
    threads.set(threadId, entry);
    if (threads.size > capacity) threads.delete(threads.keys().next().value!);
  };

  /** The parts of a copy's history before its own steps (recursively: a copy of a copy). */
  const sourcesOf = async (thread: Thread): Promise<Segment[]> => {
    const source = copySourceOf(thread);
    if (source === undefined) return [];
    const before = await sourcesOf((await store.getCopySource(source.threadId)).thread);
    return [...before, { threadId: source.threadId, steps: source.step }];
  };

  /**
   * Folds the history's positions after `entry.folded` up to `length`: a copy's sources once (the
   * first time), then the thread's own steps, one Query each. `copied`: the copy's THREAD_COPIED,
   * which the journal places between its sources' steps and its own.
   */
  const foldUpTo = async (threadId: string, entry: CachedThread, length: number, copied: boolean) => {
    const sourceSteps = entry.sources.reduce((sum, part) => sum + part.steps, 0);
    if (entry.folded < sourceSteps) {
      for (const part of entry.sources) {
        if (part.steps < 1) continue;
        const records = await store.readSteps(part.threadId, { from: 1, to: part.steps });
        for (const record of records) entry.fold.push(record.events, record.result);
      }
      if (copied) entry.fold.separate();
      entry.folded = sourceSteps;
    }
    if (length <= entry.folded) return;
    const records = await store.readSteps(threadId, {
      from: entry.folded - sourceSteps + 1,
      to: length - sourceSteps,
    });
    for (const record of records) {
      entry.fold.push(record.events, record.result);
      entry.fold.meter(record.result);
    }
    entry.folded = length;
  };

  /** As the page folded it before: the whole journal, nothing kept. */
  const wholeFold = async (threadId: string): Promise<NodeRunsSummary> => {
    const fold = new NodeRunFold(keep);
    fold.push((await store.readJournal(threadId)).events);
    return fold.summary();
  };

  const update = async (thread: Thread): Promise<NodeRunsSummary> => {
    const known = threads.get(thread.id);
    // A thread that ended takes no step any more (a terminal status has no transition), so its fold
    // is final: a refresh of a finished fork over 200 items reads none of its children again.
    if (known?.ended !== undefined && known.ended === (thread.step ?? 0) && isTerminalStatus(thread.status)) {
      remember(thread.id, known);
      return known.fold.summary();
    }
    // The head gives the history's length (its committed steps) and the events recorded outside
    // steps; this reads no step record.
    const outside = await store.readJournal(thread.id, { window: () => [] });
    if (outside.events.some(isNodeEvent)) return wholeFold(thread.id);
    let entry = known;
    if (entry === undefined || outside.length < entry.folded) {
      entry = {
        sources: await sourcesOf(thread),
        fold: new NodeRunFold(keep),
        folded: 0,
        busy: Promise.resolve(),
      };
    }
    remember(thread.id, entry);
    const copied = outside.events.some(
      (event) => event.type === 'THREAD_COPIED' && event.copyThreadId === thread.id,
    );
    try {
      await foldUpTo(thread.id, entry, outside.length, copied);
    } catch (error) {
      // Partly folded: the next request starts this thread over.
      threads.delete(thread.id);
      throw error;
    }
    const own = outside.length - entry.sources.reduce((sum, part) => sum + part.steps, 0);
    if (isTerminalStatus(thread.status) && own === (thread.step ?? 0)) entry.ended = own;
    return entry.fold.summary();
  };

  return {
    /** The node runs of `thread` (its head as listed) as they stand now. */
    nodeRunsOf(thread: Thread): Promise<NodeRunsSummary> {
      const entry = threads.get(thread.id);
      const run = (entry?.busy ?? Promise.resolve()).then(() => update(thread));
      if (entry) entry.busy = run.catch(() => {});
      return run;
    },
    /** How many threads are kept. */
    get size() {
      return threads.size;
    },
  };
}
