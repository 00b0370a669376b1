/**
 * `inspect` on a long run: the node runs of a thread are windowed (the first and last ones, with a
 * line for the steps left out and the flag that shows them), and only the step records shown are
 * read, so what inspect costs does not grow with the run (counted requests and records read).
 * Results, variables and output stay whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateAwsCost, runMetersOf } from '../../cli/aws-cost.ts';
import { buildInspectReport, type InspectReport, printReport } from '../../cli/commands/inspect.ts';
import type { CliIo } from '../../cli/io.ts';
import type { StepSelection } from '../../cli/step-window.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands, type CommandCall } from '../../functions/aws/meter.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { STEP_PREFIX } from '../../functions/stores/table.ts';
import { type E2e, startE2e, valid } from '../e2e/helpers.ts';
import { longLoop } from '../support/long-loop.ts';

const NAMES = { tableName: 'e2e-inspect-steps', bucketName: 'e2e-inspect-steps' };

const loop = valid(longLoop);

let e2e: E2e;
const runs: Record<'short' | 'medium' | 'long', string> = { short: '', medium: '', long: '' };
/**
 * What the counting clients saw while `counted` ran: requests, whole step records returned, and the
 * Query pages of the projected pass over the STEP# records (the results' node ids and the AWS
 * estimate's meters: DynamoDB pages it by the records' stored size, 1 MB, about 3,300 of these steps).
 */
const seen = { on: false, requests: 0, stepRecords: 0, stepPassPages: 0 };

/** A Query of a thread's STEP# records that reads some of their fields only. */
function isStepPass(call: CommandCall): boolean {
  const values = call.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
  const from = String(values?.[':from'] ?? values?.[':prefix'] ?? '');
  return (
    call.commandName === 'QueryCommand' &&
    call.input.ProjectionExpression !== undefined &&
    from.startsWith(STEP_PREFIX)
  );
}

beforeAll(async () => {
  e2e = await startE2e('inspect-steps');
  // One execution each (no continue-as-new), so only the length of the run differs.
  const prepared = e2e.runtime.prepare(loop, { continueAfterEvents: false });
  for (const [name, count] of [
    ['short', 10],
    ['medium', 100],
    ['long', 1500],
  ] as const) {
    const outcome = await prepared.run({ count });
    expect(outcome.status).toBe('COMPLETED');
    runs[name] = outcome.threadId;
  }
  aroundCommands(createAwsClients(e2e.services.target, NAMES).dynamo, async (call, next) => {
    const response = (await next()) as {
      Items?: Record<string, unknown>[];
      Responses?: Record<string, Record<string, unknown>[]>;
    };
    if (seen.on) {
      seen.requests += 1;
      if (isStepPass(call)) seen.stepPassPages += 1;
      const items = [...(response.Items ?? []), ...Object.values(response.Responses ?? {}).flat()];
      // A whole step record has its events; the node-id pass of the results reads none.
      seen.stepRecords += items.filter((item) => 'events' in item && 'result' in item).length;
    }
    return response;
  });
}, 240_000);
afterAll(() => e2e.close());

/** The report, and what reading it cost, through clients that count (a fresh runtime: no caches). */
async function counted(threadId: string, steps: StepSelection) {
  const runtime = createLocalRuntime({ clients: createAwsClients(e2e.services.target, NAMES) });
  Object.assign(seen, { on: true, requests: 0, stepRecords: 0, stepPassPages: 0 });
  try {
    const report = await buildInspectReport(runtime, threadId, undefined, steps);
    const { requests, stepRecords, stepPassPages } = seen;
    return { report, requests, stepRecords, stepPassPages };
  } finally {
    seen.on = false;
  }
}

function printed(report: InspectReport): string[] {
  let out = '';
  const io: CliIo = { stdout: (text) => (out += text), stderr: () => {}, readFile: async () => '' };
  printReport(report, io);
  return out.split('\n');
}

/** The parts of a report that a window must leave as they are. */
function whole(report: InspectReport) {
  return report.threads.map(({ nodes: _nodes, stepsNotShown: _window, ...rest }) => rest);
}

