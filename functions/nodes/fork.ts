/**
 * FORK: one child thread per path, created idempotently (ids derived from the parent, the FORK and
 * the parent's step, so a retry recreates the same children), then `fork.children` in the envelope.
 * Children store no global scope (the root owns it) and start from the parent's LLM call counts.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { forkConfigSchema } from '../../engine/model/schema.ts';
import { forkThread } from '../../engine/thread/index.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';
import { childThreadIdsFor, joinKeyFor } from './ids.ts';
import { LLM_CALLS_KEY } from './llm-calls.ts';

/** Metadata key naming the join bookkeeping item a child reports to. */
export const JOIN_KEY = 'joinKey';

/** Creates a child unless this fork already created it (a retry, whose clock read differently). */
async function createChild(deps: HandlerDeps, child: Thread): Promise<void> {
  try {
    await deps.threads.createThread(child);
  } catch (error) {
    if (!(error instanceof StepthreadError && error.code === 'CREATE_CONFLICT')) throw error;
    const { thread } = await deps.threads.getThread(child.id);
    const ours =
      thread.metadata.parentThreadId === child.metadata.parentThreadId &&
      thread.metadata[JOIN_KEY] === child.metadata[JOIN_KEY] &&
      thread.contextData.forkPathId === child.contextData.forkPathId;
    if (!ours) throw error;
  }
}

export const forkNode: NodeBehaviour = {
  async logic(ctx) {
    const { node, thread, envelope, deps } = ctx;
    const config = parseConfig(forkConfigSchema, node);
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
    const calls = thread.contextData[LLM_CALLS_KEY];
    for (const child of children) {
      await createChild(deps, {
        ...ctx.storable(child),
        variables: { ...child.variables, global: {} },
        metadata: { ...child.metadata, [JOIN_KEY]: joinKey },
        contextData: { ...child.contextData, ...(calls === undefined ? {} : { [LLM_CALLS_KEY]: calls }) },
        events: [],
        step: 0,
      });
    }
    ctx.out.fork = { children: childThreadIds };
    return { output: { forkPathIds: config.forkPathIds, childThreadIds }, events: [event] };
  },
};
