/**
 * The in-process entry point: a Task input in, the next envelope out. The Lambda handlers wrap it;
 * the local runtime calls it directly with its own clients.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import { runFail } from '../nodes/fail.ts';
import { NODE_BEHAVIOURS } from '../nodes/index.ts';
import { runBranchReport, runJoinTimeout } from '../nodes/join.ts';
import { runStart } from '../nodes/start.ts';
import { requestInteraction } from '../nodes/user-interaction.ts';
import type { HandlerDeps } from './deps.ts';
import { toTaskError } from './errors.ts';
import { runNodeStep } from './pipeline.ts';
import { type IncomingEnvelope, parseTaskEvent, type StartTaskEvent, type TaskEvent } from './task.ts';

function requireJoin(event: TaskEvent): void {
  if (event.node.type !== 'JOIN') {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `action ${event.action} needs a JOIN node, got ${event.node.type}`,
      {
        nodeId: event.node.id,
      },
    );
  }
}

async function route(raw: unknown, deps: HandlerDeps): Promise<Envelope | IncomingEnvelope> {
  const parsed = parseTaskEvent(raw);
  const action = parsed.action ?? 'execute';
  if (parsed.node.type === 'START' && action === 'execute') return runStart(parsed as StartTaskEvent, deps);
  const event = parsed as TaskEvent;
  switch (action) {
    case 'fail':
      return runFail(event, deps);
    case 'branch-done':
      requireJoin(event);
      return runBranchReport(event, deps, 'COMPLETED');
    case 'branch-failed':
      requireJoin(event);
      return runBranchReport(event, deps, 'FAILED');
    case 'timeout':
      requireJoin(event);
      return runJoinTimeout(event, deps);
    case 'execute': {
      const type = event.node.type;
      if (type === 'START') throw new StepthreadError('INVALID_TASK_INPUT', 'unreachable');
      if (type === 'USER_INTERACTION' && typeof event.taskToken === 'string') {
        return requestInteraction({ ...event, taskToken: event.taskToken }, deps);
      }
      return runNodeStep(event, deps, NODE_BEHAVIOURS[type]);
    }
  }
}

/**
 * Runs one Task. Throws only errors named for the ASL's Retry/Catch (`stepthread.NodeFailed`,
 * `stepthread.Transient`, `stepthread.JoinDecided`, `stepthread.JoinTimeout`), or unexpected
 * errors unchanged.
 */
export async function dispatch(event: unknown, deps: HandlerDeps): Promise<Envelope | IncomingEnvelope> {
  try {
    return await route(event, deps);
  } catch (error) {
    throw toTaskError(error);
  }
}
