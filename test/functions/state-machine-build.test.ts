/**
 * The CLI bundle's stubs for aws-local-stepfunctions' unused imports (functions/local/state-machine-build.ts):
 * the bundled runner leaves out asl-validator, ajv and the Lambda client, still runs a definition
 * with local handlers, and our own import of the Lambda client stays the real one.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localRunnerStubs } from '../../functions/local/state-machine-build.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the CLI bundle without the local runner’s unused dependencies', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(ROOT, 'node_modules', '.stepthread-stubs-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('bundles the runner without them, and it runs a Task through its local handler', async () => {
    const entry = join(dir, 'entry.ts');
    await writeFile(
      entry,
      [
        `export { createLocalRunner } from ${JSON.stringify(join(ROOT, 'functions/local/state-machine.ts'))};`,
        "export const lambda = () => import('@aws-sdk/client-lambda');",
      ].join('\n'),
    );
    const result = await build({
      entryPoints: [entry],
      outdir: dir,
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      mainFields: ['module', 'main'],
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
      plugins: [localRunnerStubs()],
      metafile: true,
      logLevel: 'error',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((path) => /node_modules[\\/](asl-validator|ajv)[\\/]/.test(path))).toEqual([]);
    expect(inputs.some((path) => path.startsWith('local-runner-stub:'))).toBe(true);
    // Ours, imported elsewhere than aws-local-stepfunctions: the real client, in its own chunk.
    expect(inputs.some((path) => /node_modules[\\/]@aws-sdk[\\/]client-lambda[\\/]/.test(path))).toBe(true);

    const bundled = await import(pathToFileURL(join(dir, 'entry.js')).href);
    const runner = bundled.createLocalRunner(
      {
        StartAt: 'work',
        States: {
          work: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:000000000000:function:x', End: true },
        },
      },
      { work: async (input: { n: number }) => ({ n: input.n + 1 }) },
      { noValidate: true },
    );
    const execution = runner.start({ n: 1 });
    await expect(execution.result).resolves.toMatchObject({ status: 'SUCCEEDED', output: { n: 2 } });
    const { LambdaClient } = await bundled.lambda();
    expect(() => new LambdaClient({ region: 'us-east-1' })).not.toThrow();
  });
});
