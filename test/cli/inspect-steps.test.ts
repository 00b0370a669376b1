/**
 * `inspect` on a long run: a thread of more than 50 node runs shows its first 10 and last 40, with one
 * line in place of the rest naming the flag that shows them; `--steps all`, `--steps N` and
 * `--steps A-B` choose otherwise (text, and `--json` with `omittedNodeRuns`); a short run prints every
 * run as before; anything else is INVALID_STEPS_WINDOW (exit 2).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import { applyStepWindow, parseStepWindow } from '../../cli/step-window.ts';
import { runCli } from '../support/cli.ts';

let dir: string;
let executionId: string;
const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

/** START, then `count` loop iterations of three node runs each, then END: 3 × count + 3 steps. */
function counting(count: number) {
  return {
    id: 'counting',
    version: 1,
    variables: [{ name: 'n', type: 'number', scope: 'thread', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', dataSource: count, maxIterations: count } },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
      },
      { id: 'lend', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'end', type: 'END', config: { output: { n: '{{n}}' } } },
    ],
    edges: [
      { from: 'start', to: 'loop' },
      { from: 'loop', to: 'inc' },
      { from: 'inc', to: 'lend' },
      { from: 'lend', to: 'end' },
    ],
  };
}

/** The step numbers of the node-run lines inspect printed. */
function printedSteps(stdout: string): number[] {
  return [...stdout.matchAll(/^ {2}step (\d+) +\w+ /gm)].map((match) => Number(match[1]));
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-inspect-steps-'));
  await writeFile(join(dir, 'long.json'), JSON.stringify(counting(40)));
  await writeFile(join(dir, 'short.json'), JSON.stringify(counting(3)));
  const { stdout } = await cli('run', join(dir, 'long.json'));
  executionId = /^execution (\S+)/m.exec(stdout)![1]!;
}, 60_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('inspect --steps', () => {
  it('shows a long thread by its first 10 and last 40 node runs, saying what it left out and how to see it', async () => {
    const { code, stdout } = await cli('inspect', executionId);
    expect(code).toBe(0);
    // 123 steps: 1–10 and 84–123.
    expect(printedSteps(stdout)).toEqual([...range(1, 10), ...range(84, 123)]);
    expect(stdout).toContain(
      '  … 73 node runs (steps 11–83) not shown: --steps all shows every one, --steps 11-83 those\n',
    );
    // What follows the runs is all there.
    expect(stdout).toContain('  result end: {"n":40}\n');
  });

  it('shows every run, the last N, or steps A to B when asked', async () => {
    expect(printedSteps((await cli('inspect', executionId, '--steps', 'all')).stdout)).toEqual(range(1, 123));
    const last = await cli('inspect', executionId, '--steps', '3');
    expect(printedSteps(last.stdout)).toEqual([121, 122, 123]);
    expect(last.stdout).toContain('  … 120 node runs (steps 1–120) not shown');
    const middle = await cli('inspect', executionId, '--steps', '50-52');
    expect(printedSteps(middle.stdout)).toEqual([50, 51, 52]);
    expect(middle.stdout).toContain('  … 49 node runs (steps 1–49) not shown');
    expect(middle.stdout).toContain('  … 71 node runs (steps 53–123) not shown');
  });

  it('keeps --json whole unless --steps is given, then says how many runs it left out', async () => {
    const whole = JSON.parse((await cli('inspect', executionId, '--json')).stdout) as InspectReport;
    expect(whole.threads[0]!.nodes).toHaveLength(123);
    expect(whole.threads[0]!.omittedNodeRuns).toBeUndefined();
    const cut = JSON.parse(
      (await cli('inspect', executionId, '--json', '--steps', '2')).stdout,
    ) as InspectReport;
    expect(cut.threads[0]!.nodes.map((run) => run.step)).toEqual([122, 123]);
    expect(cut.threads[0]!.omittedNodeRuns).toBe(121);
  });

  it('prints a short run whole, with no line about runs left out', async () => {
    const { stdout } = await cli('run', join(dir, 'short.json'));
    const id = /^execution (\S+)/m.exec(stdout)![1]!;
    const shown = await cli('inspect', id);
    expect(printedSteps(shown.stdout)).toEqual(range(1, 12));
    expect(shown.stdout).not.toContain('not shown');
  });

  it('refuses a window it cannot read, before opening any store (INVALID_STEPS_WINDOW, exit 2)', async () => {
    for (const value of ['x', '0', '5-2', '-3', '1-']) {
      const { code, stderr } = await cli('inspect', executionId, '--steps', value);
      expect(code).toBe(2);
      expect(stderr).toContain('INVALID_STEPS_WINDOW');
    }
  });
});

describe('the step window', () => {
  it('keeps a run not recorded yet only in a window that reaches the thread end', () => {
    const runs = [{ step: 1 }, { step: 2 }, { step: undefined }];
    const stepOf = (run: { step: number | undefined }) => run.step;
    expect(applyStepWindow(runs, parseStepWindow('1-1'), stepOf)).toEqual([
      { run: runs[0] },
      { omitted: 2, fromStep: 2, toStep: 2 },
    ]);
    expect(applyStepWindow(runs, parseStepWindow('2-9'), stepOf)).toEqual([
      { omitted: 1, fromStep: 1, toStep: 1 },
      { run: runs[1] },
      { run: runs[2] },
    ]);
  });
});
