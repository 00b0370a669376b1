/**
 * A run's budget (issue 27): tokens, dollars and tool calls counted over the whole run tree on the
 * run's spend item (atomic ADDs on real dynalite), against a loopback OpenAI-compatible server that
 * reports known usage. The call that crosses a limit finishes and its node fails BUDGET_EXCEEDED; no
 * model call starts once a limit is spent; BUDGET_WARNING at 80%, once; a fork's parallel items
 * never lose one another's spend; a run that continues keeps counting; each step's cost is its
 * tokens times the model's prices. A run with no budget reads no spend before its model calls
 * (issue 29), counted on the table's requests.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { estimateAwsCost, runMetersOf } from '../../cli/aws-cost.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { Budget } from '../../engine/model/schema.ts';
import type { ModelUsage } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { createLocalRuntime, type LocalRuntime, type RunOutcome } from '../../functions/local/runtime.ts';
import { threadsOfChain } from '../../functions/stores/execution-chain.ts';
import type { RunSpend } from '../../functions/stores/spend-store.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, model] = await Promise.all([startE2e('budget'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), model.close()]);
});
beforeEach(() => {
  model.requests.length = 0;
});

/** Every call: 100 input and 20 output tokens (120 in all). */
const USAGE = { prompt: 100, completion: 20 };
const PER_CALL = USAGE.prompt + USAGE.completion;
/** gpt-4o-mini's list prices: $0.15 and $0.60 per million tokens. */
const MINI_CALL_USD = (USAGE.prompt * 0.15 + USAGE.completion * 0.6) / 1e6;

function replies(count: number, delayMs = 0): void {
  model.reply(...Array.from({ length: count }, () => ({ ...textReply('ok', USAGE), delayMs })));
}

function openai(extra: Record<string, unknown> = {}) {
  return { default: { provider: 'openai', model: 'gpt-4o-mini', baseUrl: `${model.url}/v1`, ...extra } };
}

/** LOOP_START → LLM `chat` → LOOP_END, `iterations` times. */
function loopWorkflow(
  id: string,
  iterations: number,
  budget?: Budget,
  profile: Record<string, unknown> = {},
) {
  return valid({
    id,
    version: 1,
    maxSteps: 100_000,
    ...(budget ? { budget } : {}),
    profiles: openai(profile),
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: iterations } },
      { id: 'chat', type: 'LLM', config: { prompt: 'Go on.' } },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'end', type: 'END', config: { output: { last: '{{nodes.chat}}' } } },
    ],
    edges: [
      { from: 'start', to: 'loop' },
      { from: 'loop', to: 'chat' },
      { from: 'chat', to: 'next' },
      { from: 'next', to: 'end' },
    ],
  });
}

async function spendOf(outcome: RunOutcome): Promise<RunSpend> {
  const spend = await e2e.runtime.stores.spend!.get(outcome.threadId);
  expect(spend).toBeDefined();
  return spend!;
}

/** Every step's usage and every event, over all threads of the run (all its executions). */
async function runJournal(outcome: RunOutcome) {
  const chain = await Promise.all(
    outcome.executions.map(
      async ({ executionId }) => (await e2e.runtime.stores.executions.getExecution(executionId))!,
    ),
  );
  const threads = await threadsOfChain(e2e.runtime.stores.threads, chain);
  const usage: ModelUsage[] = [];
  const events: StepthreadEvent[] = [];
  for (const { thread } of threads) {
    const journal = await e2e.runtime.stores.threads.readJournal(thread.id);
    usage.push(...journal.usage.filter((u): u is ModelUsage => u !== undefined));
    events.push(...journal.events);
  }
  return { threads, usage, events };
}

