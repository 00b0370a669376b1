/**
 * A run started with an input and answers too large for its local record's DynamoDB item (400 KB):
 * `run` starts it (the three go to an S3 object beside the record), and a process killed before its
 * first node leaves a run that `resume` finishes from that record alone, as the fault-free run ends.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { runCli } from '../support/cli.ts';
import { runningCli } from '../support/cli-process.ts';

const HOOK = pathToFileURL(join(import.meta.dirname, 'kill-on-lines.mjs')).href;
const KB = 1024;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-resume-large-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli(args, { cwd: dir });

const WORKFLOW = {
  id: 'large-cli-values',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'ask',
      type: 'USER_INTERACTION',
      config: { userInteractionType: 'ask_for_input', outputVariable: 'answer' },
    },
    {
      id: 'end',
      type: 'END',
      config: {
        output: {
          input: '{{len(input.document)}}',
          answer: '{{len(answer)}}',
          tail: '{{slice(answer, -3)}}',
        },
      },
    },
  ],
  edges: [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'end' },
  ],
};

describe('a run with a 600 KB input and 600 KB answers', () => {
  it('runs, and resumes from its record alone after a kill before its first node (mistyped answers refused first)', async () => {
    const file = join(dir, 'large.json');
    await writeFile(file, JSON.stringify(WORKFLOW));
    await writeFile(join(dir, 'input.json'), JSON.stringify({ document: 'd'.repeat(600 * KB) }));
    await writeFile(join(dir, 'answers.json'), JSON.stringify({ ask: `${'a'.repeat(600 * KB - 3)}end` }));
    const expected = { input: 600 * KB, answer: 600 * KB, tail: 'end' };
    const args = [
      'run',
      file,
      '--input',
      `@${join(dir, 'input.json')}`,
      '--answers',
      `@${join(dir, 'answers.json')}`,
    ];

    const clean = await cli(...args, '--json', '--data-dir', join(dir, 'clean'));
    expect(clean.stderr).not.toMatch(/Item size/);
    expect(clean.code).toBe(0);
    expect((JSON.parse(clean.stdout) as RunJsonResult).output).toEqual(expected);

    const killed = runningCli([...args, '--data-dir', join(dir, 'killed')], {
      cwd: dir,
      nodeArgs: ['--import', HOOK],
      env: { STEPTHREAD_DATA_DIR: '', STEPTHREAD_TEST_KILL_ON: JSON.stringify([['^started execution', 1]]) },
    });
    expect((await killed.exited).signal).toBe('SIGKILL');
    const executionId = /^started execution (\S+)/m.exec(killed.stderr())![1]!;
    // Answers that do not fit the workflow are refused before anything runs: the run stays resumable.
    const mistyped = await cli(
      'resume',
      executionId,
      '--answers',
      '{"aks": "x"}',
      '--data-dir',
      join(dir, 'killed'),
    );
    // A usage error, as for `run` (exit 2).
    expect(mistyped.code).toBe(2);
    expect(mistyped.stderr).toContain('can still be resumed');
    expect(mistyped.stderr).toMatch(
      /INVALID_INTERACTION_ANSWER \(node aks\): .*"aks", which is no USER_INTERACTION node/,
    );
    const resumed = await cli('resume', executionId, '--json', '--data-dir', join(dir, 'killed'));
    expect(resumed.stderr).not.toMatch(/Item size|--workflow/);
    expect(resumed.code).toBe(0);
    const outcome = JSON.parse(resumed.stdout) as RunJsonResult;
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual(expected);
  }, 120_000);
});
