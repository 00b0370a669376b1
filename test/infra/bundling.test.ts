import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { handlerEntryPath } from '../../infra/handler-registry.ts';
import { StepthreadRuntime } from '../../infra/runtime.ts';

const entry = handlerEntryPath('VARIABLE');
const available = existsSync(entry);
if (!available) console.warn(`bundling test skipped: ${entry} does not exist yet`);

describe.skipIf(!available)('real bundling of one handler (local esbuild, no Docker)', () => {
  it('produces a small ESM bundle that leaves the AWS SDK to the Lambda runtime', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepthread-bundle-'));
    const app = new App({ outdir });
    const stack = new Stack(app, 'Bundled');
    new StepthreadRuntime(stack, 'Runtime', { nodeTypes: ['VARIABLE'] });
    app.synth();

    const assets = readdirSync(outdir).filter((name) => name.startsWith('asset.'));
    expect(assets).toHaveLength(1);
    const bundle = join(outdir, assets[0]!, 'index.mjs');
    const code = readFileSync(bundle, 'utf8');
    expect(statSync(bundle).size).toBeLessThanOrEqual(1024 * 1024);
    expect(code.startsWith('import { createRequire as __stepthreadCreateRequire }')).toBe(true);
    // Imported, not inlined: the SDK's own sources are absent, its package names remain as specifiers.
    expect(code).toMatch(/from\s*"@aws-sdk\/client-dynamodb"/);
    // A string literal from the DynamoDB client's own sources: minification keeps it if the SDK is inlined.
    expect(code).not.toContain('DynamoDB_20120810');
  }, 30_000);
});
