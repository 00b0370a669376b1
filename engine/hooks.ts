/**
 * Node hooks (seed 003): BEFORE_EXECUTE / AFTER_EXECUTE hooks emit author-defined events around a
 * node. A hook is observability, never control flow: a hook that fails is reported as HOOK_FAILED
 * and neither fails the node nor stops the hooks after it.
 */
import { type CodedError, StepthreadError } from './errors.ts';
import { createEvent, type HookFailedEvent, type HookTriggeredEvent } from './events.ts';
import { evaluateCondition, renderTemplate } from './expression/index.ts';
import type { Hook } from './model/schema.ts';
import type { EngineEnv } from './thread/types.ts';

export type HookType = Hook['hookType'];

export interface HookContext {
  threadId: string;
  workflowId: string;
  nodeId: string;
  env: Pick<EngineEnv, 'now'>;
}

export type HookEvent = HookTriggeredEvent | HookFailedEvent;

/** Enabled hooks of one type, highest weight first; equal weights keep declaration order. */
export function selectHooks(hooks: readonly Hook[] | undefined, hookType: HookType): Hook[] {
  return (hooks ?? [])
    .filter((hook) => hook.hookType === hookType && hook.enabled !== false)
    .map((hook, order) => ({ hook, order }))
    .sort((a, b) => (b.hook.weight ?? 0) - (a.hook.weight ?? 0) || a.order - b.order)
    .map(({ hook }) => hook);
}

function toCodedError(error: unknown, nodeId: string): CodedError {
  if (error instanceof StepthreadError) return { ...error.toJSON(), nodeId };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'EXPRESSION_ERROR', message, nodeId };
}

/**
 * Runs the hooks of `hookType` against `scope` and returns one event per hook that fired or
 * failed, in execution order. A hook fires when it has no condition or its condition is truthy.
 */
export function runHooks(
  hooks: readonly Hook[] | undefined,
  hookType: HookType,
  scope: Record<string, unknown>,
  ctx: HookContext,
): HookEvent[] {
  const events: HookEvent[] = [];
  for (const hook of selectHooks(hooks, hookType)) {
    const base = { threadId: ctx.threadId, workflowId: ctx.workflowId, nodeId: ctx.nodeId, hookType };
    try {
      if (hook.condition !== undefined && !evaluateCondition(hook.condition, scope)) continue;
      const payload = renderTemplate(hook.eventPayload ?? {}, scope);
      events.push(
        createEvent('HOOK_TRIGGERED', { ...base, at: ctx.env.now(), eventName: hook.eventName, payload }),
      );
    } catch (error) {
      events.push(
        createEvent('HOOK_FAILED', {
          ...base,
          at: ctx.env.now(),
          eventName: hook.eventName,
          error: toCodedError(error, ctx.nodeId),
        }),
      );
    }
  }
  return events;
}
