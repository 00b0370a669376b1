#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx so a checkout needs no build step.
import { register } from 'tsx/esm/api';

// Before any AWS SDK module loads: its Node 20 support warning is noise for CLI users.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv);
