/**
 * `stepthread cancel` from one terminal while `stepthread run` waits on a model in another: a real
 * run process against an OpenAI-compatible stand-in that holds its reply, and the cancel in this
 * process over the same data directory. The run's process sees the cancel mark, closes the model's
 * connection and ends CANCELLED; `runs` and `inspect` say CANCELLED (inspect with the reason), `resume` refuses with
 * RUN_CANCELLED, a second cancel changes nothing, and bad references are coded errors.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CancelJson } from '../../cli/commands/cancel.ts';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { runCli } from '../support/cli.ts';
import { runningCli } from '../support/cli-process.ts';

let dir: string;
let model: ScriptedServer;
beforeAll(async () => {
  [dir, model] = await Promise.all([mkdtemp(join(tmpdir(), 'stepthread-cancel-')), startScriptedServer()]);
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

const dataDir = () => join(dir, 'data');
const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir()], { cwd: dir });

async function essayWorkflow(): Promise<string> {
  const file = join(dir, 'essay.json');
  await writeFile(
    file,
    JSON.stringify({
      id: 'essay',
      version: 1,
      profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'write', type: 'LLM', config: { prompt: 'Write a long essay.' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.write}}' } },
      ],
      edges: [
        { from: 'start', to: 'write' },
        { from: 'write', to: 'end' },
      ],
    }),
  );
  return file;
}

describe('stepthread cancel', () => {
  it('reaches a run in another process: its model call is closed, it ends CANCELLED, and resume refuses it', async () => {
    const workflow = await essayWorkflow();
    // The reply (streamed: the run's stderr shows it) never comes: the server holds its first chunk.
    model.reply({ ...textReply('never sent'), beforeChunk: () => new Promise(() => {}) });
    const run = runningCli(['run', workflow, '--data-dir', dataDir()], { cwd: dir });
    await vi.waitFor(() => expect(model.requests).toHaveLength(1), { timeout: 30_000, interval: 50 });
    const executionId = /started execution (\S+)/.exec(run.stderr())![1]!;

    const cancelled = await cli('cancel', executionId, '--reason', 'took too long', '--json');
    expect(cancelled.stderr).toBe('');
    expect(cancelled.code).toBe(0);
    const json = JSON.parse(cancelled.stdout) as CancelJson;
    expect(json).toEqual({
      executionId,
      threadId: expect.stringMatching(/^t-/),
      status: 'CANCELLED',
      reason: 'took too long',
      alreadyCancelled: false,
      threadsCancelled: 1,
      interactionsClosed: 0,
    });

    // The run's process saw the mark: it closed the model's connection and ended CANCELLED.
    const { code } = await run.exited;
    expect(code).toBe(1);
    expect(run.stderr()).toContain(
      'stepthread: run CANCELLED: RUN_CANCELLED: the run was cancelled: took too long',
    );
    expect(model.abandoned).toHaveLength(1);

    const runs = JSON.parse((await cli('runs', '--json')).stdout) as RunsJsonEntry[];
    expect(runs.find((row) => row.executionId === executionId)?.status).toBe('CANCELLED');
    const onlyCancelled = JSON.parse(
      (await cli('runs', '--status', 'cancelled', '--json')).stdout,
    ) as RunsJsonEntry[];
    expect(onlyCancelled.map((row) => row.executionId)).toEqual([executionId]);
    const inspected = await cli('inspect', executionId, '--json');
    const report = JSON.parse(inspected.stdout) as InspectReport;
    expect(report.executionStatus).toBe('CANCELLED');
    expect(report.threads.map((thread) => thread.status)).toEqual(['CANCELLED']);
    // The reason the cancel was given, and when, as its mark keeps them.
    expect(report.cancelled).toEqual({ at: expect.any(String), reason: 'took too long' });
    const shown = (await cli('inspect', executionId, '--no-conversation')).stdout.split('\n');
    expect(shown[1]).toBe(`cancelled at ${report.cancelled!.at}: took too long`);

    const resumed = await cli('resume', executionId);
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain('RUN_CANCELLED');
    expect(resumed.stderr).toContain('took too long');

    // Again: nothing changes, the first reason stays.
    const again = await cli('cancel', json.threadId);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`execution ${executionId} was cancelled already (took too long)\n`);
  }, 90_000);

  it('refuses a run that ended, and a reference to nothing, with codes', async () => {
    const workflow = await essayWorkflow();
    model.reply(textReply('Short.'));
    const done = await cli('run', workflow, '--json');
    expect(done.code).toBe(0);
    const { executionId } = JSON.parse(done.stdout) as { executionId: string };
    const ended = await cli('cancel', executionId);
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain(`RUN_ALREADY_ENDED: execution ${executionId} ended COMPLETED`);
    const missing = await cli('cancel', 'no-such-run');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('EXECUTION_NOT_FOUND');
  }, 60_000);
});
