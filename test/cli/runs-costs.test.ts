/**
 * `runs --json` estimates its runs' AWS side several runs at a time (AWS_COST_CONCURRENCY), each
 * entry keeping its place: the same entries, costs and order as estimating one run after another.
 * Real dynalite and s3rver; the clients count the store requests in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsCostOfRun } from '../../cli/aws-cost.ts';
import { AWS_COST_CONCURRENCY, type RunsJsonEntry, withCosts } from '../../cli/commands/runs.ts';
import { runCostOf } from '../../cli/run-cost.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { createExecutionIndex } from '../../functions/stores/execution-index.ts';
import { createSpendStore } from '../../functions/stores/spend-store.ts';
import { type E2e, startE2e, valid } from '../e2e/helpers.ts';
import { longLoop } from '../support/long-loop.ts';

const NAMES = { tableName: 'e2e-runs-costs', bucketName: 'e2e-runs-costs' };
/** More runs than are estimated at once. */
const RUNS = AWS_COST_CONCURRENCY + 3;

let e2e: E2e;
let entries: RunsJsonEntry[];

beforeAll(async () => {
  e2e = await startE2e('runs-costs');
  const prepared = e2e.runtime.prepare(valid(longLoop), { continueAfterEvents: false });
  const ran: RunsJsonEntry[] = [];
  // Runs of different lengths, so each estimate differs from the others.
  for (let count = 1; count <= RUNS; count += 1) {
    const outcome = await prepared.run({ count });
    expect(outcome.status).toBe('COMPLETED');
    ran.push({
      executionId: outcome.executionId,
      workflowId: longLoop.id,
      status: outcome.status,
      startTime: new Date(2025, 0, 1, 0, count).toISOString(),
      durationMs: count,
      rootThreadId: outcome.threadId,
    });
  }
  // Newest first as `runs` lists them, and a run with no root thread yet (it is left as it is).
  entries = [
    ...ran.reverse().slice(0, 4),
    { executionId: 'no-root-yet', workflowId: longLoop.id, status: 'RUNNING', startTime: '', durationMs: 0 },
    ...ran.slice(4),
  ];
}, 240_000);
afterAll(() => e2e.close());

/** Each run's costs estimated one run after another, as `runs --json` gave them before. */
async function oneAfterAnother(clients: ReturnType<typeof createAwsClients>): Promise<RunsJsonEntry[]> {
  const stores = { threads: e2e.runtime.stores.threads, executions: createExecutionIndex(clients) };
  const spends = createSpendStore(clients);
  const out: RunsJsonEntry[] = [];
  for (const entry of entries) {
    if (entry.rootThreadId === undefined) {
      out.push(entry);
      continue;
    }
    const record = await stores.executions.getExecution(entry.executionId);
    const awsCost = await awsCostOfRun(stores, record);
    out.push({
      ...entry,
      cost: runCostOf(await spends.get(entry.rootThreadId)),
      ...(awsCost ? { awsCost } : {}),
    });
  }
  return out;
}

describe('runs --json costs', () => {
  it('estimates several runs at once, each entry in its place with the costs one at a time gives', async () => {
    const clients = createAwsClients(e2e.services.target, NAMES);
    const expected = await oneAfterAnother(clients);
    const flight = { now: 0, most: 0 };
    aroundCommands(clients.dynamo, async (_call, next) => {
      flight.now += 1;
      flight.most = Math.max(flight.most, flight.now);
      try {
        return await next();
      } finally {
        flight.now -= 1;
      }
    });

    const listed = await withCosts(entries, clients, true);

    expect(listed).toEqual(expected);
    expect(listed.map((entry) => entry.executionId)).toEqual(entries.map((entry) => entry.executionId));
    const invocations = listed.map((entry) => entry.awsCost?.lambdaInvocations);
    // 3 × count + 3 steps, newest (longest) first; none for the run without a root thread.
    expect(invocations).toEqual([36, 33, 30, 27, undefined, 24, 21, 18, 15, 12, 9, 6]);
    // One run's estimate here makes one request at a time: more in flight is several runs at once.
    expect(flight.most).toBeGreaterThan(1);
    expect(flight.most).toBeLessThanOrEqual(AWS_COST_CONCURRENCY);
  });

  it('leaves the entries as they are without --json', async () => {
    const clients = createAwsClients(e2e.services.target, NAMES);
    expect(await withCosts(entries, clients, false)).toBe(entries);
  });
});
