/**
 * vitest's global setup: every temporary file of a test run goes under one directory, removed when the
 * run ends. TMPDIR points there for the workers and every process they start, so CDK's `cdk.out*`
 * assemblies, synth stubs, data directories and packed tarballs leave nothing in the system's /tmp.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'stepthread-tests-'));
  process.env.TMPDIR = root;
  return () => {
    // A store server a test started may still be leaving (idle time): retry a busy directory.
    rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
}
