import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Envelope } from '../../../engine/thread/types.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import { stepOf } from '../../../functions/handlers/dispatch-table.ts';
import { createNodeHandler } from '../../../functions/handlers/lambda.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { codeNode } from '../../../functions/nodes/code.ts';
import { llmNode } from '../../../functions/nodes/llm.ts';
import { variableNode } from '../../../functions/nodes/variable.ts';
import { fullThread } from '../fixtures.ts';
import { failureOf, type Harness, run, startEvent, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('nodes');
});
afterAll(() => h.close());
beforeEach(() => {
  h.dynamoMeter.reset();
  h.s3Meter.reset();
});

const profile = {
  provider: 'scripted' as const,
  responses: ['generic reply'],
  byNode: { ask: ['Paris is the capital.', 'About two million people.'] },
};
const llm = (id: string, prompt: string, extra: Partial<TaskNode> = {}): TaskNode => ({
  id,
  type: 'LLM',
  config: { prompt, profileId: 'default' },
  profile,
  ...extra,
});

async function start(
  executionId: string,
  input: Record<string, unknown> = {},
  variables: TaskNode['variables'] = [],
) {
  return (await dispatch(startEvent(executionId, input, variables), h.deps())) as Envelope;
}

describe('START and END', () => {
  it('creates the root thread from the execution id, records the execution, and completes it once END has completed', async () => {
    const first = await start('exec-start-end', { topic: 'tea' }, [
      { name: 'n', type: 'number', initial: 1 },
    ]);
    expect(first).toMatchObject({ executionId: 'exec-start-end', workflowId: 'wf', step: 1, maxSteps: 100 });
    expect(first.threadId).toBe(first.rootThreadId);
    const again = (await dispatch(startEvent('exec-start-end', { topic: 'tea' }), h.deps())) as Envelope;
    expect(again).toEqual(first);

    const end: TaskNode = {
      id: 'end',
      type: 'END',
      config: { output: { topic: '{{input.topic}}', n: '{{n}}' } },
    };
    const done = await run(h.deps(), end, first);
    expect(done.step).toBe(2);
    const { thread } = await fullThread(h.stores.threads, first.threadId);
    expect(thread.status).toBe('COMPLETED');
    expect(thread.output).toEqual({ topic: 'tea', n: 1 });
    expect(thread.events?.map((e) => e.type)).toEqual([
      'THREAD_CREATED',
      'THREAD_STARTED',
      'NODE_STARTED',
      'NODE_COMPLETED',
      'NODE_STARTED',
      'NODE_COMPLETED',
      'THREAD_COMPLETED',
    ]);
    expect(await h.stores.executions.getExecution('exec-start-end')).toMatchObject({
      status: 'COMPLETED',
      rootThreadId: first.threadId,
    });
  });
});

