#!/usr/bin/env node
// The installed package runs its compiled JavaScript (dist/bin/, built by `npm run build` at pack time). A
// checkout has the TypeScript sources and runs them through tsx, so it needs no build step and never
// runs a stale dist/.
import { existsSync } from 'node:fs';

// Before any AWS SDK module loads: its Node 20 support warning is noise for CLI users.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
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
