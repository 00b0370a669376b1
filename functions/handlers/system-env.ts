/** The real clock and id source (engine functions take them as parameters). Kept apart from lambda.ts so the local runtime can use it without middy. */
import { randomUUID } from 'node:crypto';
import type { EngineEnv } from '../../engine/thread/types.ts';

export const systemEnv: EngineEnv = {
  now: () => new Date().toISOString(),
  newId: () => randomUUID(),
};
