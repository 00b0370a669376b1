/**
 * The thread head across continuations: a loop of one VARIABLE node (LOOP_START → VARIABLE → LOOP_END,
 * three steps an iteration, the cheapest loop there is) run with the lowest continue-as-new threshold
 * (MIN_CONTINUE_AFTER_EVENTS: a new execution every ~15 steps), on the embedded runtime. Every step
 * rewrites the head with one UpdateItem, billed by the whole item's size, so what the head holds is
 * paid on every step: it must not grow with the run's history (continuations, their events).
 * It records the head's size (DynamoDB's item size) after step 100, every 100th step and at the end.
 *
 *   npx tsx bench/head-size.ts [--steps 10000] [--json]
 *
 * test/e2e/head-size.test.ts asserts the bounds on the same workload at 2,000 steps (counts only);
 * 10,000 steps take 1–4 minutes on a loaded machine, too long for the suite.
 */

import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { MIN_CONTINUE_AFTER_EVENTS } from '../engine/asl/continuation.ts';
import type { Workflow } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createDocumentClient } from '../functions/aws/dynamo-client.ts';
import { itemBytes } from '../functions/aws/write-meter.ts';
import { createLocalRuntime, type LocalRuntime, type RunOutcome } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import { itemKeys } from '../functions/stores/table.ts';

/** LOOP_START → VARIABLE count+1 → LOOP_END, `iterations` times, then END with the count. */
export function countingLoop(iterations: number, id: string, maxSteps = 100_000): Workflow {
  return {
    id,
    version: 1,
    maxSteps,
    variables: [{ name: 'count', type: 'number', scope: 'thread', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: iterations } },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'count', variableType: 'number', expression: 'count + 1' },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'end', type: 'END', config: { output: { count: '{{count}}' } } },
    ],
    edges: [
      { from: 'start', to: 'loop' },
      { from: 'loop', to: 'inc' },
      { from: 'inc', to: 'next' },
      { from: 'next', to: 'end' },
    ],
  };
}

/** START, then `iterations` × (LOOP_START, VARIABLE, LOOP_END), then END: 3 × iterations + 2 steps. */
export function headLoopWorkflow(iterations: number): Workflow {
  const result = validateWorkflow(countingLoop(iterations, `head-loop-${iterations}`, 3 * iterations + 10));
  if (!result.workflow) throw new Error(`invalid head loop: ${JSON.stringify(result.errors)}`);
  return result.workflow;
}

export interface HeadSizes {
  readonly outcome: RunOutcome;
  /** The head's item size after each 100th step (and step 100 itself), by step. */
  readonly sampled: ReadonlyMap<number, number>;
  /** The head's item size after the last step. */
  readonly last: number;
  /** The head item as stored after the last step. */
  readonly head: Record<string, unknown>;
  readonly wallMs: number;
}

/**
 * Runs the loop for about `steps` steps on `runtime` (whose table is `tableName`), continuing as
 * often as the runtime allows, and sizes the head as it goes through `reader` (not the runtime's
 * clients, so the runtime's own reads and writes are unchanged).
 */
export async function measureHeadLoop(
  runtime: LocalRuntime,
  reader: { dynamo: ReturnType<typeof createDocumentClient>; tableName: string },
  steps: number,
): Promise<HeadSizes> {
  const iterations = Math.max(1, Math.floor((steps - 2) / 3));
  const sampled = new Map<number, number>();
  let threadId: string | undefined;
  const headOf = async (id: string) => {
    const { Item } = await reader.dynamo.send(
      new GetCommand({ TableName: reader.tableName, Key: itemKeys.thread(id), ConsistentRead: true }),
    );
    if (!Item) throw new Error(`thread ${id} has no head`);
    return Item;
  };
  const started = performance.now();
  const outcome = await runtime
    .prepare(headLoopWorkflow(iterations), { continueAfterEvents: MIN_CONTINUE_AFTER_EVENTS })
    .run(
      {},
      {
        noRetryWaits: true,
        interceptTask: async (_call, invoke) => {
          const result = (await invoke()) as { threadId?: unknown; step?: unknown } | undefined;
          if (typeof result?.threadId === 'string') threadId ??= result.threadId;
          const step = typeof result?.step === 'number' ? result.step : 0;
          if (threadId !== undefined && step % 100 === 0 && step > 0 && !sampled.has(step)) {
            sampled.set(step, itemBytes(await headOf(threadId)));
          }
          return result;
        },
      },
    );
  const wallMs = performance.now() - started;
  const head = await headOf(outcome.threadId);
  return { outcome, sampled, last: itemBytes(head), head, wallMs };
}

async function main(): Promise<void> {
  const index = process.argv.indexOf('--steps');
  const steps = index >= 0 ? Number(process.argv[index + 1]) : 10_000;
  const names = { tableName: 'head-size', bucketName: 'head-size' };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    const clients = createAwsClients(services.target, names);
    const runtime = createLocalRuntime({ clients });
    const reader = { dynamo: createDocumentClient(services.target), tableName: names.tableName };
    const run = await measureHeadLoop(runtime, reader, steps);
    if (run.outcome.status !== 'COMPLETED') throw new Error(`loop ended ${run.outcome.status}`);
    const at100 = run.sampled.get(100)!;
    const largest = Math.max(...run.sampled.values());
    const row = {
      steps: Number(run.head.step),
      executions: run.outcome.executions.length,
      headAtStep100: at100,
      largestSampledHead: largest,
      headAfterLastStep: run.last,
      lastOverStep100: Math.round((run.last / at100) * 1000) / 1000,
      msPerStep: Math.round((run.wallMs / Number(run.head.step)) * 100) / 100,
    };
    if (process.argv.includes('--json')) {
      console.log(JSON.stringify(row, null, 2));
      return;
    }
    console.log(
      '| steps | executions | head after step 100 (B) | largest head, every 100th step (B) | head after the last step (B) | last / step 100 | ms / step |',
    );
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    console.log(
      `| ${row.steps} | ${row.executions} | ${row.headAtStep100} | ${row.largestSampledHead} | ${row.headAfterLastStep} | ${row.lastOverStep100} | ${row.msPerStep} |`,
    );
  } finally {
    await services.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