describe('VARIABLE, ROUTE, LLM, CONTEXT_PROCESSOR', () => {
  it('runs a linear conversation and keeps messages in S3, state in DynamoDB', async () => {
    let env = await start('exec-linear', { city: 'Paris' }, [{ name: 'count', type: 'number', initial: 0 }]);
    env = await run(
      h.deps(),
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'count', variableType: 'number', expression: 'count + 2' },
      },
      env,
    );
    env = await run(
      h.deps(),
      llm('ask', 'Tell me about {{input.city}} ({{count}})', {
        config: {
          prompt: 'Tell me about {{input.city}} ({{count}})',
          profileId: 'default',
          outputVariable: 'answer',
        },
      }),
      env,
    );
    env = await run(h.deps(), llm('ask', 'How many people?'), env);
    env = await run(
      h.deps(),
      {
        id: 'pick',
        type: 'ROUTE',
        config: {
          routes: [
            { condition: "contains(answer, 'Paris')", targetNodeId: 'low', priority: 1 },
            { condition: 'count == 2', targetNodeId: 'high', priority: 5 },
            { condition: 'true', targetNodeId: 'tie', priority: 5 },
          ],
          defaultTargetNodeId: 'fallback',
        },
      },
      env,
    );
    expect(env.route).toBe('high');
    env = await run(
      h.deps(),
      {
        id: 'trim',
        type: 'CONTEXT_PROCESSOR',
        config: { operation: 'truncate', truncate: { keepLast: 2 } },
      },
      env,
    );
    expect(env.route).toBeUndefined();

    const { thread } = await fullThread(h.stores.threads, env.threadId);
    expect(thread.step).toBe(6);
    expect(thread.variables.thread).toEqual({ count: 2, answer: 'Paris is the capital.' });
    expect(thread.nodeResults.ask?.output).toBe('About two million people.');
    expect(thread.nodeResults.trim?.output).toEqual({
      operation: 'truncate',
      messageCount: 2,
      visibleCount: 2,
    });
    expect(await h.readMessages(thread)).toEqual([
      { role: 'user', content: 'How many people?' },
      { role: 'assistant', content: 'About two million people.' },
    ]);
    expect(thread.conversation.log.length).toBe(4);
    expect(thread.conversation.tokenUsage.totalTokens).toBeGreaterThan(0);
    expect(thread.contextData.llmCalls).toEqual({ total: 2, byNode: { ask: 2 } });
  });

  it('routes to the default when no condition holds, and fails with NO_ROUTE_MATCHED without one', async () => {
    let env = await start('exec-route-default');
    const routes = [{ condition: 'false', targetNodeId: 'a' }];
    env = await run(h.deps(), { id: 'r1', type: 'ROUTE', config: { routes, defaultTargetNodeId: 'b' } }, env);
    expect(env.route).toBe('b');
    const error = await failureOf(run(h.deps(), { id: 'r2', type: 'ROUTE', config: { routes } }, env));
    expect(error.name).toBe('stepthread.NodeFailed');
    expect(JSON.parse(error.message)).toMatchObject({ code: 'NO_ROUTE_MATCHED', nodeId: 'r2' });
  });

  it('fails an LLM node over its token limit, records the failure and keeps no messages', async () => {
    const env = await start('exec-tokens');
    const node = llm('big', 'x'.repeat(200), {
      profile: { provider: 'scripted', responses: ['ok'], tokenLimit: 10 },
    });
    const error = await failureOf(run(h.deps(), node, env));
    expect(error.name).toBe('stepthread.NodeFailed');
    expect(JSON.parse(error.message)).toMatchObject({ code: 'TOKEN_LIMIT_EXCEEDED', nodeId: 'big' });
    const { thread } = await fullThread(h.stores.threads, env.threadId);
    expect(thread.nodeResults.big?.status).toBe('FAILED');
    expect(thread.conversation.log.length).toBe(0);
    expect(thread.lastEnvelope?.last).toEqual({ nodeId: 'big', status: 'FAILED' });
    // A retry of the failed step fails the same way without running the node again.
    const again = await failureOf(run(h.deps(), node, env));
    expect(again.message).toBe(error.message);
  });

  it('fails CODE, TOOL and USER_INTERACTION without a config with a coded error naming the node, then `fail` marks the run FAILED', async () => {
    const env = await start('exec-unimplemented');
    for (const type of ['CODE', 'TOOL', 'USER_INTERACTION'] as const) {
      const error = await failureOf(
        run(
          h.deps(),
          { id: `n-${type}`, type, config: {} },
          { ...env, step: env.step + (type === 'CODE' ? 0 : type === 'TOOL' ? 1 : 2) },
        ),
      );
      expect(error.name).toBe('stepthread.NodeFailed');
      expect(JSON.parse(error.message)).toMatchObject({ code: 'INVALID_NODE_CONFIG', nodeId: `n-${type}` });
      expect(JSON.parse(error.message).message).toContain(`n-${type}`);
    }
    const caught = {
      ...env,
      error: {
        Error: 'stepthread.NodeFailed',
        Cause: JSON.stringify({ code: 'NOT_IMPLEMENTED', message: 'no', nodeId: 'n-CODE' }),
      },
    };
    const failNode: TaskNode = { id: 'stepthread:fail', type: 'END' };
    await dispatch({ action: 'fail', node: failNode, envelope: caught }, h.deps());
    await dispatch({ action: 'fail', node: failNode, envelope: caught }, h.deps());
    const { thread } = await fullThread(h.stores.threads, env.threadId);
    expect(thread.status).toBe('FAILED');
    expect(thread.events?.filter((e) => e.type === 'THREAD_FAILED')).toHaveLength(1);
    expect(await h.stores.executions.getExecution('exec-unimplemented')).toMatchObject({ status: 'FAILED' });
  });

  it('rejects an envelope from the future as STEP_MISMATCH', async () => {
    const env = await start('exec-future');
    const error = await failureOf(
      run(h.deps(), { id: 'r', type: 'ROUTE', config: { routes: [] } }, { ...env, step: 5 }),
    );
    expect(JSON.parse(error.message)).toMatchObject({ code: 'STEP_MISMATCH' });
  });
});

