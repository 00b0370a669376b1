/**
 * FORK over a list (issue 13) on the embedded runtime: per-item results in item order, every join
 * strategy over items with failures, early termination, maxConcurrency, the conversation rule
 * (mainItem), and a per-item cost that does not grow with the number of items (counts, not times).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distributedVariant, mapReduceWorkflow, runMapReduce } from '../../bench/map.ts';
import type { Thread } from '../../engine/thread/types.ts';
import {
  assistant,
  crashAfterFirstAttempt,
  type E2e,
  example,
  plain,
  startE2e,
  user,
  valid,
} from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('map');
});
afterAll(() => e2e.close());

interface MapOptions {
  joinStrategy?: string;
  threshold?: number;
  timeout?: number;
  maxConcurrency?: number;
  /** null: left out (a list FORK then runs parallel). */
  forkStrategy?: 'parallel' | 'serial' | null;
  mainItem?: number;
  mode?: 'inline' | 'distributed';
}

/** START → FORK over input.items (item `x`) → `work` (fails for items with `fail`) → JOIN → END. */
function mapWorkflow(id: string, options: MapOptions = {}) {
  return valid({
    id,
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'fan',
        type: 'FORK',
        config: {
          forkPathIds: ['each'],
          ...(options.forkStrategy === null ? {} : { forkStrategy: options.forkStrategy ?? 'parallel' }),
          childNodeIds: ['work'],
          forEach: '{{input.items}}',
          itemVariable: 'x',
          ...(options.maxConcurrency === undefined ? {} : { maxConcurrency: options.maxConcurrency }),
          ...(options.mode === undefined ? {} : { mode: options.mode }),
        },
      },
      {
        id: 'work',
        type: 'VARIABLE',
        // `x.missing + 1` is an EXPRESSION_ERROR: the item fails.
        config: {
          variableName: 'r',
          variableType: 'string',
          expression: "x.fail ? x.missing + 1 : 'item ' + xIndex + ' = ' + x.v",
        },
      },
      {
        id: 'merge',
        type: 'JOIN',
        config: {
          forkPathIds: ['each'],
          joinStrategy: options.joinStrategy ?? 'ALL_COMPLETED',
          timeout: options.timeout ?? 0,
          ...(options.threshold === undefined ? {} : { threshold: options.threshold }),
          ...(options.mainItem === undefined ? {} : { mainItem: options.mainItem }),
        },
      },
      { id: 'end', type: 'END', config: { output: { merged: '{{nodes.merge}}' } } },
    ],
    edges: [
      { from: 'start', to: 'fan' },
      { from: 'work', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  });
}

const items = (failing: readonly number[], n = 5) =>
  Array.from({ length: n }, (_, i) => (failing.includes(i) ? { fail: true } : { v: `v${i}` }));
const ok = (i: number) => `item ${i} = v${i}`;
const failed = { error: { code: 'EXPRESSION_ERROR', message: expect.any(String) } };

async function itemThreads(executionId: string, rootId: string): Promise<Thread[]> {
  const all = await e2e.runtime.stores.threads.listThreadsOfExecution(executionId);
  return all
    .map((entry) => entry.thread)
    .filter((thread) => thread.id !== rootId)
    .sort((a, b) => Number(a.id.split('-').at(-1)) - Number(b.id.split('-').at(-1)));
}

