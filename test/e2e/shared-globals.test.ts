/**
 * Global variables are shared by all threads (seed 000 §3): concurrent branches that update one
 * never lose a write. A child's write lands on the root only if the root is as the child read it;
 * otherwise the step runs again against the new value, after a random wait below a doubling bound,
 * for as long as its patience lasts, then again as a retried Task (issue 31 item 4: 1,000 branches
 * used to exhaust 200 attempts and fail with `NODE_EXECUTION_FAILED: Error`). A branch that never
 * gets its write in fails with GLOBAL_WRITE_CONTENDED naming the variable. The 1,000-item case is
 * timed in bench/map.ts (`--globals`); here, writes are made to lose on purpose.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workflow } from '../../engine/model/schema.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createHandlerStores, type HandlerStores } from '../../functions/handlers/deps.ts';
import { contentionWaitMs } from '../../functions/handlers/global-contention.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { generator } from '../support/seeded-random.ts';
import { crashAfterFirstAttempt, type E2e, startE2e, valid } from './helpers.ts';
import { counterWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('shared-globals');
});
afterAll(() => e2e.close());

describe('shared global variables', () => {
  it('50 parallel branches incrementing a counter and appending to an array lose no update', async () => {
    const outcome = await e2e.runtime.prepare(counterWorkflow(50)).run({}, { noRetryWaits: true });
    expect(outcome.error).toBeUndefined();
    const output = outcome.output as { done: number; seen: string[] };
    expect(output.done).toBe(50);
    expect([...output.seen].sort()).toEqual(Array.from({ length: 50 }, (_, i) => `p${i}`).sort());
    // The JOIN took the bookkeeping of the children's writes off the root.
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(thread.globalWriters).toBeUndefined();
  }, 120_000);

  it('waits at random below a bound that doubles with each lost write, up to a second', () => {
    expect([1, 2, 3, 8, 30].map((attempt) => contentionWaitMs(attempt, () => 1))).toEqual([
      8, 16, 32, 1000, 1000,
    ]);
    expect(contentionWaitMs(5, () => 0)).toBe(0);
  });

  it('a FORK over 300 items counting into one global, each write first losing up to 8 times to a competing write, counts 300', async () => {
    const random = generator(31);
    const losses = new Map<string, number>();
    const runtime = contendedRuntime((childId) => {
      if (!losses.has(childId)) losses.set(childId, random(9));
      const left = losses.get(childId)!;
      losses.set(childId, left - 1);
      return left > 0;
    });
    const outcome = await runtime
      .prepare(listCounter(READ_MODIFY_WRITE))
      .run({ items: range(300) }, { noRetryWaits: true });
    expect({ error: outcome.error, output: outcome.output }).toEqual({
      error: undefined,
      output: { done: 300 },
    });
    expect(losses.size).toBe(300);
    expect([...losses.values()].every((left) => left < 0)).toBe(true);
  }, 180_000);

  it('a branch whose write always loses fails with GLOBAL_WRITE_CONTENDED naming the variable, not a bare Error', async () => {
    const runtime = contendedRuntime(() => true, 10);
    const outcome = await runtime
      .prepare(listCounter(READ_MODIFY_WRITE))
      .run({ items: range(2) }, { noRetryWaits: true });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error?.code).toBe('JOIN_FAILED');
    expect(outcome.error?.message).toContain('GLOBAL_WRITE_CONTENDED at node inc');
    expect(outcome.error?.message).toContain(`global variable "done" lost to other branches' writes`);
  }, 120_000);

  it('`done + 1` in 300 branches is one atomic increment each: no write lost or retried, each step outputs the value it made, the root marks only writes in flight', async () => {
    const clients = createAwsClients(e2e.services.target, {
      tableName: 'e2e-shared-globals',
      bucketName: 'e2e-shared-globals',
    });
    const stores = createHandlerStores(clients);
    const threads: HandlerStores['threads'] = Object.create(stores.threads);
    const landed: number[] = [];
    let refused = 0;
    let rootRewrites = 0;
    let marks = 0;
    threads.addToGlobal = async (rootId, increment) => {
      const outcome = await stores.threads.addToGlobal(rootId, increment);
      if (outcome === 'refused') refused += 1;
      else landed.push(outcome.value);
      const { thread: root } = await stores.threads.getThread(rootId);
      marks = Math.max(marks, Object.keys(root.globalWriters ?? {}).length);
      return outcome;
    };
    threads.updateThread = async (threadId, version, change, alongside) => {
      if ((change.set as { globalWriters?: unknown } | undefined)?.globalWriters) rootRewrites += 1;
      return stores.threads.updateThread(threadId, version, change, alongside);
    };
    const runtime = createLocalRuntime({ clients, stores: { ...stores, threads } });
    const prepared = runtime.prepare(listCounter('done + 1', 10));
    const outcome = await prepared.run({ items: range(300) }, { noRetryWaits: true });
    expect({ error: outcome.error, output: outcome.output }).toEqual({
      error: undefined,
      output: { done: 300 },
    });
    expect({ refused, rootRewrites }).toEqual({ refused: 0, rootRewrites: 0 });
    // A branch's mark leaves the root once its step committed: the marks are those in flight.
    expect(marks).toBeGreaterThan(0);
    expect(marks).toBeLessThanOrEqual(10);
    expect([...landed].sort((a, b) => a - b)).toEqual(range(300).map((i) => i + 1));
    // Each branch's `inc` output is the value its own increment made: 1 … 300, each once.
    const children = (await threads.listThreadsOfExecution(outcome.executionId)).filter(
      ({ thread }) => thread.id !== outcome.threadId,
    );
    const outputs = await Promise.all(
      children.map(async ({ thread }) => (await threads.readStepResults(thread.id)).inc?.output),
    );
    expect(outputs.map(Number).sort((a, b) => a - b)).toEqual(range(300).map((i) => i + 1));
  }, 180_000);

  it('an increment under crash injection (every Task dies once after its writes landed) is applied once', async () => {
    const crashed: string[] = [];
    const outcome = await e2e.runtime
      .prepare(listCounter())
      .run({ items: range(12) }, { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) });
    expect({ error: outcome.error, output: outcome.output }).toEqual({
      error: undefined,
      output: { done: 12 },
    });
    expect(crashed.length).toBeGreaterThan(12);
  }, 120_000);

  it('under crash injection (every Task dies once after its writes landed) too', async () => {
    const crashed: string[] = [];
    const outcome = await e2e.runtime
      .prepare(counterWorkflow(12))
      .run({}, { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) });
    expect(outcome.error).toBeUndefined();
    expect(crashed.length).toBeGreaterThan(24);
    const output = outcome.output as { done: number; seen: string[] };
    expect(output.done).toBe(12);
    expect(output.seen).toHaveLength(12);
  }, 120_000);
});

/** Adds 1 too, but not in the `done + x` form the runtime applies as an increment. */
const READ_MODIFY_WRITE = 'done * 1 + 1';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * A FORK over `input.items` whose branches each add 1 to the global `done`: as an increment by
 * default, or with an expression the runtime must apply as a read-modify-write.
 */