describe('LOOP_START / LOOP_END', () => {
  const loopStart = (dataSource: unknown, maxIterations = 10): TaskNode => ({
    id: 'each',
    type: 'LOOP_START',
    config: { loopId: 'L', dataSource, iterationVariable: 'it', maxIterations },
  });
  const collect: TaskNode = {
    id: 'collect',
    type: 'VARIABLE',
    config: { variableName: 'seen', variableType: 'array', expression: 'concat(seen, [[index, it]])' },
  };
  const loopEnd = (breakCondition?: string): TaskNode => ({
    id: 'next',
    type: 'LOOP_END',
    config: { loopId: 'L', ...(breakCondition ? { breakCondition } : {}) },
  });

  /** Drives the loop the way the Choice states do. */
  async function runLoop(
    executionId: string,
    start: TaskNode,
    end: TaskNode,
    input: Record<string, unknown> = {},
  ) {
    let env = (await dispatch(
      startEvent(executionId, input, [{ name: 'seen', type: 'array', initial: [] }]),
      h.deps(),
    )) as Envelope;
    let guard = 0;
    for (;;) {
      env = await run(h.deps(), start, env);
      if (env.loop?.exit) break;
      env = await run(h.deps(), collect, env);
      env = await run(h.deps(), end, env);
      if (env.loop?.exit) break;
      if (++guard > 50) throw new Error('loop did not end');
    }
    const { thread } = await fullThread(h.stores.threads, env.threadId);
    return thread;
  }

  it('iterates arrays, object entries, counts and strings; scopes end with the loop', async () => {
    const arrays = await runLoop('loop-array', loopStart('{{input.items}}'), loopEnd(), {
      items: ['a', 'b'],
    });
    expect(arrays.variables.thread.seen).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    expect(arrays.variables.loop).toEqual([]);
    expect(arrays.contextData.loops).toBeUndefined();

    const entries = await runLoop('loop-object', loopStart({ x: 1 }), loopEnd());
    expect(entries.variables.thread.seen).toEqual([[0, { key: 'x', value: 1 }]]);
    const counted = await runLoop('loop-number', loopStart(3), loopEnd());
    expect(counted.variables.thread.seen).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
    const chars = await runLoop('loop-string', loopStart('hi'), loopEnd());
    expect(chars.variables.thread.seen).toEqual([
      [0, 'h'],
      [1, 'i'],
    ]);
  });

  it('enforces maxIterations, counts when no data source is given, and honours breakCondition', async () => {
    const capped = await runLoop('loop-cap', loopStart([1, 2, 3, 4, 5], 2), loopEnd());
    expect(capped.variables.thread.seen).toEqual([
      [0, 1],
      [1, 2],
    ]);
    const counted = await runLoop('loop-count', loopStart(undefined, 3), loopEnd());
    expect(counted.variables.thread.seen).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
    const broken = await runLoop('loop-break', loopStart(undefined, 9), loopEnd('index >= 1'));
    expect(broken.variables.thread.seen).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(broken.variables.loop).toEqual([]);
    const empty = await runLoop('loop-empty', loopStart([]), loopEnd());
    expect(empty.variables.thread.seen).toEqual([]);
  });
});

describe('SUBGRAPH boundaries', () => {
  it('pushes a scope with inputMapping and maps the output back on exit', async () => {
    let env = await start('exec-subgraph', { n: 4 });
    env = await run(
      h.deps(),
      {
        id: 'sub:enter',
        type: 'SUBGRAPH',
        boundary: 'ENTER',
        config: {
          workflowId: 'child',
          workflowVersion: 1,
          variables: [{ name: 'acc', initial: 10 }],
          inputMapping: { x: 'input.n * 2' },
        },
      },
      env,
    );
    env = await run(
      h.deps(),
      {
        id: 'sub.calc',
        type: 'VARIABLE',
        config: { variableName: 'acc', variableType: 'number', expression: 'acc + x' },
      },
      env,
    );
    let { thread } = await fullThread(h.stores.threads, env.threadId);
    expect(thread.variables.subgraph).toEqual([{ acc: 18, x: 8 }]);
    env = await run(
      h.deps(),
      {
        id: 'sub:exit',
        type: 'SUBGRAPH',
        boundary: 'EXIT',
        config: { output: { total: '{{acc}}' }, outputMapping: { result: 'output.total + 1' } },
      },
      env,
    );
    ({ thread } = await fullThread(h.stores.threads, env.threadId));
    expect(thread.variables.subgraph).toEqual([]);
    expect(thread.variables.thread).toEqual({ result: 19 });
    expect(thread.nodeResults['sub:exit']?.output).toEqual({ total: 18 });
  });
});

