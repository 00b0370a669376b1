/**
 * `stepthread dev` runs a workflow whose tool is a module beside it (`module:./lookup.mjs#lookup`):
 * the relative path is resolved from the workflows folder, as `run` resolves it from the workflow
 * file's folder (before, the run failed with "the workflow's folder is unknown").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDev } from '../../cli/commands/dev.ts';
import type { CliIo } from '../../cli/io.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

let folder: string;
let url = '';
let stdout = '';
let stderr = '';
let stop: () => void = () => {};
let exited: Promise<number>;

const WORKFLOW = {
  id: 'looks-up',
  version: 1,
  tools: { lookup: { description: 'finds a record', handler: 'module:./lookup.mjs#lookup' } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'find', type: 'TOOL', config: { toolName: 'lookup', arguments: { id: '{{input.id}}' } } },
    { id: 'end', type: 'END', config: { output: '{{nodes.find}}' } },
  ],
  edges: [
    { from: 'start', to: 'find' },
    { from: 'find', to: 'end' },
  ],
};

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-module-'));
  writeFileSync(join(folder, 'looks-up.json'), JSON.stringify(WORKFLOW));
  writeFileSync(
    join(folder, 'lookup.mjs'),
    'export async function lookup(args) { return { found: args.id }; }\n',
  );
  const io: CliIo = {
    env: {},
    // Another folder: the module is found beside the workflow, not in the working directory.
    cwd: tmpdir(),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readFile: async () => '',
  };
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  exited = runDev(folder, { port: '0', dataDir: join(folder, 'data') }, io, stopped);
  while (!/console at (\S+)/.test(stdout)) {
    if (stderr.includes('stepthread:')) throw new Error(stderr);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  url = /console at (\S+)/.exec(stdout)![1]!;
}, 60_000);

afterAll(async () => {
  stop();
  expect(await exited).toBe(0);
  rmSync(folder, { recursive: true, force: true });
});

describe('stepthread dev and a module tool', () => {
  it("resolves the module's relative path from the workflows folder", async () => {
    const started = await fetch(`${url}/api/workflows/looks-up/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: { id: 'r-7' } }),
    });
    expect(started.status).toBe(202);
    const { executionId } = (await started.json()) as { executionId: string };
    const page = async () =>
      (await (await fetch(`${url}/api/executions/${executionId}`)).json()) as {
        execution: { status: string; output?: unknown; error?: unknown };
      };
    await expect.poll(async () => (await page()).execution.status, { timeout: 20_000 }).not.toBe('RUNNING');
    const { execution } = await page();
    expect(execution, JSON.stringify(execution.error)).toMatchObject({ status: 'COMPLETED' });
  });
});