function listCounter(expression = 'done + 1', maxConcurrency?: number): Workflow {
  return valid({
    id: 'list-counter',
    version: 1,
    variables: [{ name: 'done', type: 'number', scope: 'global', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'each',
        type: 'FORK',
        config: {
          forkPathIds: ['item'],
          forkStrategy: 'parallel',
          childNodeIds: ['inc'],
          forEach: '{{input.items}}',
          ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
        },
      },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'done', variableType: 'number', expression },
      },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      { id: 'end', type: 'END', config: { output: { done: '{{done}}' } } },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'inc', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  });
}

/**
 * A runtime over the e2e stores where a branch's write of the root's globals first meets a real
 * competing write (the root rewritten as it is, which moves its version) whenever `loses(childId)`.
 */
function contendedRuntime(loses: (childId: string) => boolean, globalWritePatienceMs?: number) {
  const clients = createAwsClients(e2e.services.target, {
    tableName: 'e2e-shared-globals',
    bucketName: 'e2e-shared-globals',
  });
  const stores = createHandlerStores(clients);
  const threads: HandlerStores['threads'] = Object.create(stores.threads);
  threads.updateThread = async (threadId, version, change, alongside) => {
    const writers = (change.set as { globalWriters?: Record<string, number> } | undefined)?.globalWriters;
    const childId = writers && Object.keys(writers).at(-1);
    if (childId !== undefined && loses(childId)) {
      await stores.threads.updateThread(threadId, version, { set: {} });
    }
    return stores.threads.updateThread(threadId, version, change, alongside);
  };
  return createLocalRuntime({
    clients,
    stores: { ...stores, threads },
    ...(globalWritePatienceMs === undefined ? {} : { globalWritePatienceMs }),
  });
}
