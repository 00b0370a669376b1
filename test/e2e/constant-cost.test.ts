/**
 * Constant cost per step (counts, not times): a 1,000-node chain and a 500-turn chat loop, each turn a
 * 1 KB prompt and a 1 KB reply. The last step writes what the tenth step wrote, total bytes grow
 * linearly with the work, and every step makes at most one S3 PUT. Figures: bench/long-runs.ts.
 */
import { describe, expect, it } from 'vitest';
import { type LongRun, runLongRun, type StepCost, totalBytes, type Workload } from '../../bench/long-runs.ts';

/** The LLM steps: where a cost growing with the conversation or the run would show. */
function llmSteps(run: LongRun): StepCost[] {
  return run.steps.filter((step) => step.state === 'chat' || /^n\d+$/.test(step.state));
}

function expectConstantSteps(run: LongRun, turns: number): void {
  expect(run.outcome.status).toBe('COMPLETED');
  const llm = llmSteps(run);
  expect(llm).toHaveLength(turns);
  const tenth = llm[9]!;
  const last = llm.at(-1)!;
  // The bound: what a step writes to DynamoDB (item sizes as billed) stays small and does not grow.
  expect(last.dynamoWriteBytes).toBeLessThanOrEqual(2048);
  expect(Math.abs(last.dynamoWriteBytes - tenth.dynamoWriteBytes)).toBeLessThanOrEqual(
    tenth.dynamoWriteBytes * 0.1,
  );
  expect(last.largestItemBytes).toBeLessThanOrEqual(tenth.largestItemBytes * 1.1);
  // Reads do not grow either: no step reads more than the tenth did.
  expect(last.dynamoReads).toBeLessThanOrEqual(tenth.dynamoReads);
  for (const step of run.steps) {
    expect(step.s3Puts, `${step.state} (step ${step.step})`).toBeLessThanOrEqual(1);
    // START writes the whole initial state once (head, its record, the listing, the execution).
    const bound = step.state === 'start' ? 3072 : 2048;
    expect(step.dynamoWriteBytes, `${step.state} (step ${step.step})`).toBeLessThanOrEqual(bound);
  }
  // Linear bytes: at most twice the raw message text plus 1 KB per node step.
  expect(totalBytes(run)).toBeLessThanOrEqual(2 * run.rawMessageBytes + 1024 * run.steps.length);
}

describe('constant cost per step', () => {
  it('a 1,000-node chain: the last step writes what the tenth wrote', async () => {
    expectConstantSteps(await runLongRun('chain', 1000), 1000);
  }, 240_000);

  it('a 500-turn chat loop: the last turn writes what the tenth wrote', async () => {
    expectConstantSteps(await runLongRun('chat', 500), 500);
  }, 240_000);

  it.each(['chain', 'chat'] as Workload[])(
    '%s: bytes(T=200) / bytes(T=50) ≤ 4.2',
    async (workload) => {
      const [small, large] = [await runLongRun(workload, 50), await runLongRun(workload, 200)];
      expect(totalBytes(large) / totalBytes(small)).toBeLessThanOrEqual(4.2);
    },
    120_000,
  );
});
