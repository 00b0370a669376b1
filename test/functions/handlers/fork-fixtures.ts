/** Hand-written FORK/JOIN node descriptions and branch envelopes, as the ASL passes them. */
import type { JoinStrategy } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';

export const PATHS = ['split/a', 'split/b'];

export function forkNode(strategy: 'parallel' | 'serial' = 'parallel'): TaskNode {
  return {
    id: 'split',
    type: 'FORK',
    config: { forkPathIds: PATHS, forkStrategy: strategy, childNodeIds: ['a1', 'b1'] },
    authorForkPathIds: ['a', 'b'],
    joinId: 'merge',
  };
}

export function joinNode(
  joinStrategy: JoinStrategy,
  extra: Record<string, unknown> = {},
  serial = false,
): TaskNode {
  return {
    id: 'merge',
    type: 'JOIN',
    config: { forkPathIds: PATHS, joinStrategy, mainPathId: 'split/b', ...extra },
    authorForkPathIds: ['a', 'b'],
    forkId: 'split',
    forkStrategy: serial ? 'serial' : 'parallel',
  };
}

/** The envelope the Parallel's branch Pass state builds for path i. */
export function branchEnvelope(forkEnv: Envelope, i: number): Envelope {
  const { fork, ...rest } = forkEnv;
  return { ...rest, threadId: fork!.children[i]!, step: 0 };
}
