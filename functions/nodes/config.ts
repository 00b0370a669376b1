/** Node configs arrive as static data in the Task input; each node type checks its own. */
import type { z } from 'zod';
import { StepthreadError } from '../../engine/errors.ts';
import type { TaskNode } from '../handlers/task.ts';

export function parseConfig<T>(schema: z.ZodType<T>, node: TaskNode): T {
  const parsed = schema.safeParse(node.config ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue ? `${issue.path.join('.') || 'config'}: ${issue.message}` : 'invalid';
  throw new StepthreadError('INVALID_NODE_CONFIG', `node ${node.id} has an invalid config (${where})`, {
    nodeId: node.id,
  });
}
