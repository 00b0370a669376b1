/**
 * The tool runtime a node handler uses: the one its deps carry (tests, embedders), else one read from
 * the process environment (STEPTHREAD_TARGET, STEPTHREAD_WORKFLOW_DIR, ...), built once per distinct
 * setting so a warm Lambda keeps its Secrets Manager cache and Lambda client between invocations.
 */
import type { HandlerDeps } from '../handlers/deps.ts';
import {
  SECRET_PREFIX_VARIABLE,
  type ToolRuntime,
  toolRuntimeFromEnv,
  WORKFLOW_DIR_VARIABLE,
} from '../tools/runtime.ts';

const SETTINGS = [
  'STEPTHREAD_TARGET',
  'AWS_ENDPOINT_URL',
  WORKFLOW_DIR_VARIABLE,
  SECRET_PREFIX_VARIABLE,
] as const;

let cached: { key: string; runtime: ToolRuntime } | undefined;

export function toolRuntimeOf(deps: Pick<HandlerDeps, 'tools'>): ToolRuntime {
  if (deps.tools) return deps.tools;
  const key = SETTINGS.map((name) => process.env[name] ?? '').join('\n');
  if (cached?.key !== key) cached = { key, runtime: toolRuntimeFromEnv(process.env) };
  return cached.runtime;
}