describe('budgets', () => {
  it('over a loop: the call that crosses maxTokens finishes, then the node fails BUDGET_EXCEEDED; one warning at 80%', async () => {
    replies(10);
    const outcome = await e2e.runtime.prepare(loopWorkflow('budget-loop', 10, { maxTokens: 500 })).run({});

    // 120, 240, 360, 480 stay within 500; the fifth call takes the run to 600 and ends it.
    expect(model.requests).toHaveLength(5);
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('node chat');
    expect(outcome.error?.message).toContain('maxTokens 500');
    expect(outcome.error?.message).toContain('600 tokens');
    const spend = await spendOf(outcome);
    expect(spend).toMatchObject({ tokens: 600, modelCalls: 5, budget: { maxTokens: 500 } });

    const { usage, events } = await runJournal(outcome);
    // The failed step keeps what its call spent.
    expect(usage).toHaveLength(5);
    expect(usage.reduce((sum, u) => sum + u.inputTokens + u.outputTokens, 0)).toBe(600);
    const warnings = events.filter((event) => event.type === 'BUDGET_WARNING');
    expect(warnings).toEqual([
      expect.objectContaining({ nodeId: 'chat', budget: 'maxTokens', spent: 480, limit: 500 }),
    ]);
  });

  it('no model call starts once the budget is spent (a count equal to the limit)', async () => {
    replies(10);
    const outcome = await e2e.runtime.prepare(loopWorkflow('budget-exact', 10, { maxTokens: 360 })).run({});
    // 360 after three calls: spent, not exceeded; the fourth is refused before it starts.
    expect(model.requests).toHaveLength(3);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('the model call was not started');
    expect((await spendOf(outcome)).tokens).toBe(360);
  });

  it('a run budget overrides the workflow one, limit by limit', async () => {
    replies(10);
    const workflow = loopWorkflow('budget-override', 10, { maxTokens: 100_000, maxToolCalls: 5 });
    const outcome = await e2e.runtime.prepare(workflow).run({}, { budget: { maxTokens: 250 } });
    expect(model.requests).toHaveLength(3);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect((await spendOf(outcome)).budget).toEqual({ maxTokens: 250, maxToolCalls: 5 });
  });

  it('refuses a run budget that is no budget, before anything runs', async () => {
    const prepared = e2e.runtime.prepare(loopWorkflow('budget-invalid', 1));
    await expect(prepared.run({}, { budget: { maxTokens: 0 } as Budget })).rejects.toMatchObject({
      code: 'INVALID_BUDGET',
    });
    await expect(prepared.run({}, { budget: { maxTokenz: 5 } as unknown as Budget })).rejects.toMatchObject({
      code: 'INVALID_BUDGET',
    });
    expect(model.requests).toHaveLength(0);
  });

  it('over a 50-item fork in parallel: no spend is lost, and it passes the limit by no more than the calls in flight', async () => {
    const concurrency = 10;
    replies(50, 20);
    const limit = 12 * PER_CALL;
    const workflow = valid({
      id: 'budget-fork',
      version: 1,
      budget: { maxTokens: limit },
      profiles: openai(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'each',
          type: 'FORK',
          config: {
            forkPathIds: ['item'],
            forkStrategy: 'parallel',
            childNodeIds: ['summarise'],
            forEach: '{{input.items}}',
            itemVariable: 'item',
            maxConcurrency: concurrency,
          },
        },
        { id: 'summarise', type: 'LLM', config: { prompt: 'Summarise {{item}}' } },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED' } },
        { id: 'end', type: 'END', config: { output: { n: '{{len(nodes.merge)}}' } } },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'summarise', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    });
    const items = Array.from({ length: 50 }, (_, i) => `doc ${i}`);
    const outcome = await e2e.runtime.prepare(workflow).run({ items });

    expect(outcome.status).toBe('FAILED');
    const spend = await spendOf(outcome);
    const calls = model.requests.length;
    // Every call that ran is counted, once: the items' ADDs never overwrite one another.
    expect(spend.modelCalls).toBe(calls);
    expect(spend.tokens).toBe(calls * PER_CALL);
    const { usage, threads } = await runJournal(outcome);
    expect(usage.reduce((sum, u) => sum + u.inputTokens + u.outputTokens, 0)).toBe(spend.tokens);
    // Past the limit by at most the calls that were in flight when it was reached.
    expect(calls).toBeGreaterThan(12);
    expect(spend.tokens).toBeLessThanOrEqual(limit + concurrency * PER_CALL);
    expect(calls).toBeLessThan(50);
    const failed = threads.filter(({ thread }) => thread.errors.some((e) => e.code === 'BUDGET_EXCEEDED'));
    expect(failed.length).toBeGreaterThan(0);
  });

  it('across a continuation: the run keeps counting in the executions it continues into', async () => {
    replies(60);
    const workflow = loopWorkflow('budget-continued', 60, { maxTokens: 30 * PER_CALL });
    const outcome = await e2e.runtime.prepare(workflow, { continueAfterEvents: 200 }).run({});

    expect(outcome.executions.length).toBeGreaterThan(1);
    // Thirty calls spend the 3,600 tokens exactly; the thirty-first is refused before it starts.
    expect(model.requests).toHaveLength(30);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('3600 tokens so far');
    const spend = await spendOf(outcome);
    expect(spend.tokens).toBe(30 * PER_CALL);
    const { events } = await runJournal(outcome);
    expect(events.filter((event) => event.type === 'THREAD_CONTINUED').length).toBeGreaterThan(0);
    expect(events.filter((event) => event.type === 'BUDGET_WARNING')).toHaveLength(1);
  });

  it('maxCostUsd counts each call at the model price; the step records its cost', async () => {
    replies(10);
    // Four calls cost 4 × $0.000027 = $0.000108: past $0.0001 at the fourth; 80% ($0.00008) at the third.
    const outcome = await e2e.runtime
      .prepare(loopWorkflow('budget-cost', 10, { maxCostUsd: 0.0001 }))
      .run({});
    expect(model.requests).toHaveLength(4);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('maxCostUsd 0.0001');
    const spend = await spendOf(outcome);
    expect(spend.costNanoUsd / 1e9).toBeCloseTo(4 * MINI_CALL_USD, 12);
    const { usage, events } = await runJournal(outcome);
    for (const step of usage) {
      expect(step).toEqual({
        modelCalls: 1,
        inputTokens: 100,
        outputTokens: 20,
        costUsd: expect.any(Number),
      });
      expect(step.costUsd).toBeCloseTo(MINI_CALL_USD, 12);
    }
    expect(events.filter((event) => event.type === 'BUDGET_WARNING')).toEqual([
      expect.objectContaining({ budget: 'maxCostUsd', limit: 0.0001 }),
    ]);
  });

  it('a profile pricing overrides the table, and prices a model the table lacks', async () => {
    replies(2);
    const pricing = { inputPerMTok: 3, outputPerMTok: 15 };
    const workflow = loopWorkflow('budget-pricing', 2, undefined, { model: 'my-own-model', pricing });
    const outcome = await e2e.runtime.prepare(workflow).run({});
    expect(outcome.status).toBe('COMPLETED');
    const { usage } = await runJournal(outcome);
    const perCall = (100 * 3 + 20 * 15) / 1e6;
    expect(usage.map((u) => u.costUsd)).toEqual([perCall, perCall]);
    expect((await spendOf(outcome)).costNanoUsd).toBe(2 * perCall * 1e9);
  });

  it('a model with no price: tokens counted, no cost', async () => {
    replies(1);
    const outcome = await e2e.runtime
      .prepare(loopWorkflow('budget-unpriced', 1, undefined, { model: 'llama3.1' }))
      .run({});
    expect(outcome.status).toBe('COMPLETED');
    const { usage } = await runJournal(outcome);
    expect(usage).toEqual([{ modelCalls: 1, inputTokens: 100, outputTokens: 20 }]);
    expect(await spendOf(outcome)).toMatchObject({ tokens: 120, costNanoUsd: 0, unpricedCalls: 1 });
  });

  it('maxToolCalls counts an agent’s tool calls and TOOL nodes; a call past it is refused', async () => {
    const toolCall = (i: number) => ({ content: '', toolCalls: [{ name: 'echo', arguments: { i } }] });
    const workflow = valid({
      id: 'budget-tools',
      version: 1,
      budget: { maxToolCalls: 3 },
      profiles: {
        default: { provider: 'scripted', byNode: { agent: [toolCall(1), toolCall(2), toolCall(3), 'done'] } },
      },
      tools: { echo: { description: 'echo', parameters: { type: 'object' }, handler: 'builtin:echo' } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'first', type: 'TOOL', config: { toolName: 'echo', arguments: { i: 0 } } },
        { id: 'agent', type: 'LLM', config: { prompt: 'Use the tool.', tools: ['echo'] } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'agent' },
        { from: 'agent', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(workflow).run({});
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('node agent');
    expect(outcome.error?.message).toContain('maxToolCalls 3');
    expect(outcome.error?.message).toContain('tool call was not started');
    expect((await spendOf(outcome)).toolCalls).toBe(3);
    const { events } = await runJournal(outcome);
    expect(events.filter((event) => event.type === 'BUDGET_WARNING')).toEqual([
      expect.objectContaining({ nodeId: 'agent', budget: 'maxToolCalls', spent: 3, limit: 3 }),
    ]);
  });
});

describe('reads of the spend before a model call', () => {
  /** A runtime on the same table whose requests are seen: each one on a run's SPEND item, by command. */
  let runtime: LocalRuntime;
  const spendCalls: string[] = [];
  beforeAll(() => {
    const clients = createAwsClients(e2e.services.target, {
      tableName: 'e2e-budget',
      bucketName: 'e2e-budget',
    });
    aroundCommands(clients.dynamo, ({ commandName, input }, next) => {
      const { Key } = input as { Key?: { sk?: unknown } };
      if (Key?.sk === 'SPEND') spendCalls.push(commandName);
      return next();
    });
    runtime = createLocalRuntime({ clients });
  });
  beforeEach(() => {
    spendCalls.length = 0;
  });
  const reads = () => spendCalls.filter((name) => name === 'GetItemCommand').length;

  /** START → `first` (LLM) → `second` (LLM) → END. */
  const twoCalls = (id: string) =>
    valid({
      id,
      version: 1,
      profiles: openai(),
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'first', type: 'LLM', config: { prompt: 'One.' } },
        { id: 'second', type: 'LLM', config: { prompt: 'Two.' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'second' },
        { from: 'second', to: 'end' },
      ],
    });

  it('a run with no budget reads none, and still counts every call', async () => {
    replies(3);
    const outcome = await runtime.prepare(loopWorkflow('reads-none', 3)).run({});
    expect(outcome.status).toBe('COMPLETED');
    expect(model.requests).toHaveLength(3);
    expect(reads()).toBe(0);
    // Each call still adds to the run's counts (one UpdateItem each), for inspect and runs.
    expect(spendCalls).toEqual(['UpdateItemCommand', 'UpdateItemCommand', 'UpdateItemCommand']);
    expect(await runtime.stores.spend!.get(outcome.threadId)).toMatchObject({ modelCalls: 3, tokens: 360 });
  });

  it('a run with a budget reads it before each call, and refuses the call past it', async () => {
    replies(10);
    const outcome = await runtime.prepare(loopWorkflow('reads-budget', 10, { maxTokens: 360 })).run({});
    expect(model.requests).toHaveLength(3);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('the model call was not started');
    // Three calls made and the fourth refused: one read before each.
    expect(reads()).toBe(4);
  });

  it('a fork with no budget: its parallel items read none; with one, each item reads it', async () => {
    const forkOf = (id: string, budget?: Budget) =>
      valid({
        id,
        version: 1,
        ...(budget ? { budget } : {}),
        profiles: openai(),
        nodes: [
          { id: 'start', type: 'START' },
          {
            id: 'each',
            type: 'FORK',
            config: {
              forkPathIds: ['item'],
              forkStrategy: 'parallel',
              childNodeIds: ['summarise'],
              forEach: '{{input.items}}',
              itemVariable: 'item',
            },
          },
          { id: 'summarise', type: 'LLM', config: { prompt: 'Summarise {{item}}' } },
          { id: 'merge', type: 'JOIN', config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED' } },
          { id: 'end', type: 'END' },
        ],
        edges: [
          { from: 'start', to: 'each' },
          { from: 'summarise', to: 'merge' },
          { from: 'merge', to: 'end' },
        ],
      });
    const items = ['a', 'b', 'c'];
    replies(3);
    const free = await runtime.prepare(forkOf('reads-fork-none')).run({ items });
    expect(free.status).toBe('COMPLETED');
    expect(reads()).toBe(0);

    spendCalls.length = 0;
    replies(3);
    const budgeted = await runtime.prepare(forkOf('reads-fork-budget', { maxTokens: 10_000 })).run({ items });
    expect(budgeted.status).toBe('COMPLETED');
    expect(reads()).toBe(3);
  });

  it('a run with no budget reads none in the executions it continues into', async () => {
    replies(30);
    const outcome = await runtime
      .prepare(loopWorkflow('reads-continued', 30), { continueAfterEvents: 200 })
      .run({});
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.executions.length).toBeGreaterThan(1);
    expect(model.requests).toHaveLength(30);
    expect(reads()).toBe(0);
  });

  it('a copy of a run with no budget, run from a node with one: spent, the next call is refused before it starts', async () => {
    const workflow = twoCalls('reads-copy-run');
    replies(2);
    const source = await runtime.prepare(workflow).run({});
    expect(source.status).toBe('COMPLETED');
    const copy = await runtime.copyThread(source.threadId, { fromNodeId: 'first' });
    model.requests.length = 0;
    spendCalls.length = 0;
    replies(2);
    const outcome = await runtime
      .prepare(workflow, { startNodeId: 'first' })
      .runThread(copy.id, { budget: { maxTokens: PER_CALL } });
    // The first call spends the budget exactly; the second is refused before it starts.
    expect(model.requests).toHaveLength(1);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('node second');
    expect(outcome.error?.message).toContain('the model call was not started');
    expect(reads()).toBe(2);
  });

  it('a copy of a run with no budget, started with one: spent, the next call is refused before it starts', async () => {
    const workflow = twoCalls('reads-copy-start');
    replies(2);
    const source = await runtime.prepare(workflow).run({});
    const copy = await runtime.copyThread(source.threadId, { fromNodeId: 'first' });
    model.requests.length = 0;
    replies(2);
    const outcome = await runtime.prepare(workflow).startThread(copy.id, { budget: { maxTokens: PER_CALL } });
    expect(model.requests).toHaveLength(1);
    expect(outcome.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.error?.message).toContain('node second');
    expect(outcome.error?.message).toContain('the model call was not started');
  });

  it('a copy started with no budget reads none', async () => {
    const workflow = twoCalls('reads-copy-free');
    replies(2);
    const source = await runtime.prepare(workflow).run({});
    const copy = await runtime.copyThread(source.threadId, { fromNodeId: 'first' });
    spendCalls.length = 0;
    replies(2);
    const started = await runtime.prepare(workflow).startThread(copy.id);
    expect(started.status).toBe('COMPLETED');
    const again = await runtime.copyThread(source.threadId, { fromNodeId: 'first' });
    replies(2);
    const ran = await runtime.prepare(workflow, { startNodeId: 'first' }).runThread(again.id);
    expect(ran.status).toBe('COMPLETED');
    expect(reads()).toBe(0);
  });

  it('the AWS estimate counts the spend read of each model call only for a run with a budget', async () => {
    const estimate = async (outcome: RunOutcome) => {
      const { thread } = await runtime.stores.threads.getThread(outcome.threadId);
      return estimateAwsCost(await runMetersOf(runtime.stores.threads, thread, [thread], 1));
    };
    replies(6);
    const free = await estimate(await runtime.prepare(loopWorkflow('reads-estimate', 3)).run({}));
    const budgeted = await estimate(
      await runtime.prepare(loopWorkflow('reads-estimate-budget', 3, { maxTokens: 10_000 })).run({}),
    );
    expect(budgeted.dynamoReads - free.dynamoReads).toBe(3);
    expect(budgeted.dynamoWrites).toBe(free.dynamoWrites);
  });
});