describe('FORK over a list', () => {
  it('runs one item thread per item and merges their outputs as an array in item order', async () => {
    const outcome = await e2e.runtime.prepare(mapWorkflow('order')).run({ items: items([], 12) });
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: Array.from({ length: 12 }, (_, i) => ok(i)) });
    const threads = await itemThreads(outcome.executionId, outcome.threadId);
    expect(threads.map((t) => [t.contextData.authorForkPathId, t.variables.thread.xIndex])).toEqual(
      Array.from({ length: 12 }, (_, i) => [`each[${i}]`, i]),
    );
    expect(outcome.events.some((event) => event.stateType === 'Map')).toBe(true);
  });

  it('runs without forkStrategy, as parallel', async () => {
    const workflow = mapWorkflow('no-strategy', { forkStrategy: null });
    expect(workflow.nodes[1]).not.toHaveProperty('config.forkStrategy');
    const outcome = await e2e.runtime.prepare(workflow).run({ items: items([], 3) });
    expect(outcome).toMatchObject({ status: 'COMPLETED', output: { merged: [ok(0), ok(1), ok(2)] } });
  });

  it('an empty list joins at once with []', async () => {
    const outcome = await e2e.runtime.prepare(mapWorkflow('empty')).run({ items: [] });
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: [] });
  });

  it('forEach that is not an array fails the run with FORK_EACH_NOT_ARRAY', async () => {
    const outcome = await e2e.runtime.prepare(mapWorkflow('not-array')).run({ items: { a: 1 } });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error?.code).toBe('FORK_EACH_NOT_ARRAY');
  });

  it('a list too long for one execution history fails with FORK_LIST_TOO_LONG before any item thread exists', async () => {
    const outcome = await e2e.runtime.prepare(mapWorkflow('too-long')).run({ items: items([], 3000) });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'FORK_LIST_TOO_LONG', nodeId: 'fan' });
    expect(outcome.error?.message).toMatch(/3000 items .* at most 27\d\d fit here.*"mode": "distributed"/);
    expect(await itemThreads(outcome.executionId, outcome.threadId)).toEqual([]);
  });

  describe('join strategies over items with failures', () => {
    it('ALL_COMPLETED completes when every item completes, fails on the first failure', async () => {
      const outcome = await e2e.runtime.prepare(mapWorkflow('all-completed')).run({ items: items([2]) });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error?.code).toBe('JOIN_FAILED');
    });

    it('JOIN_FAILED names the failed items by index and path, with their errors', async () => {
      const workflow = mapWorkflow('failed-items', { joinStrategy: 'ANY_COMPLETED' });
      const outcome = await e2e.runtime.prepare(workflow).run({ items: items([0, 1, 2, 3, 4]) });
      expect(outcome.status).toBe('FAILED');
      const item = (i: number) =>
        `item ${i} \\(path "each\\[${i}\\]"\\): EXPRESSION_ERROR at node work: [^;]+`;
      expect(outcome.error?.message).toMatch(
        new RegExp(`^all 5 branches failed; ${item(0)}; ${item(1)}; ${item(2)}; and 2 more failed$`),
      );
    });

    it('ANY_COMPLETED completes with the failed slots holding their errors', async () => {
      const workflow = mapWorkflow('any-completed', { joinStrategy: 'ANY_COMPLETED', maxConcurrency: 1 });
      const outcome = await e2e.runtime.prepare(workflow).run({ items: items([0, 1, 3]) });
      expect(outcome.status).toBe('COMPLETED');
      // Item 2 decided the join; items 3 and 4 never ran (null).
      expect(outcome.output).toEqual({ merged: [failed, failed, ok(2), null, null] });
    });

    it('ANY_COMPLETED fails when every item fails', async () => {
      const workflow = mapWorkflow('any-completed-none', { joinStrategy: 'ANY_COMPLETED' });
      const outcome = await e2e.runtime.prepare(workflow).run({ items: items([0, 1, 2]).slice(0, 3) });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error?.code).toBe('JOIN_FAILED');
    });

    it('ALL_FAILED completes when every item fails, fails on the first completion', async () => {
      const all = await e2e.runtime
        .prepare(mapWorkflow('all-failed', { joinStrategy: 'ALL_FAILED' }))
        .run({ items: items([0, 1, 2, 3, 4]) });
      expect(all.status).toBe('COMPLETED');
      expect(all.output).toEqual({ merged: [failed, failed, failed, failed, failed] });
      const one = await e2e.runtime
        .prepare(mapWorkflow('all-failed-one', { joinStrategy: 'ALL_FAILED' }))
        .run({ items: items([0, 1, 3, 4]) });
      expect(one.status).toBe('FAILED');
      expect(one.error?.code).toBe('JOIN_FAILED');
    });

    it('ANY_FAILED completes at the first failure, fails when every item completes', async () => {
      const workflow = mapWorkflow('any-failed', { joinStrategy: 'ANY_FAILED', maxConcurrency: 1 });
      const outcome = await e2e.runtime.prepare(workflow).run({ items: items([1, 3]) });
      expect(outcome.status).toBe('COMPLETED');
      expect(outcome.output).toEqual({ merged: [ok(0), failed, null, null, null] });
      const none = await e2e.runtime
        .prepare(mapWorkflow('any-failed-none', { joinStrategy: 'ANY_FAILED' }))
        .run({ items: items([]) });
      expect(none.status).toBe('FAILED');
      expect(none.error?.code).toBe('JOIN_FAILED');
    });

    it('SUCCESS_COUNT_THRESHOLD completes at the threshold-th completion and stops the rest', async () => {
      const workflow = mapWorkflow('threshold', {
        joinStrategy: 'SUCCESS_COUNT_THRESHOLD',
        threshold: 2,
        maxConcurrency: 1,
      });
      const outcome = await e2e.runtime.prepare(workflow).run({ items: items([1], 6) });
      expect(outcome.status).toBe('COMPLETED');
      expect(outcome.output).toEqual({ merged: [ok(0), failed, ok(2), null, null, null] });
    });

    it('SUCCESS_COUNT_THRESHOLD fails as soon as too many items failed to reach it', async () => {
      const workflow = mapWorkflow('threshold-fail', {
        joinStrategy: 'SUCCESS_COUNT_THRESHOLD',
        threshold: 4,
        maxConcurrency: 1,
      });
      const outcome = await e2e.runtime.prepare(workflow).run({ items: items([0, 1, 2], 6) });
      expect(outcome.status).toBe('FAILED');
      expect(outcome.error?.code).toBe('JOIN_FAILED');
      // The third failure left at most 3 of 6 able to complete: items 3..5 never ran (no thread).
      const threads = await itemThreads(outcome.executionId, outcome.threadId);
      expect(threads.map((t) => [t.contextData.authorForkPathId, t.status])).toEqual([
        ['each[0]', 'FAILED'],
        ['each[1]', 'FAILED'],
        ['each[2]', 'FAILED'],
      ]);
    });
  });

  it('early termination: a decided join stops the Map, and the items that never ran have no thread', async () => {
    const workflow = mapWorkflow('early', { joinStrategy: 'ANY_COMPLETED', maxConcurrency: 1 });
    const outcome = await e2e.runtime.prepare(workflow).run({ items: items([], 20) });
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: [ok(0), ...Array.from({ length: 19 }, () => null)] });
    // START, FORK, one item's VARIABLE (which reports the item to the join itself), JOIN, END:
    // nothing ran for items 1..19.
    expect(outcome.taskInvocations).toBe(5);
    const threads = await itemThreads(outcome.executionId, outcome.threadId);
    expect(threads.map((t) => [t.id.split('-').at(-1), t.status])).toEqual([['0', 'COMPLETED']]);
  });

  it('maxConcurrency bounds how many items run at once (and serial means one)', async () => {
    for (const [name, options, bound] of [
      ['limit-3', { maxConcurrency: 3 }, 3],
      ['serial', { forkStrategy: 'serial' as const }, 1],
    ] as const) {
      let running = 0;
      let most = 0;
      const outcome = await e2e.runtime.prepare(mapWorkflow(name, options)).run(
        { items: items([], 12) },
        {
          interceptTask: async (call, invoke) => {
            if (call.entry.stateName !== 'work') return invoke();
            running += 1;
            most = Math.max(most, running);
            try {
              // Let the other items' Tasks start if the Map allowed them to.
              await new Promise((resolve) => setImmediate(resolve));
              return await invoke();
            } finally {
              running -= 1;
            }
          },
        },
      );
      expect(outcome.status).toBe('COMPLETED');
      expect(most).toBe(bound);
    }
  });

  it('a JOIN timeout ends the Map: the join fails with JOIN_TIMEOUT and unfinished items are CANCELLED', async () => {
    const workflow = valid({
      id: 'list-timeout',
      version: 1,
      // Each item's model call takes a minute; the join waits one second.
      profiles: { default: { provider: 'scripted', responses: ['slow'], delayMs: 60_000 } },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'fan',
          type: 'FORK',
          config: {
            forkPathIds: ['each'],
            forkStrategy: 'parallel',
            childNodeIds: ['ask'],
            forEach: '{{input.items}}',
          },
        },
        { id: 'ask', type: 'LLM', config: { prompt: 'About {{item}}' } },
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['each'], joinStrategy: 'ALL_COMPLETED', timeout: 1 },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'fan' },
        { from: 'ask', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(workflow).run({ items: ['a', 'b', 'c'] });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error?.code).toBe('JOIN_TIMEOUT');
    const threads = await itemThreads(outcome.executionId, outcome.threadId);
    expect(threads.map((t) => t.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
  });

  it('is idempotent: every Task crashing after its first attempt ends the same as a clean run', async () => {
    const workflow = mapWorkflow('crash', {
      joinStrategy: 'SUCCESS_COUNT_THRESHOLD',
      threshold: 3,
      maxConcurrency: 1,
    });
    const input = { items: items([1], 7) };
    const clean = await e2e.runtime.prepare(workflow).run(input);
    const crashed: string[] = [];
    const faulty = await e2e.runtime
      .prepare(workflow)
      .run(input, { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) });
    // `work` reports its item itself (a retry reports again); the failing item through `merge:each:failed`.
    expect(crashed).toEqual(
      expect.arrayContaining(['start', 'fan', 'work', 'merge:each:failed', 'merge', 'end']),
    );
    expect(faulty.status).toBe('COMPLETED');
    expect(faulty.output).toEqual(clean.output);
    expect(clean.output).toEqual({ merged: [ok(0), failed, ok(2), ok(3), null, null, null] });
    const statuses = async (outcome: typeof clean) =>
      (await itemThreads(outcome.executionId, outcome.threadId)).map((t) => [t.status, t.step]);
    expect(await statuses(faulty)).toEqual(await statuses(clean));
  });

  it('the parent keeps its own conversation unless mainItem names an item', async () => {
    const workflow = example('map-reduce');
    const docs = [0, 1, 2].map((i) => ({ id: `d${i}`, text: `text ${i}` }));
    const own = await e2e.runtime.prepare(workflow).run({ documents: docs });
    expect(own.status).toBe('COMPLETED');
    const reduce = (n: number) => [
      user(expect.stringContaining(`Combine these ${n} summaries`) as unknown as string),
      assistant('Overall: the documents agree.'),
    ];
    expect(plain(await e2e.conversation(own.threadId))).toEqual(reduce(3));
    const main = {
      ...workflow,
      nodes: workflow.nodes.map((node) =>
        node.type === 'JOIN' ? { ...node, config: { ...node.config, mainItem: 1 } } : node,
      ),
    };
    const withMain = await e2e.runtime.prepare(valid(main)).run({ documents: docs });
    expect(withMain.status).toBe('COMPLETED');
    expect(plain(await e2e.conversation(withMain.threadId))).toEqual([
      user('Summarise document d1: text 1'),
      assistant('A short summary of the document.'),
      ...reduce(3),
    ]);
  });
});

