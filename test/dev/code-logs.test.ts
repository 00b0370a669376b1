/**
 * `stepthread dev` prints what a CODE node of a run it started printed, in its own terminal, as `run`
 * does: on stderr, each line led by the node id, once per committed step.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDev } from '../../cli/commands/dev.ts';
import type { CliIo } from '../../cli/io.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

let folder: string;
let dataDir: string;
let url = '';
let stdout = '';
let stderr = '';
let stop: () => void = () => {};
let exited: Promise<number>;

/** START → `first` (CODE, prints two lines) → `second` (CODE, prints one) → `quiet` (CODE) → END. */
const WORKFLOW = {
  id: 'prints',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'first',
      type: 'CODE',
      config: { code: 'console.log("one", 1);\nconsole.error("two\\nlines");\nreturn 1' },
    },
    { id: 'second', type: 'CODE', config: { code: 'console.log("three"); return 2' } },
    { id: 'quiet', type: 'CODE', config: { code: 'return 3' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'first' },
    { from: 'first', to: 'second' },
    { from: 'second', to: 'quiet' },
    { from: 'quiet', to: 'end' },
  ],
};

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'stepthread-dev-logs-'));
  dataDir = join(folder, 'data');
  writeFileSync(join(folder, 'prints.json'), JSON.stringify(WORKFLOW));
  const io: CliIo = {
    env: {},
    cwd: folder,
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
  exited = runDev(folder, { port: '0', dataDir }, io, stopped);
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

async function runToEnd(): Promise<void> {
  const started = await fetch(`${url}/api/workflows/prints/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: {} }),
  });
  expect(started.status).toBeLessThan(300);
  const { executionId } = (await started.json()) as { executionId: string };
  const status = async () =>
    (
      (await (await fetch(`${url}/api/executions/${executionId}`)).json()) as {
        execution: { status: string };
      }
    ).execution.status;
  await expect.poll(status, { timeout: 20_000, interval: 50 }).toBe('COMPLETED');
}

describe('stepthread dev and a CODE node that prints', () => {
  it("prints the node's lines on its stderr, led by the node id, each once", async () => {
    await runToEnd();
    const printed = stderr.split('\n').filter((line) => line.includes(' │ '));
    expect(printed).toEqual([
      '    first │ one 1',
      '    first │ error: two',
      '    first │ lines',
      '    second │ three',
    ]);
    expect(stdout).not.toContain('three');
  });

  it('prints a second run its own lines again', async () => {
    await runToEnd();
    const printed = stderr.split('\n').filter((line) => line.includes(' │ '));
    expect(printed.filter((line) => line === '    second │ three')).toHaveLength(2);
    expect(printed).toHaveLength(8);
  });
});
