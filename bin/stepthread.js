#!/usr/bin/env node
// The installed package runs its compiled JavaScript (dist/bin/, built by `npm run build` at pack time). A
// checkout has the TypeScript sources and runs them through tsx, so it needs no build step and never
// runs a stale dist/.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

// Node's compile cache, before the CLI's modules load: compiling them is most of a cold command's
// start. Beside the store server's code cache (functions/local/data-dir-server-cached.ts); a cache
// that cannot be created or written only means compiling as before.
try {
  const cacheBase = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  module.enableCompileCache?.(join(cacheBase, 'stepthread', 'compile-cache'));
} catch {
  // No cache.
}
const fromSource = existsSync(new URL('../cli/main.ts', import.meta.url));
let main;
if (fromSource) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
} else {
  ({ main } = await import('../dist/bin/main.js'));
}
process.exitCode = await main(process.argv);
