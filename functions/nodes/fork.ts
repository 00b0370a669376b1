/**
 * FORK: one child thread per path, created idempotently (ids derived from the parent, the FORK and
 * the parent's step, so a retry recreates the same children), then `fork.children` in the envelope.
 * Children store no global scope (the root owns it) and start from the parent's LLM call counts and
 * the MCP tool lists the run recorded. A FORK over a list creates no thread: it writes the item
 * source its items create their threads from (functions/nodes/map-items.ts).
 */
import { HISTORY_EVENT_LIMIT, inlineMapOverflow } from '../../engine/asl/continuation.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { renderTemplate } from '../../engine/expression/index.ts';
import { type ForkConfig, forkConfigSchema } from '../../engine/model/schema.ts';
import { completedPathEndsAtReport, forEachItems, forkThread } from '../../engine/thread/index.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { NodeBehaviour, StepContext } from '../handlers/pipeline.ts';
import { MCP_TOOLS_KEY } from '../tools/mcp-definitions.ts';
import { parseConfig } from './config.ts';
import { childThreadIdsFor, joinKeyFor } from './ids.ts';
import { LLM_CALLS_KEY } from './llm-calls.ts';
import { type ItemTemplate, JOIN_KEY, LIST_ITEM_KEY } from './map-items.ts';

export { itemThreadId, JOIN_KEY, LIST_ITEM_KEY } from './map-items.ts';

/** The MCP tool lists the run recorded, as stored (by reference), for a child to start with. */
function recordedTools(ctx: StepContext): Record<string, unknown> {
  const recorded = ctx.thread.contextData[MCP_TOOLS_KEY];
  if (recorded === undefined) return {};
  return ctx.storable({ contextData: { [MCP_TOOLS_KEY]: recorded } }).contextData ?? {};
}

/** Where an item thread sits in its list, or undefined for any other thread. */
export function listItemOf(thread: Thread): { index: number; total: number } | undefined {
  const value = thread.contextData[LIST_ITEM_KEY] as { index?: unknown; total?: unknown } | undefined;
  return typeof value?.index === 'number' && typeof value.total === 'number'
    ? { index: value.index, total: value.total }
    : undefined;
}

/**
 * An inline Map records every item's states in this execution's history: refuse, before any item
 * thread exists, a list that cannot fit under Step Functions' limit whatever its path does (the local
 * runtime would run it; AWS would fail the execution partway).
 */
function refuseBeyondHistory(nodeId: string, count: number, history: number): void {
  const overflow = inlineMapOverflow(count, history);
  if (overflow === undefined) return;
  const { needed, fits } = overflow;
  throw new StepthreadError(
    'FORK_LIST_TOO_LONG',
    `FORK ${nodeId}: ${count} items in an inline Map record at least ${needed} history events in one execution, past Step Functions' ${HISTORY_EVENT_LIMIT}; at most ${fits} fit here. Set "mode": "distributed" on the FORK: each item then runs as an execution of its own`,
    { nodeId },
  );
}

/**
 * A branch's thread as stored: globals stay on the root, it names its join, and it carries the
 * parent's model-call count and recorded tool definitions.
 */
function branchThread(ctx: StepContext, child: Thread, joinKey: string): Thread {
  const calls = ctx.thread.contextData[LLM_CALLS_KEY];
  const { joinConfig } = ctx.node;
  const endsAtReport = joinConfig !== undefined && completedPathEndsAtReport(joinConfig);
  return {
    ...ctx.storable(child),
    variables: { ...child.variables, global: {} },
    metadata: {
      ...child.metadata,
      [JOIN_KEY]: joinKey,
      ...(endsAtReport ? { pathEndsAtReport: true as const } : {}),
    },
    contextData: {
      ...child.contextData,
      ...(calls === undefined ? {} : { [LLM_CALLS_KEY]: calls }),
      ...recordedTools(ctx),
    },
    events: [],
    step: 0,
  };
}

