/**
 * Budgets and cost at the CLI (issue 27): `run --budget` overrides the workflow's budget for one run,
 * `start --budget` sends it in the execution input, a budget that is none is INVALID_BUDGET (exit 2)
 * before anything runs, and `inspect` (human and --json) and `runs --json` show what a run spent:
 * tokens and dollars per LLM step and for the whole run, with the budget spent, and the estimate of
 * its AWS side deployed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../cli/commands/inspect.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import { runCli } from '../support/cli.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

/** $1 and $2 per million tokens, on the scripted provider (which is free without `pricing`). */
const PRICING = { inputPerMTok: 1, outputPerMTok: 2 };

const loop = {
  id: 'budget-cli',
  version: 1,
  budget: { maxTokens: 100_000 },
  profiles: { default: { provider: 'scripted', responses: ['Noted, and more besides.'], pricing: PRICING } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: 5 } },
    { id: 'chat', type: 'LLM', config: { prompt: 'Go on.' } },
    { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'loop' },
    { from: 'loop', to: 'chat' },
    { from: 'chat', to: 'next' },
    { from: 'next', to: 'end' },
  ],
};

let dir: string;
let file: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-budget-cli-'));
  file = join(dir, 'loop.json');
  await writeFile(file, JSON.stringify(loop));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (args: string[], sfn?: ReturnType<typeof recordingSfn>) =>
  runCli(args, { cwd: dir, env: {}, ...(sfn ? { services: { sfn } } : {}) });

describe('run --budget, inspect and runs --json', () => {
  const dataDir = () => join(dir, 'data');

  it('a full run: inspect shows each step and the run at tokens × prices; runs --json the same', async () => {
    const ran = await cli(['run', file, '--json', '--data-dir', dataDir()]);
    expect(ran.code).toBe(0);
    const { executionId } = JSON.parse(ran.stdout) as RunJsonResult;

    const inspected = await cli(['inspect', executionId, '--json', '--data-dir', dataDir()]);
    const report = JSON.parse(inspected.stdout) as InspectReport;
    const runs = report.threads[0]!.nodes.filter((run) => run.nodeId === 'chat');
    expect(runs).toHaveLength(5);
    let input = 0;
    let output = 0;
    for (const run of runs) {
      const usage = run.usage!;
      expect(usage.modelCalls).toBe(1);
      expect(usage.costUsd).toBeCloseTo((usage.inputTokens * 1 + usage.outputTokens * 2) / 1e6, 12);
      input += usage.inputTokens;
      output += usage.outputTokens;
    }
    const cost = report.cost!;
    expect(cost).toMatchObject({
      modelCalls: 5,
      inputTokens: input,
      outputTokens: output,
      tokens: input + output,
    });
    expect(cost.costUsd).toBeCloseTo((input + 2 * output) / 1e6, 12);
    expect(cost.spent?.maxTokens).toMatchObject({ spent: input + output, limit: 100_000 });

    const human = await cli(['inspect', executionId, '--no-conversation', '--data-dir', dataDir()]);
    expect(human.stdout).toContain(
      `cost      $${cost.costUsd.toFixed(6)}: ${input + output} tokens (${input} in, ${output} out) in 5 model calls, 0 tool calls`,
    );
    expect(human.stdout).toContain(`budget    maxTokens 100000: ${input + output} spent (`);
    const first = runs[0]!.usage!;
    expect(human.stdout).toContain(`chat (LLM)`);
    expect(human.stdout).toContain(
      `${first.inputTokens + first.outputTokens} tokens (${first.inputTokens} in, ${first.outputTokens} out), $${first.costUsd!.toFixed(6)}`,
    );

    // Its AWS side, deployed, estimated from its steps: each step's Task, the Choice after each
    // LOOP_START and LOOP_END, and the Choice a definition that may continue the run starts at.
    const aws = report.awsCost!;
    const steps = report.threads[0]!.nodes;
    const choices = steps.filter((run) => ['LOOP_START', 'LOOP_END'].includes(run.nodeType)).length;
    expect(aws.stateTransitions).toBe(steps.length + choices + 1);
    expect(aws.lambdaInvocations).toBe(steps.length);
    expect(Object.keys(aws.byNode).sort()).toEqual(['chat', 'end', 'loop', 'next', 'start']);
    expect(aws.usd).toBeGreaterThan(0);
    expect(human.stdout).toContain(`, 0 tool calls · aws ≈ $${aws.usd.toFixed(6)}\n`);

    const listed = await cli(['runs', '--json', '--data-dir', dataDir()]);
    const entry = (JSON.parse(listed.stdout) as RunsJsonEntry[]).find(
      (run) => run.executionId === executionId,
    );
    expect(entry?.cost).toEqual(cost);
    expect(entry?.awsCost).toEqual(aws);
  });

  it('run --budget overrides the workflow budget: the run fails BUDGET_EXCEEDED at the crossing call', async () => {
    const ran = await cli(['run', file, '--json', '--budget', '{"maxTokens": 20}', '--data-dir', dataDir()]);
    expect(ran.code).toBe(1);
    const result = JSON.parse(ran.stdout) as RunJsonResult;
    expect(result.status).toBe('FAILED');
    expect(result.error?.code).toBe('BUDGET_EXCEEDED');
    expect(result.error?.message).toContain('maxTokens 20');
    const inspected = await cli(['inspect', result.executionId, '--json', '--data-dir', dataDir()]);
    const report = JSON.parse(inspected.stdout) as InspectReport;
    expect(report.cost?.budget).toEqual({ maxTokens: 20 });
    expect(report.cost!.tokens).toBeGreaterThan(20);
  });

  it.each([
    ['{"maxTokens": 0}', 'maxTokens'],
    ['{"maxCostUsd": "1"}', 'maxCostUsd'],
    ['{"maxToolCalls": 1.5}', 'maxToolCalls'],
    ['{"maxTokenz": 5}', 'maxTokenz'],
    ['[1]', 'object'],
    ['{maxTokens: 5}', 'not valid JSON'],
  ])('run --budget %s is INVALID_BUDGET (exit 2), before anything runs', async (budget, named) => {
    const ran = await cli(['run', file, '--budget', budget, '--data-dir', join(dir, 'never')]);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/^stepthread: INVALID_BUDGET: /);
    expect(ran.stderr).toContain(named);
    expect(ran.stdout).toBe('');
  });
});

