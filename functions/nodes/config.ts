/**
 * Node configs arrive as static data in the Task input; each node type checks its own. A node
 * described by the workflow's node table is the same object at every step of a run (and of every
 * run of the workflow in this process), so its parse is kept with it, frozen: handlers read a
 * config, never change it.
 */
import type { z } from 'zod';
import { StepthreadError } from '../../engine/errors.ts';
import type { TaskNode } from '../handlers/task.ts';

const parses = new WeakMap<object, WeakMap<z.ZodType<unknown>, unknown>>();

export function parseConfig<T>(schema: z.ZodType<T>, node: TaskNode): T {
  const config = node.config;
  const kept = config !== null && typeof config === 'object' ? parses.get(config) : undefined;
  if (kept?.has(schema)) return kept.get(schema) as T;
  const parsed = schema.safeParse(config ?? {});
  if (parsed.success) {
    if (config !== null && typeof config === 'object') {
      const bySchema = kept ?? new WeakMap<z.ZodType<unknown>, unknown>();
      bySchema.set(schema, deepFreeze(parsed.data));
      if (kept === undefined) parses.set(config, bySchema);
    }
    return parsed.data;
  }
  const issue = parsed.error.issues[0];
  const where = issue ? `${issue.path.join('.') || 'config'}: ${issue.message}` : 'invalid';
  throw new StepthreadError('INVALID_NODE_CONFIG', `node ${node.id} has an invalid config (${where})`, {
    nodeId: node.id,
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
