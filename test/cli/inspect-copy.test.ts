/**
 * `inspect` on a copy (seed 002): a copy keeps its source's execution id until it runs, yet it is
 * no thread of its source's run. Inspecting the copy shows the copy alone, named as a copy of its
 * source, until it runs; then its own run. Inspecting the source's run does not list it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport, type InspectReport, printReport } from '../../cli/commands/inspect.ts';
import type { CliIo } from '../../cli/io.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { type E2e, startE2e } from '../e2e/helpers.ts';
import { forkWorkflow } from '../e2e/workflows.ts';

let e2e: E2e;
let workflow: Workflow;
let source: { executionId: string; threadId: string };

beforeAll(async () => {
  e2e = await startE2e('inspect-copy');
  workflow = forkWorkflow('copied', { paths: ['a', 'b'], join: { mainPathId: 'a' }, fallback: ['again'] });
  const outcome = await e2e.runtime.prepare(workflow).run();
  expect(outcome.status).toBe('COMPLETED');
  source = outcome;
}, 120_000);
afterAll(() => e2e.close());

const inspect = (id: string) => buildInspectReport(e2e.runtime, id);

function printed(report: InspectReport): string {
  let out = '';
  printReport(report, { stdout: (text: string) => (out += text), stderr: () => {} } as unknown as CliIo);
  return out;
}

describe('inspect a copy', () => {
  it('not run yet: the copy alone, its source named, no execution (the copy kept its id)', async () => {
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'after' });
    expect(copy.metadata.executionId).toBe(source.executionId);
    const report = await inspect(copy.id);
    expect(report.executionId).toBeUndefined();
    expect(report.threads.map((thread) => thread.threadId)).toEqual([copy.id]);
    expect(report.threads[0]).toMatchObject({ status: 'CREATED', copiedFrom: source.threadId });
    // The THREAD_COPIED event carries what seed 002 §5 lists: source, copy, time and workflow.
    expect(report.threads[0]?.copied).toEqual({
      type: 'THREAD_COPIED',
      sourceThreadId: source.threadId,
      copyThreadId: copy.id,
      workflowId: 'copied',
      at: copy.startTime,
    });
    const text = printed(report);
    expect(text).not.toContain(source.executionId);
    expect(text).toContain(`not run yet: stepthread run <workflow> --thread ${copy.id} runs it`);
    expect(text).toContain(`stepthread inspect ${source.threadId} shows its source's run`);
    // Its source's run lists its own threads, not the copy.
    const sourceRun = await inspect(source.executionId);
    expect(sourceRun.threads.map((thread) => thread.threadId)).not.toContain(copy.id);
    expect(sourceRun.threads.every((thread) => thread.copiedFrom === undefined)).toBe(true);
  });

  it('run: its own execution, with the copy as root, and its source still named', async () => {
    const copy = await e2e.runtime.copyThread(source.threadId, { fromNodeId: 'after' });
    const rerun = await e2e.runtime.prepare(workflow, { startNodeId: 'after' }).runThread(copy.id);
    expect(rerun.status).toBe('COMPLETED');
    const report = await inspect(copy.id);
    expect(report).toMatchObject({ executionId: rerun.executionId, rootThreadId: copy.id });
    expect(report.threads.map((thread) => thread.threadId)).toEqual([copy.id]);
    expect(report.threads[0]).toMatchObject({ status: 'COMPLETED', copiedFrom: source.threadId });
    expect(printed(report)).not.toContain('not run yet');
    // Its source's runs come first, marked copied (their numbers are the source's steps); its own
    // steps are numbered from 1, the numbers `copy --from` on it takes.
    const runs = report.threads[0]!.nodes;
    const own = runs.filter((run) => !run.copied);
    expect(runs.filter((run) => run.copied).map((run) => run.nodeId)).toEqual([
      'start',
      'intro',
      'split',
      'merge',
    ]);
    expect(own.map((run) => [run.step, run.nodeId])).toEqual([
      [1, 'after'],
      [2, 'end'],
    ]);
    const lines = printed(report).split('\n');
    expect(lines.filter((line) => /^ {2}copied +COMPLETED /.test(line))).toHaveLength(4);
    expect(lines.some((line) => /^ {2}step 1 +COMPLETED after /.test(line))).toBe(true);
    expect(lines.filter((line) => /^ {2}step 1 /.test(line))).toHaveLength(1);
  });

  it("a fork branch's copy, which cannot run on its own, says so", async () => {
    const sourceRun = await inspect(source.executionId);
    const branch = sourceRun.threads.find((thread) => thread.forkPathId === 'split/b')!;
    const copy = await e2e.runtime.copyThread(branch.threadId);
    const report = await inspect(copy.id);
    expect(report.executionId).toBeUndefined();
    expect(report.threads.map((thread) => thread.threadId)).toEqual([copy.id]);
    expect(printed(report)).toContain(`a fork branch's copy, which does not run on its own`);
    expect((await inspect(source.executionId)).threads).toHaveLength(sourceRun.threads.length);
  });
});
