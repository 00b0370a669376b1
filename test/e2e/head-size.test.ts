/**
 * The head does not grow with the run's history (issue 29): a loop that continues as new every ~15
 * steps keeps its head the size it had at step 100, under one DynamoDB write unit (1 KB), because the
 * events recorded outside steps (THREAD_CONTINUED, status changes) live in items of their own; the
 * journal still lists each of them between the steps it came between. Counts only (bytes, positions).
 * The same workload at 10,000 steps: bench/head-size.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HeadSizes, measureHeadLoop } from '../../bench/head-size.ts';
import { createDocumentClient } from '../../functions/aws/dynamo-client.ts';
import { type E2e, startE2e } from './helpers.ts';

let e2e: E2e;
let run: HeadSizes;
const STEPS = 2_000;

beforeAll(async () => {
  e2e = await startE2e('head-size');
  const reader = { dynamo: createDocumentClient(e2e.services.target), tableName: 'e2e-head-size' };
  run = await measureHeadLoop(e2e.runtime, reader, STEPS);
}, 600_000);
afterAll(() => e2e.close());

describe('the thread head across continuations', () => {
  it(`a ${STEPS}-step loop continuing every ~15 steps: the head after the last step is within 10% of its size after step 100`, () => {
    expect(run.outcome.status).toBe('COMPLETED');
    expect(run.outcome.output).toEqual({ count: Math.floor((STEPS - 2) / 3) });
    expect(run.outcome.executions.length).toBeGreaterThan(100);
    const at100 = run.sampled.get(100)!;
    expect(run.sampled.size).toBe(Math.floor(Number(run.head.step) / 100));
    for (const [step, bytes] of run.sampled) {
      expect(Math.abs(bytes - at100), `head after step ${step}`).toBeLessThanOrEqual(at100 * 0.1);
      // One write unit per step's UpdateItem: what the head holds is billed on every step.
      expect(bytes, `head after step ${step}`).toBeLessThanOrEqual(1024);
    }
    expect(Math.abs(run.last - at100)).toBeLessThanOrEqual(at100 * 0.1);
    expect(JSON.stringify(run.head)).not.toContain('THREAD_CONTINUED');
  });

  it('the journal lists every continuation between the steps it came between', async () => {
    const journal = await e2e.runtime.stores.threads.readJournal(run.outcome.threadId);
    const continued = journal.events.filter((event) => event.type === 'THREAD_CONTINUED');
    expect(continued).toHaveLength(run.outcome.executions.length - 1);
    // Each step records one NODE_STARTED: those before a continuation are the steps it came after.
    let started = 0;
    for (const event of journal.events) {
      if (event.type === 'NODE_STARTED') started += 1;
      if (event.type === 'THREAD_CONTINUED') expect(started).toBe(event.step);
    }
    expect(started).toBe(run.head.step);
  });
});
