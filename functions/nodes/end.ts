/** END: renders the workflow output and completes the thread (and the execution, for the root). */
import { renderTemplate } from '../../engine/expression/index.ts';
import { endConfigSchema } from '../../engine/model/schema.ts';
import { transitionThread } from '../../engine/thread/index.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { isRootThread } from '../handlers/pipeline.ts';
import { parseConfig } from './config.ts';
import { expireEndedRun } from './run-expiry.ts';

export const endNode: NodeBehaviour = {
  logic(ctx) {
    const config = parseConfig(endConfigSchema, ctx.node);
    const output = config.output === undefined ? undefined : renderTemplate(config.output, ctx.scope());
    const withOutput = { ...ctx.thread, ...(output === undefined ? {} : { output }) };
    const completed = transitionThread(withOutput, 'COMPLETED', ctx.deps.env);
    ctx.thread = completed.thread;
    return { ...(output === undefined ? {} : { output }), eventsAfter: [completed.event] };
  },
  async afterCommit({ deps, event, thread }) {
    if (!isRootThread(event.envelope) || thread.status !== 'COMPLETED') return;
    await deps.executions.setExecutionStatus(event.envelope.executionId, 'COMPLETED', {
      ...(thread.endTime ? { endTime: thread.endTime } : {}),
    });
    await expireEndedRun(deps, {
      executionId: event.envelope.executionId,
      rootThreadId: thread.id,
      endTime: thread.endTime,
    });
  },
};
