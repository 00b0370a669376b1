/**
 * The AWS side of a run (cli/aws-cost.ts), estimated from what the run records: for each example
 * bench/example-costs.ts prices, a run on the embedded runtime gives the same state transitions and
 * Lambda invocations as the bench measures (the compiled definition's shape), dollars that are the
 * documented formula over the estimate's counts, and within AWS_COST_TOLERANCE of the bench's
 * measured figure for the same example.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExampleCost, exampleCosts } from '../../bench/example-costs.ts';
import { EXAMPLE_INPUTS } from '../../bench/runtime.ts';
import {
  AWS_COST_TOLERANCE,
  AWS_PRICES,
  type AwsCost,
  estimateAwsCost,
  runMetersOf,
  WRITE_UNITS_PER_WRITE,
} from '../../cli/aws-cost.ts';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { type E2e, startE2e } from './helpers.ts';

const EXAMPLES = join(import.meta.dirname, '../../examples');

let e2e: E2e;
let measured: ExampleCost[];
beforeAll(async () => {
  [e2e, measured] = await Promise.all([startE2e('aws-cost'), exampleCosts('gpt-4o-mini')]);
}, 600_000);
afterAll(() => e2e?.close());

/** docs/performance.md, "What a run costs": the counts at the dated prices. */
function formula(cost: AwsCost): number {
  return (
    cost.stateTransitions * 0.000025 +
    cost.lambdaInvocations * 0.0000002 +
    cost.lambdaGbSeconds * 0.0000133334 +
    cost.dynamoReads * 0.000000125 +
    cost.dynamoWrites * 1.17 * 0.000000625 +
    cost.s3Puts * 0.000005
  );
}

/** Runs an example on the embedded runtime and estimates its AWS side from what it recorded. */
async function estimateOf(example: string): Promise<{ estimate: AwsCost; nodeIds: string[] }> {
  const { workflow } = validateWorkflow(JSON.parse(readFileSync(join(EXAMPLES, `${example}.json`), 'utf8')));
  const outcome = await e2e.runtime.prepare(workflow!).run(EXAMPLE_INPUTS[example] ?? {}, {
    answerInteraction: async () => ({ kind: 'approve' }),
    workflowDir: EXAMPLES,
  });
  expect(outcome.status).toBe('COMPLETED');
  const threads = (await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId)).map(
    (entry) => entry.thread,
  );
  const root = threads.find((thread) => thread.id === outcome.threadId)!;
  const nodeIds: string[] = [];
  for (const thread of threads) {
    const journal = await e2e.runtime.stores.threads.readJournal(thread.id);
    nodeIds.push(...journal.executionHistory.map((entry) => entry.nodeId));
  }
  const estimate = estimateAwsCost(await runMetersOf(e2e.runtime.stores.threads, root, threads, 1));
  return { estimate, nodeIds: [...new Set(nodeIds)].sort() };
}

describe('the AWS cost of a run, estimated from its records', () => {
  it('prices as documented, dated in one place', () => {
    expect(AWS_PRICES).toMatchObject({
      transition: 0.000025,
      lambdaRequest: 0.0000002,
      lambdaGbSecond: 0.0000133334,
      dynamoRead: 0.000000125,
      dynamoWrite: 0.000000625,
      s3Put: 0.000005,
    });
    expect(WRITE_UNITS_PER_WRITE).toBe(1.17);
  });

  it.each([
    'context-pipeline',
    'fork-join-research',
    'refund-approval',
    'route-loop',
    'support-triage',
    'vendor-review',
  ])(
    '%s: the transitions and invocations the bench measures; dollars by the formula, near its figure',
    async (example) => {
      const bench = measured.find((cost) => cost.example === example)!;
      expect(bench.aws).toBeDefined();
      const { estimate, nodeIds } = await estimateOf(example);
      expect(estimate.stateTransitions).toBe(bench.aws!.stateTransitions);
      expect(estimate.lambdaInvocations).toBe(bench.aws!.lambdaInvocations);
      // Rounded as shown (dollars to the picodollar, GB-seconds to 6 places): no binary noise in the JSON.
      expect(estimate.usd).toBeCloseTo(formula(estimate), 10);
      expect(JSON.stringify(estimate)).not.toMatch(/\d\.\d{13,}/);
      // The nodes' shares and the run's bookkeeping (fork branches, a continuing definition's entry) make the whole.
      const nodes = Object.values(estimate.byNode).reduce((total, usd) => total + usd, 0);
      expect(nodes + estimate.bookkeepingUsd).toBeCloseTo(estimate.usd, 10);
      expect(Object.keys(estimate.byNode).sort()).toEqual(nodeIds);
      const off = Math.abs(estimate.usd - bench.awsUsd!) / bench.awsUsd!;
      expect(off, `estimate $${estimate.usd} against the bench's $${bench.awsUsd}`).toBeLessThanOrEqual(
        AWS_COST_TOLERANCE,
      );
    },
  );
});
