/**
 * The Lambda entry points: middy around `dispatch`, with a Powertools logger per invocation (a
 * child of one base logger: a shared module-level logger would mix request keys across concurrent
 * in-process invocations of the local runtime). Logs carry ids, actions, steps and error names
 * only — never messages, variables, prompts or secrets.
 */
import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import middy from '@middy/core';
import type { NodeType } from '../../engine/model/schema.ts';
import type { EngineEnv } from '../../engine/thread/types.ts';
import { createAwsClients, resolveAwsTarget } from '../aws/clients.ts';
import { createHandlerStores, type HandlerDeps } from './deps.ts';
import { dispatch } from './dispatch.ts';
import { sfnTaskTokenSender } from './task-tokens.ts';

const baseLogger = new Logger({ serviceName: 'stepthread' });

export const systemEnv: EngineEnv = {
  now: () => new Date().toISOString(),
  newId: () => randomUUID(),
};

/** Deps for a deployed Lambda: clients for the target named by the environment (cached per container). */
export function depsFromEnvironment(signal?: AbortSignal): HandlerDeps {
  const clients = createAwsClients(resolveAwsTarget(process.env));
  return {
    ...createHandlerStores(clients),
    env: systemEnv,
    taskTokens: sfnTaskTokenSender(clients.sfn),
    ...(signal ? { signal } : {}),
  };
}

interface LoggedFields {
  action?: unknown;
  node?: { id?: unknown; type?: unknown };
  envelope?: { executionId?: unknown; threadId?: unknown; step?: unknown };
  executionId?: unknown;
}

/** Only identifiers: what to log about a Task input. */
function logKeys(event: unknown): Record<string, string | number> {
  const e = (event ?? {}) as LoggedFields;
  const keys: Record<string, string | number> = {};
  const put = (name: string, value: unknown) => {
    if (typeof value === 'string' || typeof value === 'number') keys[name] = value;
  };
  put('action', e.action ?? 'execute');
  put('nodeId', e.node?.id);
  put('nodeType', e.node?.type);
  put('executionId', e.envelope?.executionId ?? e.executionId);
  put('threadId', e.envelope?.threadId);
  put('step', e.envelope?.step);
  return keys;
}

/**
 * The Lambda handler of one node type. `makeDeps` defaults to clients from the environment; tests
 * and the local runtime pass their own.
 */
export function createNodeHandler(
  nodeType: NodeType,
  makeDeps: (signal?: AbortSignal) => HandlerDeps = depsFromEnvironment,
) {
  return middy().handler(async (event: unknown, context: { awsRequestId?: string } | undefined, opts) => {
    const logger = baseLogger.createChild({ persistentKeys: { functionNodeType: nodeType } });
    logger.appendKeys({
      ...logKeys(event),
      ...(context?.awsRequestId ? { requestId: context.awsRequestId } : {}),
    });
    const started = performance.now();
    try {
      const next = await dispatch(event, makeDeps(opts?.signal));
      logger.info('task completed', {
        durationMs: Math.round(performance.now() - started),
        nextStep: next.step,
      });
      return next;
    } catch (error) {
      const name = error instanceof Error ? error.name : 'unknown';
      logger.warn('task ended with an error', {
        errorName: name,
        durationMs: Math.round(performance.now() - started),
      });
      throw error;
    }
  });
}