describe('start --budget', () => {
  const ARN = 'arn:aws:states:us-east-1:123456789012';
  const machines = () =>
    recordingSfn((name) => {
      if (name === 'ListStateMachinesCommand') {
        return {
          stateMachines: [
            { name: 'stepthread-budget-cli', stateMachineArn: `${ARN}:stateMachine:stepthread-budget-cli` },
          ],
        };
      }
      if (name === 'StartExecutionCommand')
        return { executionArn: `${ARN}:execution:stepthread-budget-cli:x` };
      return { type: 'STANDARD' };
    });

  it('sends the budget in the execution input, where START reads it', async () => {
    const sfn = machines();
    const started = await cli(
      ['start', 'budget-cli', '--name', 'x', '--input', '{"a": 1}', '--budget', '{"maxCostUsd": 2.5}'],
      sfn,
    );
    expect(started.code).toBe(0);
    const start = sfn.sent.find((command) => command.name === 'StartExecutionCommand')!;
    expect(JSON.parse(String(start.input.input))).toEqual({ input: { a: 1 }, budget: { maxCostUsd: 2.5 } });
  });

  it('refuses a budget that is none before calling AWS', async () => {
    const sfn = machines();
    const started = await cli(['start', 'budget-cli', '--budget', '{"maxCostUsd": -1}'], sfn);
    expect(started.code).toBe(2);
    expect(started.stderr).toContain('INVALID_BUDGET');
    expect(sfn.sent).toEqual([]);
  });
});
