/**
 * `lambda` tools: a Lambda function invoked by ARN on AWS, or an export of a local module in the
 * embedded runtime. Module code is the workflow author's own, trusted like a Lambda they deploy:
 * it runs in this process, NOT in the sandbox (`code` tools are the sandboxed kind).
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LambdaTarget, ModuleReference } from '../../engine/model/tool-handler.ts';
import { describe, ToolFailure } from './failure.ts';
import type { ToolEnvironment } from './types.ts';

export const DEFAULT_LAMBDA_TIMEOUT_MS = 30_000;

/** What a module export receives after the arguments, like a Lambda handler's context. */
export interface ModuleToolContext {
  toolName: string;
  /** Aborted when the call times out or is cancelled; long-running tools should stop then. */
  signal: AbortSignal;
}

export interface LambdaCall {
  toolName: string;
  target: LambdaTarget;
  timeoutMs: number | undefined;
  args: unknown;
  env: ToolEnvironment;
  signal: AbortSignal | undefined;
}

export async function callLambdaTool(call: LambdaCall): Promise<unknown> {
  const { toolName, target, env } = call;
  const timeoutMs = call.timeoutMs ?? DEFAULT_LAMBDA_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = call.signal ? AbortSignal.any([timeout, call.signal]) : timeout;

  let run: () => Promise<unknown>;
  if (env.target === 'local' && target.module) {
    const module = target.module;
    run = async () => (await loadExport(toolName, module, env.workflowDir))(call.args, { toolName, signal });
  } else if (target.arn !== undefined) {
    const { invokeLambda } = env;
    if (!invokeLambda) {
      const where = env.target === 'local' ? 'it has no "module" for the local runtime and ' : '';
      throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": ${where}no Lambda invoker is configured`);
    }
    const arn = target.arn;
    run = () => invokeLambda({ functionName: arn, payload: call.args, signal });
  } else {
    throw new ToolFailure(
      'TOOL_FAILED',
      `tool "${toolName}": module tools run only in the local runtime; give it an "arn" to run on AWS`,
    );
  }

  try {
    return await untilAborted(run(), signal);
  } catch (error) {
    if (error instanceof ToolFailure) throw error;
    if (timeout.aborted) {
      throw new ToolFailure('TOOL_TIMEOUT', `tool "${toolName}" did not finish within ${timeoutMs} ms`);
    }
    if (call.signal?.aborted)
      throw new ToolFailure('TOOL_FAILED', `tool "${toolName}": the call was cancelled`);
    throw new ToolFailure('TOOL_FAILED', `tool "${toolName}" failed: ${describe(error)}`, { cause: error });
  }
}

type ToolFunction = (args: unknown, context: ModuleToolContext) => unknown;

async function loadExport(
  toolName: string,
  reference: ModuleReference,
  workflowDir: string | undefined,
): Promise<ToolFunction> {
  if (!isAbsolute(reference.path) && workflowDir === undefined) {
    throw new ToolFailure(
      'TOOL_FAILED',
      `tool "${toolName}": module "${reference.path}" is relative but the workflow's folder is unknown`,
    );
  }
  const file = resolve(workflowDir ?? '', reference.path);
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ToolFailure(
      'TOOL_FAILED',
      `tool "${toolName}": cannot load module ${file}: ${describe(error)}`,
      {
        cause: error,
      },
    );
  }
  const exported = namespace[reference.exportName];
  if (typeof exported !== 'function') {
    throw new ToolFailure(
      'INVALID_TOOL_DEFINITION',
      `tool "${toolName}": module ${file} has no function export "${reference.exportName}"`,
    );
  }
  return exported as ToolFunction;
}

/** The promise's outcome, or the signal's reason once it aborts (the work itself is abandoned). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolvePromise(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
