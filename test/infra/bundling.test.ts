import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import type { NodeType } from '../../engine/model/schema.ts';
import {
  ESBUILD_ALIASES,
  ESBUILD_TARGET,
  ESM_REQUIRE_BANNER,
  EXTERNAL_MODULES,
  handlerEsbuildOptions,
} from '../../infra/bundling.ts';
import { availableHandlerTypes, handlerEntryPath } from '../../infra/handler-registry.ts';
import { StepthreadRuntime } from '../../infra/runtime.ts';
import { startMcpServer } from '../support/mcp-server.ts';

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

interface BundleFacts {
  bytes: number;
  /** npm packages bundled in (with bytes in the output). */
  packages: Set<string>;
  /** External @aws-sdk packages imported when the bundle loads. */
  sdkAtInit: Set<string>;
  /** External @aws-sdk packages imported only on first use. */
  sdkOnUse: Set<string>;
}

/** One handler built with the deploy's esbuild settings, in memory. */
async function bundleFacts(type: NodeType): Promise<BundleFacts> {
  const result = await build({
    entryPoints: [handlerEntryPath(type)],
    outfile: 'index.mjs',
    write: false,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: ESBUILD_TARGET,
    minify: true,
    mainFields: ['module', 'main'],
    external: [...EXTERNAL_MODULES],
    banner: { js: ESM_REQUIRE_BANNER },
    alias: { ...ESBUILD_ALIASES },
    metafile: true,
    logLevel: 'error',
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  const packages = new Set(
    Object.entries(output.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .flatMap(([path]) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? []),
  );
  const sdk = (kind: 'static' | 'dynamic') =>
    new Set(
      output.imports
        .filter((i) => i.external && i.path.startsWith('@aws-sdk/'))
        .filter((i) => (i.kind === 'dynamic-import') === (kind === 'dynamic'))
        .map((i) => i.path),
    );
  return { bytes: output.bytes, packages, sdkAtInit: sdk('static'), sdkOnUse: sdk('dynamic') };
}

const DYNAMO_ONLY = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb'];

describe('each handler bundles only its own node type', () => {
  const types = availableHandlerTypes();

  it('keeps every bundle under 1 MiB, LLM providers in the LLM bundle only, S3 and EventBridge lazy and no Step Functions client', async () => {
    const facts = new Map(
      await Promise.all(types.map(async (type) => [type, await bundleFacts(type)] as const)),
    );
    for (const [type, f] of facts) {
      expect(f.bytes, type).toBeLessThanOrEqual(1024 * 1024);
      expect(f.packages.has('openai'), `${type} bundles openai`).toBe(type === 'LLM');
      expect(f.packages.has('ajv'), `${type} bundles ajv`).toBe(type === 'LLM' || type === 'TOOL');
      // MCP tools (the SDK's client, loaded on first use) are called by TOOL and LLM nodes only.
      expect(f.packages.has('@modelcontextprotocol/sdk'), `${type} bundles the MCP SDK`).toBe(
        type === 'LLM' || type === 'TOOL',
      );
      // zod is imported as a namespace: its classic API without the 40-odd locales.
      expect(f.packages.has('zod'), type).toBe(true);
      expect([...f.sdkAtInit].sort(), type).toEqual(DYNAMO_ONLY);
      // Events are published after the commit: the EventBridge client loads on the first publish.
      expect(f.sdkOnUse.has('@aws-sdk/client-eventbridge'), type).toBe(true);
      // No handler completes task tokens (operators do, with `respond`); S3 loads only for a conversation.
      expect(f.sdkAtInit.has('@aws-sdk/client-sfn') || f.sdkOnUse.has('@aws-sdk/client-sfn'), type).toBe(
        false,
      );
    }
    expect(facts.get('VARIABLE')?.sdkOnUse.has('@aws-sdk/client-s3')).toBe(true);
    // The OpenTelemetry SDK (~88 KiB) is in every bundle, behind a dynamic import that runs only when a
    // trace endpoint is set (functions/telemetry/index.ts): parsed, never evaluated, without one.
    expect(facts.get('VARIABLE')!.packages.has('@opentelemetry/sdk-trace-base')).toBe(true);
    expect(facts.get('VARIABLE')!.bytes).toBeLessThan(400 * 1024);
  }, 60_000);
});

describe('the MCP client in a bundle built as the deploy builds it', () => {
  const root = join(import.meta.dirname, '..', '..');

  it('loads the TOOL and LLM handlers, and calls a tool of an MCP server on first use', async () => {
    // Beside the repository's node_modules, so the bundles find the AWS SDK they leave out.
    const cache = join(root, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'stepthread-mcp-bundle-'));
    const server = await startMcpServer();
    try {
      for (const type of ['TOOL', 'LLM'] as const)
        await build(handlerEsbuildOptions(handlerEntryPath(type), join(dir, type, 'index.mjs')));
      const entry = join(dir, 'call.ts');
      writeFileSync(
        entry,
        [
          `import { createToolExecutor } from ${JSON.stringify(join(root, 'functions', 'tools', 'executor.ts'))};`,
          'const [url] = process.argv.slice(2);',
          'for (const type of ["TOOL", "LLM"]) await import("./" + type + "/index.mjs");',
          'const executor = createToolExecutor({',
          '  tools: { sum: { handler: { kind: "mcp", url, tool: "add", allowPrivateNetwork: true } } },',
          '  env: { target: "aws" },',
          '});',
          'console.log(JSON.stringify(await executor.execute("sum", { a: 20, b: 22 })));',
          'await executor.close();',
        ].join('\n'),
      );
      await build(handlerEsbuildOptions(entry, join(dir, 'call.mjs')));
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [join(dir, 'call.mjs'), server.url], (error, out, err) =>
          error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out),
        ),
      );
      expect(JSON.parse(stdout)).toEqual({ ok: true, output: { sum: 42 }, content: '42' });
      expect(server.calls).toEqual([{ tool: 'add', args: { a: 20, b: 22 } }]);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
