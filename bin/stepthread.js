#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx so a checkout needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv);