/** The requests `stateName`'s Task made, per command: DynamoDB, and S3. */
function taskRequests(stateName: string) {
  const seen: { dynamo: Record<string, number>; s3: Record<string, number> }[] = [];
  const count = (meter: E2e['dynamoMeter']) =>
    Object.fromEntries(Object.entries(meter.snapshot()).map(([name, usage]) => [name, usage.requests]));
  const diff = (after: Record<string, number>, before: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(after)
        .map(([name, n]) => [name, n - (before[name] ?? 0)] as const)
        .filter(([, n]) => n > 0),
    );
  return {
    seen,
    interceptTask: async (call: { entry: { stateName: string } }, invoke: () => Promise<unknown>) => {
      if (call.entry.stateName !== stateName) return invoke();
      const before = { dynamo: count(e2e.dynamoMeter), s3: count(e2e.s3Meter) };
      try {
        return await invoke();
      } finally {
        seen.push({
          dynamo: diff(count(e2e.dynamoMeter), before.dynamo),
          s3: diff(count(e2e.s3Meter), before.s3),
        });
      }
    },
  };
}

describe('item threads: each item creates its own on its first step', () => {
  it("the FORK step's DynamoDB requests are the same at 10, 100 and 1,000 items: it writes no item thread", async () => {
    for (const mode of ['inline', 'distributed'] as const) {
      const counts: { dynamo: Record<string, number>; s3: Record<string, number> }[] = [];
      for (const n of [10, 100, 1000]) {
        // Every item fails, one at a time: ALL_COMPLETED decides at item 0, so only the FORK is big.
        const workflow = mapWorkflow(`fork-cost-${mode}-${n}`, { mode, maxConcurrency: 1 });
        const fork = taskRequests('fan');
        const outcome = await e2e.runtime
          .prepare(workflow)
          .run({ items: Array.from({ length: n }, () => ({ fail: true })) }, fork);
        expect(outcome.error?.code).toBe('JOIN_FAILED');
        expect(fork.seen).toHaveLength(1);
        counts.push(fork.seen[0]!);
        // The one item that ran created its thread: the only one there.
        const threads = await itemThreads(outcome.executionId, outcome.threadId);
        expect(threads.map((t) => [t.contextData.authorForkPathId, t.status])).toEqual([
          ['each[0]', 'FAILED'],
        ]);
      }
      // The same requests whatever the list's length: one PutObject for the item source (and, for a
      // Distributed Map, one for its item list); DynamoDB only for the FORK's own step.
      expect(counts[1], mode).toEqual(counts[0]);
      expect(counts[2], mode).toEqual(counts[0]);
      const { dynamo, s3 } = counts[0]!;
      expect(s3, mode).toEqual({ PutObjectCommand: mode === 'inline' ? 1 : 2 });
      expect(dynamo.BatchWriteItemCommand ?? 0, mode).toBe(0);
      expect(
        Object.values(dynamo).reduce((a, b) => a + b, 0),
        mode,
      ).toBeLessThanOrEqual(3);
    }
  }, 300_000);

  it('an item whose first step failed before its thread existed is created FAILED and counted by the join', async () => {
    // Item 2's first Task fails as a Lambda error would, every attempt: no handler ran for it. The
    // Retry tries it 8 more times (any failure but the node's own), then its Catch fails the item.
    let attempts = 0;
    const interceptTask = async (
      call: { entry: { stateName: string }; event: unknown },
      invoke: () => Promise<unknown>,
    ) => {
      const threadId = (call.event as { envelope?: { threadId?: string } }).envelope?.threadId ?? '';
      if (call.entry.stateName === 'work' && threadId.endsWith('-2')) {
        attempts += 1;
        throw Object.assign(new Error('the function could not start'), {
          name: 'Lambda.AccessDeniedException',
        });
      }
      return invoke();
    };
    for (const mode of ['inline', 'distributed'] as const) {
      attempts = 0;
      // One item at a time: item 2 has failed before the threshold's fourth success decides the join.
      const any = await e2e.runtime
        .prepare(
          mapWorkflow(`first-step-${mode}`, {
            mode,
            joinStrategy: 'SUCCESS_COUNT_THRESHOLD',
            threshold: 4,
            maxConcurrency: 1,
          }),
        )
        .run({ items: items([], 5) }, { interceptTask, noRetryWaits: true });
      expect(attempts, mode).toBe(9);
      expect(any.status, mode).toBe('COMPLETED');
      const merged = (any.output as { merged: unknown[] }).merged;
      expect(merged[2], mode).toEqual({
        error: {
          code: 'NODE_EXECUTION_FAILED',
          message: expect.stringContaining('Lambda.AccessDeniedException'),
        },
      });
      expect(
        merged.filter((slot) => slot === null || typeof slot === 'string'),
        mode,
      ).toHaveLength(4);
      const threads = await itemThreads(any.executionId, any.threadId);
      const two = threads.find((t) => t.contextData.authorForkPathId === 'each[2]');
      expect(two?.status, mode).toBe('FAILED');
      expect(two?.variables.thread, mode).toMatchObject({ x: { v: 'v2' }, xIndex: 2 });

      const all = await e2e.runtime
        .prepare(mapWorkflow(`first-step-all-${mode}`, { mode, maxConcurrency: 1 }))
        .run({ items: items([], 5) }, { interceptTask, noRetryWaits: true });
      expect(all.status, mode).toBe('FAILED');
      expect(all.error?.message, mode).toContain('item 2 (path "each[2]")');
    }
  });

  it('an item thread is created once under retries and crashes: every Task crashing after its first attempt, the first steps included', async () => {
    const workflow = mapWorkflow('lazy-crash', { maxConcurrency: 2 });
    const input = { items: items([], 6) };
    const clean = await e2e.runtime.prepare(workflow).run(input);
    const crashed: string[] = [];
    const faulty = await e2e.runtime
      .prepare(workflow)
      .run(input, { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) });
    expect(crashed.filter((name) => name === 'work')).toHaveLength(6);
    expect(faulty.output).toEqual(clean.output);
    expect(faulty.error).toEqual(clean.error);
    const shape = async (outcome: typeof clean) =>
      (await itemThreads(outcome.executionId, outcome.threadId)).map((t) => [
        t.contextData.authorForkPathId,
        t.status,
        t.step,
        t.variables.thread.r ?? null,
      ]);
    expect(await shape(faulty)).toEqual(await shape(clean));
  });
});