describe('Lambda handler', () => {
  it('runs a task through middy with the deps it is given', async () => {
    const env = await start('exec-lambda');
    const handler = createNodeHandler('VARIABLE', { execute: stepOf(variableNode) }, () => h.deps());
    const node: TaskNode = {
      id: 'v',
      type: 'VARIABLE',
      config: { variableName: 'x', variableType: 'string', expression: "'y'" },
    };
    const next = await handler({ action: 'execute', node, envelope: env }, {} as never);
    expect(next).toMatchObject({ step: 2, last: { nodeId: 'v', status: 'COMPLETED' } });
    const stale = await handler(
      { action: 'execute', node, envelope: { ...env, step: 9 } },
      {} as never,
    ).catch((e: Error) => e);
    expect((stale as Error).name).toBe('stepthread.NodeFailed');
  });
});

describe('CODE', () => {
  it('fails code reading nodes or a variable by its bare name with a hint: only `input` exists in the sandbox', async () => {
    const env = await start('exec-code-unbound', {}, [{ name: 'count', type: 'number', initial: 1 }]);
    const failures: Array<{ code: string; message: string }> = [];
    for (const [i, code] of ['return nodes.lookup.years', 'return count + 1', 'return fetch'].entries()) {
      const node: TaskNode = { id: `calc${i}`, type: 'CODE', config: { code } };
      const error = await failureOf(run(h.deps(), node, { ...env, step: env.step + i }));
      failures.push(JSON.parse(error.message) as { code: string; message: string });
    }
    expect(failures.map(({ code, message }) => [code, message])).toEqual([
      [
        'CODE_ERROR',
        `node calc0: ReferenceError: 'nodes' is not defined (line 1); a CODE node sees only \`input\`: pass what it needs through "inputs", such as {"x": "nodes.<id>"}, and read input.x`,
      ],
      [
        'CODE_ERROR',
        "node calc1: ReferenceError: 'count' is not defined (line 1); a CODE node sees its variables and inputs as input.count",
      ],
      // Not a name stepthread gives: nothing to add.
      ['CODE_ERROR', "node calc2: ReferenceError: 'fetch' is not defined (line 1)"],
    ]);
  });
});

describe('Lambda handler of a CODE node', () => {
  it('logs what the code printed, one entry per line, and keeps it out of the state it returns', async () => {
    const env = await start('exec-lambda-code');
    const handler = createNodeHandler('CODE', { execute: stepOf(codeNode) }, () => h.deps());
    const node: TaskNode = {
      id: 'c',
      type: 'CODE',
      config: { code: 'console.log("hello from code"); console.warn({ n: 1 }); return 1' },
    };
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    let next: unknown;
    try {
      next = await handler({ action: 'execute', node, envelope: env }, {} as never);
    } finally {
      spy.mockRestore();
    }
    const entries = written
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.codeOutput === true);
    expect(entries.map(({ message, nodeId, committedStep }) => ({ message, nodeId, committedStep }))).toEqual(
      [
        { message: 'hello from code', nodeId: 'c', committedStep: 2 },
        { message: 'warn: {"n":1}', nodeId: 'c', committedStep: 2 },
      ],
    );
    expect(JSON.stringify(next)).not.toContain('hello from code');
  });
});

describe('Lambda handler of an LLM node whose code tool prints', () => {
  it('logs what the tool printed under its heading, one entry per line, and keeps it on the step', async () => {
    const env = await start('exec-lambda-llm-tool');
    const handler = createNodeHandler('LLM', { execute: stepOf(llmNode) }, () => h.deps());
    const node: TaskNode = {
      ...llm('agent', 'weigh it'),
      config: { prompt: 'weigh it', profileId: 'default', tools: ['weigh'] },
      profile: {
        provider: 'scripted',
        byNode: { agent: [{ toolCalls: [{ id: 'w1', name: 'weigh', arguments: { kg: 2 } }] }, 'done'] },
      },
      tools: {
        weigh: {
          description: 'Weighs',
          parameters: { type: 'object', properties: { kg: { type: 'number' } } },
          handler: { kind: 'code', code: 'console.log("weighing", input.kg); return input.kg * 1000' },
        },
      },
    };
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    let next: unknown;
    try {
      next = await handler({ action: 'execute', node, envelope: env }, {} as never);
    } finally {
      spy.mockRestore();
    }
    const entries = written
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.codeOutput === true);
    expect(entries.map(({ message, nodeId }) => ({ message, nodeId }))).toEqual([
      { message: '[tool weigh, call w1]', nodeId: 'agent' },
      { message: 'weighing 2', nodeId: 'agent' },
    ]);
    expect(JSON.stringify(next)).not.toContain('weighing');
    const journal = await h.stores.threads.readJournal(env.threadId);
    // By step: START printed nothing; the LLM node's step keeps what its tool printed.
    expect(journal.logs).toEqual([undefined, { lines: ['[tool weigh, call w1]', 'weighing 2'] }]);
  });
});

