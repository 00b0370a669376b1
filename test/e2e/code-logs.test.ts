/**
 * A CODE node's console output on the embedded runtime (real dynalite, s3rver and ASL execution):
 * large output is capped with a note of what was cut and stored by reference, so the step's item
 * stays small; a retry of the step, whether its first attempt committed or died before, leaves one
 * copy of the output and reports it once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import { terminalLogLines } from '../../cli/node-logs.ts';
import type { NodeLogs } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createHandlerStores, type NodeLogsEntry } from '../../functions/handlers/deps.ts';
import { createLocalRuntime, type LocalRuntime } from '../../functions/local/runtime.ts';
import { isValueRef } from '../../functions/stores/value-refs.ts';
import { crashAfterFirstAttempt, type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('code-logs');
});
afterAll(() => e2e.close());

function printing(id: string, code: string) {
  return valid({
    id,
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'compute', type: 'CODE', config: { code, timeoutMs: 10_000 } },
      // Reads compute's output, so compute keeps a latest result too.
      { id: 'end', type: 'END', config: { output: { result: '{{nodes.compute}}' } } },
    ],
    edges: [
      { from: 'start', to: 'compute' },
      { from: 'compute', to: 'end' },
    ],
  });
}

async function computeRuns(runtime: LocalRuntime, executionId: string) {
  const report = await buildInspectReport(runtime, executionId);
  return report.threads[0]!.nodes.filter((run) => run.nodeId === 'compute');
}

describe('large console output', () => {
  it('is capped with a note of what was cut, and its step record holds a reference to it', async () => {
    const code =
      'for (let i = 0; i < 5000; i++) console.log(String(i).padStart(4, "0") + " " + "x".repeat(95)); return 1';
    const outcome = await e2e.runtime.prepare(printing('flood', code)).run({});
    expect(outcome.status).toBe('COMPLETED');

    // 100-character lines up to 64 KiB in all: 655 whole lines and the start of one more.
    const [run] = await computeRuns(e2e.runtime, outcome.executionId);
    const logs = run!.logs as NodeLogs;
    expect(logs.lines).toHaveLength(656);
    expect(logs.lines[0]).toBe(`0000 ${'x'.repeat(95)}`);
    expect(logs.lines.join('').length).toBe(64 * 1024);
    expect(logs.cut).toEqual({ lines: 5000 - 656, chars: 100 - 35 });
    expect(terminalLogLines(logs).at(-1)).toBe(
      '… 4,344 more lines not kept; 65 characters cut from kept lines (output is kept up to 1,000 lines, 64 KB)',
    );

    // The record holds the reference, not the 64 KB: its item stays the size of any step's.
    const record = await e2e.runtime.stores.threads.getStep(outcome.threadId, run!.step!);
    expect(isValueRef(record!.result.logs)).toBe(true);
    expect(JSON.stringify(record).length).toBeLessThan(2000);
    // The latest result, which later nodes read, holds no output at all.
    const latest = await e2e.runtime.stores.threads.getNodeResults([outcome.threadId], ['compute']);
    expect(latest.compute).toMatchObject({ output: 1 });
    expect(latest.compute).not.toHaveProperty('logs');
  });
});

describe('a retried CODE step', () => {
  const workflow = printing('retried', 'console.log("once"); return 2');

  it('after its first attempt committed: replayed, with its output once', async () => {
    const reported: NodeLogsEntry[] = [];
    const crashed: string[] = [];
    const outcome = await e2e.runtime.prepare(workflow).run(
      {},
      {
        noRetryWaits: true,
        interceptTask: crashAfterFirstAttempt(crashed),
        onNodeLogs: (entry) => reported.push(entry),
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(crashed).toContain('compute');
    expect(reported.map(({ nodeId, logs }) => ({ nodeId, logs }))).toEqual([
      { nodeId: 'compute', logs: { lines: ['once'] } },
    ]);
    expect(await computeRuns(e2e.runtime, outcome.executionId)).toMatchObject([
      { status: 'COMPLETED', logs: { lines: ['once'] } },
    ]);
  });

  it('after its first attempt died before its commit: run again, its record replaced, its output once', async () => {
    // The first commit of the CODE step fails as a dying Lambda would, after its record was written.
    const names = { tableName: 'e2e-code-logs', bucketName: 'e2e-code-logs' };
    const stores = createHandlerStores(createAwsClients(e2e.services.target, names), {
      reuseWrittenHeads: true,
    });
    let failedCommits = 0;
    const threads = {
      ...stores.threads,
      updateThread: async (...args: Parameters<typeof stores.threads.updateThread>) => {
        if (args[2].step?.result.nodeId === 'compute' && failedCommits === 0) {
          failedCommits += 1;
          throw Object.assign(new Error('the Lambda died before its commit'), {
            name: 'Lambda.ServiceException',
          });
        }
        return stores.threads.updateThread(...args);
      },
    };
    const runtime = createLocalRuntime({
      clients: createAwsClients(e2e.services.target, names),
      stores: { ...stores, threads },
    });
    const reported: NodeLogsEntry[] = [];
    const outcome = await runtime
      .prepare(workflow)
      .run({}, { noRetryWaits: true, onNodeLogs: (entry) => reported.push(entry) });
    expect(outcome.status).toBe('COMPLETED');
    expect(failedCommits).toBe(1);
    // The dead attempt's output was never reported; the one that committed was, once.
    expect(reported.map(({ logs }) => logs)).toEqual([{ lines: ['once'] }]);
    expect(await computeRuns(runtime, outcome.executionId)).toMatchObject([
      { status: 'COMPLETED', attempt: 2, logs: { lines: ['once'] } },
    ]);
  });
});