describe('a distributed FORK over a list (Distributed Map; locally an S3 read and an inline Map)', () => {
  it('writes the item list to S3, runs every item, and merges in item order', async () => {
    const puts = e2e.s3Meter.requests('PutObjectCommand');
    const outcome = await e2e.runtime
      .prepare(mapWorkflow('distributed', { mode: 'distributed', maxConcurrency: 4 }))
      .run({ items: items([3], 8) });
    expect(outcome.status).toBe('FAILED'); // ALL_COMPLETED with item 3 failing
    const ok8 = await e2e.runtime
      .prepare(mapWorkflow('distributed-ok', { mode: 'distributed', maxConcurrency: 4 }))
      .run({ items: items([], 8) });
    expect(ok8.status).toBe('COMPLETED');
    expect(ok8.output).toEqual({ merged: Array.from({ length: 8 }, (_, i) => ok(i)) });
    expect(e2e.s3Meter.requests('PutObjectCommand')).toBeGreaterThanOrEqual(puts + 2);
    // No state payload carries the list: the FORK's envelope names the S3 object.
    const fork = ok8.events.find((event) => event.type === 'StateExited' && event.stateName === 'fan');
    expect(fork?.output).toMatchObject({
      fork: { count: 8, list: { key: expect.stringMatching(/^map\/items\//) } },
    });
    expect(JSON.stringify(fork?.output)).not.toContain('"items"');
  });

  it('keeps every state payload the same size at 10 and 100 items: the list stays in S3', async () => {
    const workflow = distributedVariant(mapReduceWorkflow());
    const [ten, hundred] = [await runMapReduce(10, workflow), await runMapReduce(100, workflow)];
    expect(hundred.outcome.output).toMatchObject({
      documents: 100,
      last: 'd99: A short summary of the document.',
    });
    // Every state as Step Functions runs it (the local ItemReader stand-in left out): a few digits more.
    expect(hundred.largestAwsPayloadBytes).toBeLessThanOrEqual(ten.largestAwsPayloadBytes + 16);
    expect(hundred.largestAwsPayloadBytes).toBeLessThan(1024);
    expect(hundred.largestItemPayloadBytes).toBeLessThanOrEqual(ten.largestItemPayloadBytes + 8);
  }, 300_000);

  it('ends early the same way: ANY_FAILED decides at the first failure', async () => {
    const workflow = mapWorkflow('distributed-early', {
      mode: 'distributed',
      joinStrategy: 'ANY_FAILED',
      maxConcurrency: 1,
    });
    const outcome = await e2e.runtime.prepare(workflow).run({ items: items([2], 10) });
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      merged: [ok(0), ok(1), failed, ...Array.from({ length: 7 }, () => null)],
    });
  });
});

describe('map-reduce over 1,000 documents: results in order, per-item cost flat from 10 to 1,000', () => {
  it('runs examples/map-reduce.json locally and costs the same per item at 10, 100 and 1,000', async () => {
    const [ten, hundred, thousand] = [
      await runMapReduce(10),
      await runMapReduce(100),
      await runMapReduce(1000),
    ];
    for (const run of [ten, hundred, thousand]) {
      expect(run.outcome.status).toBe('COMPLETED');
      expect(run.outcome.output).toEqual({
        summary: 'Overall: the documents agree.',
        documents: run.items,
        first: 'd0: A short summary of the document.',
        last: `d${run.items - 1}: A short summary of the document.`,
      });
    }
    // What one more item costs, between 10 and 100 items and between 100 and 1,000.
    const marginal = (
      key: 'dynamoWrites' | 'dynamoWriteBytes' | 's3Puts' | 'payloadBytes' | 'taskInvocations',
    ) => [(hundred[key] - ten[key]) / 90, (thousand[key] - hundred[key]) / 900];
    // Counts per item are the same up to a Task retried under load (a transient error retries a step,
    // which rewrites what it wrote): within 1%.
    for (const key of ['dynamoWrites', 's3Puts', 'taskInvocations'] as const) {
      const [small, large] = marginal(key);
      expect(Math.abs(large! - small!), key).toBeLessThanOrEqual(small! * 0.01);
    }
    expect(Math.round(marginal('s3Puts')[1]!)).toBe(1); // the item's one LLM reply segment
    // Bytes vary only with the digits of an item's index.
    for (const key of ['dynamoWriteBytes', 'payloadBytes'] as const) {
      const [small, large] = marginal(key);
      expect(large!, key).toBeLessThanOrEqual(small! * 1.05);
    }
    // An item's own states carry the same small envelope at 10 and at 1,000 items.
    expect(thousand.largestItemPayloadBytes).toBeLessThanOrEqual(ten.largestItemPayloadBytes + 8);
  }, 900_000);
});