describe('request counts', () => {
  it('VARIABLE, ROUTE and LOOP nodes: one GetItem, the step record and one UpdateItem, no S3', async () => {
    let env = await start('exec-meter');
    // As compiled when no expression reads these nodes' outputs.
    const nodes: TaskNode[] = [
      { id: 'v', type: 'VARIABLE', config: { variableName: 'a', variableType: 'number', expression: '1' } },
      { id: 'r', type: 'ROUTE', config: { routes: [{ condition: 'a == 1', targetNodeId: 'x' }] } },
      { id: 'ls', type: 'LOOP_START', config: { loopId: 'L', dataSource: [1], maxIterations: 3 } },
      { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
    ].map((node) => ({ ...node, resultUnread: true }) as TaskNode);
    for (const node of nodes) {
      h.dynamoMeter.reset();
      h.s3Meter.reset();
      env = await run(h.deps(), node, env);
      expect(h.dynamoMeter.snapshot(), node.id).toEqual({
        GetItemCommand: expect.objectContaining({ requests: 1 }),
        PutItemCommand: expect.objectContaining({ requests: 1 }),
        UpdateItemCommand: expect.objectContaining({ requests: 1 }),
      });
      expect(h.s3Meter.requests(), node.id).toBe(0);
    }
  });

  it('a node whose output a later node reads also keeps it as its latest result (one more PutItem)', async () => {
    const env = await start('exec-meter-read');
    h.dynamoMeter.reset();
    const next = await run(
      h.deps(),
      { id: 'v', type: 'VARIABLE', config: { variableName: 'a', variableType: 'number', expression: '1' } },
      env,
    );
    expect(h.dynamoMeter.requests('PutItemCommand')).toBe(2);
    // A reader loads exactly the outputs it names, in one BatchGetItem.
    h.dynamoMeter.reset();
    await run(
      h.deps(),
      {
        id: 'w',
        type: 'VARIABLE',
        config: { variableName: 'a', variableType: 'number', expression: 'nodes.v + 1' },
      },
      next,
    );
    expect(h.dynamoMeter.requests('BatchGetItemCommand')).toBe(1);
    expect((await fullThread(h.stores.threads, next.threadId)).thread.nodeResults.w?.output).toBe(2);
  });

  it('LLM: three DynamoDB requests for the step, one on the run spend item per model call, one S3 write', async () => {
    const env = await start('exec-meter-llm');
    h.dynamoMeter.reset();
    h.s3Meter.reset();
    await run(h.deps(), { ...llm('ask', 'hello'), resultUnread: true }, env);
    // The head's GetItem, the record's PutItem, the commit's UpdateItem; and the spend item added to
    // after the model call (tokens, cost). A run with no budget reads no spend before the call.
    expect(h.dynamoMeter.snapshot()).toEqual({
      GetItemCommand: expect.objectContaining({ requests: 1 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 2 }),
    });
    expect(h.s3Meter.requests('PutObjectCommand')).toBe(1);
  });

  it('LLM of a run with a budget: one more GetItem, the spend read before the model call', async () => {
    const given = startEvent('exec-meter-llm-budget');
    const env = (await dispatch(
      { ...given, input: { ...given.input, budget: { maxTokens: 10_000 } } },
      h.deps(),
    )) as Envelope;
    h.dynamoMeter.reset();
    await run(h.deps(), { ...llm('ask', 'hello'), resultUnread: true }, env);
    expect(h.dynamoMeter.snapshot()).toEqual({
      GetItemCommand: expect.objectContaining({ requests: 2 }),
      PutItemCommand: expect.objectContaining({ requests: 1 }),
      UpdateItemCommand: expect.objectContaining({ requests: 2 }),
    });
  });
});
