/**
 * Constant cost per step (counts, not times): a 1,000-node chain and a 500-turn chat loop, each turn a
 * 1 KB prompt and a 1 KB reply. The last step writes what the tenth step wrote, total bytes grow
 * linearly with the work, and every step makes one S3 PUT for its segment, plus one for the page or
 * tail page it fills. At T = 320, the bounds issue 29 set: a cold read at turn t fetches at most
 * ⌈t/32⌉ + 8 objects in at most 3 rounds; total bytes ≤ 4 × raw + 1 KB per node step. Figures:
 * bench/long-runs.ts.
 */
import { describe, expect, it } from 'vitest';
import { type LongRun, runLongRun, type StepCost, totalBytes, type Workload } from '../../bench/long-runs.ts';

/** The LLM steps: where a cost growing with the conversation or the run would show. */
function llmSteps(run: LongRun): StepCost[] {
  return run.steps.filter((step) => step.state === 'chat' || /^n\d+$/.test(step.state));
}

/** What a step PUT for its own segment (a page or tail page it filled aside). */
const segmentBytes = (step: StepCost) => step.s3PutBytes - step.pagePutBytes;

/** Turns (1-based) that fill a page (every 32nd) or a tail page (every 5th within a page). */
function fillsAPage(turn: number): boolean {
  const position = ((turn - 1) % 32) + 1;
  return position === 32 || position % 5 === 0;
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
  // Its segment weighs the same wherever it sits in the log.
  expect(Math.abs(segmentBytes(last) - segmentBytes(tenth))).toBeLessThanOrEqual(segmentBytes(tenth) * 0.1);
  // Reads do not grow either: no step reads more than the tenth did.
  expect(last.dynamoReads).toBeLessThanOrEqual(tenth.dynamoReads);
  for (const step of run.steps) {
    // START writes the whole initial state once (head, its record, the listing, the execution).
    const bound = step.state === 'start' ? 3072 : 2048;
    expect(step.dynamoWriteBytes, `${step.state} (step ${step.step})`).toBeLessThanOrEqual(bound);
  }
  // One PUT per step (its segment, or START's large values), two when a turn fills a page: each page
  // and tail page is written once, by the turn that fills it, and holds at most 32 turns.
  llm.forEach((step, i) => {
    expect(step.s3Puts, `turn ${i + 1}`).toBe(fillsAPage(i + 1) ? 2 : 1);
    expect(step.pagePutBytes, `turn ${i + 1}`).toBeLessThanOrEqual(32 * (run.rawMessageBytes / turns) + 4096);
  });
  for (const step of run.steps.filter((s) => !llm.includes(s))) expect(step.s3Puts).toBeLessThanOrEqual(1);
  // Linear bytes: at most 4 × the raw message text plus 1 KB per node step.
  expect(totalBytes(run)).toBeLessThanOrEqual(4 * run.rawMessageBytes + 1024 * run.steps.length);
}

/** A cold read at the run's last turn: ⌈t/32⌉ + 8 S3 GETs at most, in at most 3 rounds, no Query. */
function expectPagedColdRead(run: LongRun, turns: number): void {
  expect(run.coldRead.messages).toBe(2 * turns);
  expect(run.coldRead.segments).toBe(turns);
  expect(run.coldRead.s3Gets).toBeLessThanOrEqual(Math.ceil(turns / 32) + 8);
  expect(run.coldRead.rounds).toBeLessThanOrEqual(3);
  expect(run.coldRead.dynamoQueries).toBe(0);
}

describe('constant cost per step', () => {
  it('a 1,000-node chain: the last step writes what the tenth wrote', async () => {
    const run = await runLongRun('chain', 1000);
    expectConstantSteps(run, 1000);
    expectPagedColdRead(run, 1000);
  }, 240_000);

  it('a 500-turn chat loop: the last turn writes what the tenth wrote', async () => {
    const run = await runLongRun('chat', 500);
    expectConstantSteps(run, 500);
    expectPagedColdRead(run, 500);
  }, 240_000);

  it.each(['chain', 'chat'] as Workload[])(
    '%s at T = 320: cold read ≤ ⌈t/32⌉ + 8 GETs in ≤ 3 rounds, bytes ≤ 4 × raw + 1 KB per node step, last turn as the tenth',
    async (workload) => {
      const run = await runLongRun(workload, 320);
      expectConstantSteps(run, 320);
      expectPagedColdRead(run, 320);
      // Turn 320 fills the tenth page: 10 pages, 11 objects (the head, 10 pages), 3 rounds.
      expect(run.coldRead).toMatchObject({ s3Gets: 11, rounds: 3 });
    },
    240_000,
  );

  it.each(['chain', 'chat'] as Workload[])(
    '%s: bytes(T=200) / bytes(T=50) ≤ 4.2',
    async (workload) => {
      const [small, large] = [await runLongRun(workload, 50), await runLongRun(workload, 200)];
      expect(totalBytes(large) / totalBytes(small)).toBeLessThanOrEqual(4.2);
    },
    120_000,
  );
});