/**
 * A FORK over a list: evaluates forEach and writes the item source (what every item thread shares,
 * then each item) in one PutObject, plus the item list for a Distributed Map; no item thread yet (each
 * item creates its own, `<base>-<index>`, on its first step). The Map iterates each item's byte range
 * in the source, so the envelope carries no id per item and the step's writes do not grow with the list.
 */
async function forkOverList(ctx: StepContext, config: ForkConfig & { forEach: string }) {
  const { node, thread, envelope, deps } = ctx;
  const pathId = config.forkPathIds[0];
  const childNodeId = config.childNodeIds[0];
  if (pathId === undefined || childNodeId === undefined || config.forkPathIds.length !== 1) {
    throw new StepthreadError('FORK_EACH_PATHS', `FORK ${node.id}: forEach needs exactly one path`, {
      nodeId: node.id,
    });
  }
  const items = forEachItems(renderTemplate(config.forEach, ctx.scope()), node.id);
  if (config.mode !== 'distributed') refuseBeyondHistory(node.id, items.length, envelope.history ?? 0);
  if (deps.itemLists === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', `FORK ${node.id}: no item list store`, {
      nodeId: node.id,
    });
  }
  const [base] = childThreadIdsFor(thread.id, node.id, envelope.step, [pathId]);
  const authorPathId = node.authorForkPathIds?.[0] ?? pathId;
  const joinKey = joinKeyFor(thread.id, node.id, envelope.step + 1);
  // The part every item thread shares: a child on the path, as a FORK over paths creates one.
  const { children, event } = forkThread(
    thread,
    {
      forkPathIds: [pathId],
      authorForkPathIds: [authorPathId],
      childNodeIds: [childNodeId],
      nodeId: node.id,
      childThreadIds: [base!],
    },
    deps.env,
  );
  const child = children[0]!;
  const template: ItemTemplate = {
    thread: branchThread(ctx, child, joinKey),
    total: items.length,
    pathId,
    authorPathId,
    ...(config.itemVariable === undefined ? {} : { itemVariable: config.itemVariable }),
  };
  const written = await deps.itemLists.putItemSource(base!, template, items);
  // The event names the list, not every child: its size stays the same whatever the list's length.
  const forked = { ...event, forkPathIds: [pathId], childThreadIds: [], items: items.length };
  if (config.mode === 'distributed') {
    // The Distributed Map reads the ranges from S3 (ItemReader): the envelope stays the same size.
    const list = await deps.itemLists.putItemList(base!, written.items);
    ctx.out.fork = { children: [], base: base!, count: items.length, list, source: written.source };
  } else {
    ctx.out.fork = { children: [], base: base!, items: written.items, source: written.source };
  }
  return { output: { forkPathIds: [pathId], items: items.length }, events: [forked] };
}

export const forkNode: NodeBehaviour = {
  async logic(ctx) {
    const { node, thread, envelope, deps } = ctx;
    const config = parseConfig(forkConfigSchema, node);
    if (config.forEach !== undefined) return forkOverList(ctx, { ...config, forEach: config.forEach });
    const childThreadIds = childThreadIdsFor(thread.id, node.id, envelope.step, config.forkPathIds);
    const joinKey = joinKeyFor(thread.id, node.id, envelope.step + 1);
    const { children, event } = forkThread(
      thread,
      {
        forkPathIds: config.forkPathIds,
        ...(node.authorForkPathIds ? { authorForkPathIds: node.authorForkPathIds } : {}),
        childNodeIds: config.childNodeIds,
        nodeId: node.id,
        childThreadIds,
      },
      deps.env,
    );
    // The children's heads and listings in one request: no step has run on them (a branch runs only
    // once the FORK has returned), so a retried FORK writes them again, as the first attempt did.
    await deps.threads.createForkChildren(children.map((child) => branchThread(ctx, child, joinKey)));
    ctx.out.fork = { children: childThreadIds };
    return { output: { forkPathIds: config.forkPathIds, childThreadIds }, events: [event] };
  },
};
