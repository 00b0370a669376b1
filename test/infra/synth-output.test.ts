/**
 * What `npm run synth` prints, from the CDK app entry in a child process: an invalid workflow folder
 * gives its coded errors and nothing else (no stack trace), and bundling reports nothing per function
 * unless asked (esbuild's size and time lines, the sandbox worker's path).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function node(args: readonly string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the CDK app on an invalid workflow folder', () => {
  it('prints only the coded errors, each file with its code, and exits 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepthread-synth-'));
    writeFileSync(join(dir, 'bad.json'), '{"id": "bad", "version": 1, "nodes": []}');
    writeFileSync(join(dir, 'broken.json'), '{\n  "description": "°C",\n  "nodes": [,]\n}');
    const result = node(['infra/app.ts'], { STEPTHREAD_WORKFLOWS_DIR: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n')).toEqual([
      `stepthread: DEPLOY_CONFIG_INVALID: cannot deploy ${dir}:`,
      expect.stringMatching(/^ {2}bad\.json: START_NODE_COUNT: /),
      expect.stringMatching(/^ {2}bad\.json: /),
      `  broken.json: WORKFLOW_PARSE_ERROR: ${join(dir, 'broken.json')} is not valid JSON at line 3, column 13: Unexpected token ','`,
      '',
    ]);
  });
});

describe('the CDK app with a setting it cannot use', () => {
  it.each([
    [{ 'stepthread:removalPolicy': 'keep' }, 'stepthread:removalPolicy must be retain or destroy, not keep'],
    [
      { 'stepthread:express': 'nope' },
      'stack configuration names workflow "nope", which is not deployed (deployed: only)',
    ],
  ])(
    '%j: its coded error and nothing else, exit 1',
    (context, message) => {
      const dir = mkdtempSync(join(tmpdir(), 'stepthread-synth-'));
      writeFileSync(
        join(dir, 'only.json'),
        JSON.stringify({
          id: 'only',
          version: 1,
          nodes: [
            { id: 'start', type: 'START' },
            { id: 'end', type: 'END' },
          ],
          edges: [{ from: 'start', to: 'end' }],
        }),
      );
      const result = node(['infra/app.ts'], {
        STEPTHREAD_WORKFLOWS_DIR: dir,
        CDK_CONTEXT_JSON: JSON.stringify(context),
        CDK_OUTDIR: join(dir, 'cdk.out'),
      });
      // After CDK's line per asset bundled before the setting was read, if any: no stack trace.
      const lines = result.stderr.split('\n').filter((line) => !line.startsWith('Bundling asset '));
      expect(lines).toEqual([`stepthread: DEPLOY_CONFIG_INVALID: ${message}`, '']);
      expect(result.code).toBe(1);
    },
    120_000,
  );
});

describe('bundling a handler', () => {
  // The CODE handler: esbuild, then the hook that builds the sandbox worker beside it.
  const synth = (verbose: boolean) =>
    node([
      '--input-type=module',
      '-e',
      [
        "import { mkdtempSync } from 'node:fs';",
        "import { tmpdir } from 'node:os';",
        "import { join } from 'node:path';",
        "import { App, Stack } from 'aws-cdk-lib';",
        "import { StepthreadRuntime } from './infra/runtime.ts';",
        "const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'stepthread-quiet-')) });",
        verbose ? "app.node.setContext('stepthread:verboseBundling', 'true');" : '',
        "new StepthreadRuntime(new Stack(app, 'Quiet'), 'Runtime', { nodeTypes: ['CODE'] });",
        'app.synth();',
      ].join('\n'),
    ]);

  it('prints no esbuild report and no worker path unless asked', () => {
    const quiet = synth(false);
    expect(quiet.code, quiet.stderr).toBe(0);
    const printed = `${quiet.stdout}${quiet.stderr}`;
    expect(printed).not.toMatch(/index\.mjs|Done in|sandbox-worker\.mjs/);
    // CDK's own one line per asset remains.
    expect(printed.trim().split('\n')).toEqual([
      expect.stringMatching(/^Bundling asset Quiet\/Runtime\/CodeFunction/),
    ]);
    const verbose = synth(true);
    expect(verbose.code, verbose.stderr).toBe(0);
    expect(`${verbose.stdout}${verbose.stderr}`).toMatch(
      /index\.mjs[\s\S]*Done in[\s\S]*sandbox-worker\.mjs/,
    );
  }, 120_000);
});