describe('inspect of a long run', () => {
  it('lists the first 10 and last 40 node runs of 4,503, with a line for the rest, and results whole', async () => {
    const { report } = await counted(runs.long, 'default');
    const all = (await counted(runs.long, 'all')).report;
    const [thread] = report.threads;
    expect(thread!.nodes).toHaveLength(50);
    expect(thread!.nodes.map((run) => run.step)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => i + 1),
      ...Array.from({ length: 40 }, (_, i) => 4464 + i),
    ]);
    expect(thread!.nodes).toEqual([
      ...all.threads[0]!.nodes.slice(0, 10),
      ...all.threads[0]!.nodes.slice(-40),
    ]);
    expect(thread!.stepsNotShown).toEqual({
      total: 4503,
      ranges: [{ from: 11, to: 4463, atNode: 10 }],
      showAll: '--steps all',
    });
    expect(all.threads[0]!.nodes).toHaveLength(4503);
    expect(all.threads[0]!.stepsNotShown).toBeUndefined();
    expect(whole(report)).toEqual(whole(all));
    expect(thread!.results).toEqual({
      start: { count: 1500 },
      loop: { exit: true, iterations: 1500 },
      inc: 1500,
      lend: { exit: false, index: 1499 },
      end: { n: 1500 },
    });

    const lines = printed(report);
    const omitted = lines.findIndex((line) => line.includes('not shown'));
    expect(lines[omitted]).toBe(
      '  … 4,453 of 4,503 steps not shown (steps 11-4463): --steps 11-4463 shows them, --steps all every step',
    );
    expect(lines[omitted - 1]).toMatch(/^ {2}step 10 {3}COMPLETED lend \(LOOP_END\)/);
    expect(lines[omitted + 1]).toMatch(/^ {2}step 4464 COMPLETED inc \(VARIABLE\)/);
    expect(lines.filter((line) => line.startsWith('  step '))).toHaveLength(50);
  });

  it('reads only the step records it shows: the same records and requests for 303 steps as for 4,503', async () => {
    const medium = await counted(runs.medium, 'default');
    const long = await counted(runs.long, 'default');
    // Besides the one projected pass over every step record (the node ids and the AWS estimate's
    // meters together: one request per 1 MB of records), the same requests.
    expect(long.requests - long.stepPassPages).toBe(medium.requests - medium.stepPassPages);
    expect([medium.stepPassPages, long.stepPassPages]).toEqual([1, 2]);
    // The 50 listed, and the latest step of each of the 5 nodes (results).
    expect(long.stepRecords).toBeLessThanOrEqual(55);
    expect(long.stepRecords).toBe(medium.stepRecords);
    const all = await counted(runs.long, 'all');
    expect(all.stepRecords).toBeGreaterThanOrEqual(4503);
  });

  it("estimates the run's AWS side from the same pass: as the meters read on their own give it", async () => {
    const { report } = await counted(runs.medium, 'default');
    const root = await e2e.thread(runs.medium);
    const alone = estimateAwsCost(await runMetersOf(e2e.runtime.stores.threads, root, [root], 1));
    expect(report.awsCost).toEqual(alone);
    expect(report.awsCost!.lambdaInvocations).toBe(303);
  });

  it('shows a range of steps with --steps A-B, and a short run whole, as before', async () => {
    const { report, stepRecords } = await counted(runs.long, { from: 100, to: 102 });
    expect(report.threads[0]!.nodes.map((run) => run.step)).toEqual([100, 101, 102]);
    expect(report.threads[0]!.stepsNotShown?.ranges).toEqual([
      { from: 1, to: 99, atNode: 0 },
      { from: 103, to: 4503, atNode: 3 },
    ]);
    expect(stepRecords).toBeLessThanOrEqual(3 + 5);

    const short = (await counted(runs.short, 'default')).report;
    expect(short.threads[0]!.nodes).toHaveLength(33);
    expect(short.threads[0]!.stepsNotShown).toBeUndefined();
    expect(printed(short)).toEqual(printed((await counted(runs.short, 'all')).report));
    expect(
      printed(short)
        .filter((line) => line.startsWith('  step '))
        .at(0),
    ).toMatch(/^ {2}step 1 {3}COMPLETED start \(START\)/);
  });
});
