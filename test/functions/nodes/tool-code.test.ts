/** TOOL and CODE nodes on real stores: outputs, variables, coded failures naming the node. */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import type { HandlerDeps } from '../../../functions/handlers/deps.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { envSecrets } from '../../../functions/tools/secrets.ts';
import { fullThread } from '../fixtures.ts';
import { failureOf, type Harness, run, startEvent, startHarness } from '../handlers/harness.ts';
import { type ScriptedServer, startScriptedServer } from '../llm/servers/scripted-server.ts';

let h: Harness;
let server: ScriptedServer;
beforeAll(async () => {
  [h, server] = await Promise.all([startHarness('tool-code'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([h.close(), server.close()]);
});
beforeEach(() => {
  server.requests.length = 0;
});

function deps(): HandlerDeps {
  return h.deps({ tools: { env: { target: 'local' }, secrets: envSecrets({}) } });
}

const VARIABLES = [
  { name: 'orderId', type: 'string' as const, initial: 'A-17' },
  { name: 'quantity', type: 'number' as const, initial: 3 },
  { name: 'order', type: 'object' as const },
  { name: 'total', type: 'object' as const },
];

async function start(executionId: string, input: Record<string, unknown> = {}): Promise<Envelope> {
  return (await dispatch(startEvent(executionId, input, VARIABLES), deps())) as Envelope;
}

async function threadOf(envelope: Envelope) {
  return (await fullThread(h.stores.threads, envelope.threadId)).thread;
}

function errorOf(error: Error): { code: string; message: string; nodeId?: string } {
  expect(error.name).toBe('stepthread.NodeFailed');
  return JSON.parse(error.message);
}

function httpTool(path: string): ToolDefinition {
  return {
    description: 'fetches an order',
    parameters: { type: 'object', properties: { id: { type: 'string' }, qty: { type: 'number' } } },
    handler: { kind: 'http', url: `${server.url}${path}`, method: 'POST', allowPrivateNetwork: true },
  };
}

const toolNode = (extra: Partial<TaskNode> = {}, config: Record<string, unknown> = {}): TaskNode => ({
  id: 'fetch',
  type: 'TOOL',
  config: {
    toolName: 'getOrder',
    arguments: { id: '{{orderId}}', qty: '{{quantity}}', note: 'for {{input.who}}' },
    ...config,
  },
  tool: httpTool('/orders'),
  variables: VARIABLES.filter((v) => v.name === 'order'),
  ...extra,
});

describe('TOOL node', () => {
  it('calls its tool with templated arguments; the output lands in node results and outputVariable', async () => {
    server.reply({ body: { id: 'A-17', status: 'shipped' } });
    const env = await start('exec-tool-ok', { who: 'Ada' });
    const next = await run(deps(), toolNode({}, { outputVariable: 'order' }), env);
    expect(next.last).toEqual({ nodeId: 'fetch', status: 'COMPLETED' });
    // Whole-value templates keep their type: qty stays a number.
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: '/orders',
      body: { id: 'A-17', qty: 3, note: 'for Ada' },
    });
    const thread = await threadOf(next);
    expect(thread.nodeResults.fetch).toMatchObject({
      status: 'COMPLETED',
      output: { id: 'A-17', status: 'shipped' },
    });
    expect(thread.variables.thread.order).toEqual({ id: 'A-17', status: 'shipped' });
    expect(thread.events?.some((e) => e.type === 'VARIABLE_CHANGED' && e.name === 'order')).toBe(true);
    // A TOOL node reads and writes no conversation.
    expect(thread.conversation.log.length).toBe(0);
  });

  it('without outputVariable leaves the variables alone', async () => {
    server.reply({ body: { ok: true } });
    const env = await start('exec-tool-no-var');
    const next = await run(deps(), toolNode(), env);
    const thread = await threadOf(next);
    expect(thread.nodeResults.fetch?.output).toEqual({ ok: true });
    expect(thread.variables.thread.order).toBeUndefined();
  });

  it('fails with the tool’s coded error naming the node, committed as a FAILED result', async () => {
    server.reply({ status: 404, body: { message: 'no such order' } });
    const env = await start('exec-tool-404');
    const error = errorOf(await failureOf(run(deps(), toolNode({}, { outputVariable: 'order' }), env)));
    expect(error).toEqual({
      code: 'TOOL_HTTP_ERROR',
      message: 'node fetch: tool "getOrder": HTTP 404 Not Found: {"message":"no such order"}',
      nodeId: 'fetch',
    });
    const thread = await threadOf(env);
    expect(thread.nodeResults.fetch).toMatchObject({ status: 'FAILED', error });
    expect(thread.variables.thread.order).toBeUndefined();
    // The runtime is fine: the next node runs.
    server.reply({ body: { id: 'A-17' } });
    const next = await run(deps(), { ...toolNode(), id: 'again' }, { ...env, step: env.step + 1 });
    expect(next.last).toEqual({ nodeId: 'again', status: 'COMPLETED' });
  });

  it('fails a connection refused, bad arguments, a missing definition and a bad config with coded errors naming the node', async () => {
    const env = await start('exec-tool-bad');
    let step = env.step;
    const attempt = async (node: TaskNode) =>
      errorOf(await failureOf(run(deps(), node, { ...env, step: step++ })));

    const refused = await attempt(
      toolNode({
        tool: {
          ...httpTool(''),
          handler: { kind: 'http', url: 'http://127.0.0.1:9/x', allowPrivateNetwork: true },
        },
      }),
    );
    expect(refused).toMatchObject({ code: 'TOOL_FAILED', nodeId: 'fetch' });
    expect(refused.message).toMatch(/^node fetch: tool "getOrder": the request failed/);

    const badArgs = await attempt(toolNode({}, { arguments: { qty: 'lots' } }));
    expect(badArgs).toMatchObject({ code: 'TOOL_ARGUMENTS_INVALID', nodeId: 'fetch' });

    const badTemplate = await attempt(toolNode({}, { arguments: { id: '{{ 1 + }}' } }));
    expect(badTemplate).toMatchObject({ code: 'INVALID_EXPRESSION', nodeId: 'fetch' });
    expect(badTemplate.message).toMatch(/^node fetch: tool arguments:/);

    const { tool: _omit, ...withoutTool } = toolNode();
    expect(await attempt(withoutTool)).toMatchObject({ code: 'UNKNOWN_TOOL', nodeId: 'fetch' });

    expect(await attempt(toolNode({ config: { arguments: {} } }))).toMatchObject({
      code: 'INVALID_NODE_CONFIG',
      nodeId: 'fetch',
    });
    expect(server.requests).toHaveLength(0);
  });
});

const codeNode = (config: Record<string, unknown>, id = 'calc'): TaskNode => ({
  id,
  type: 'CODE',
  config,
  variables: VARIABLES.filter((v) => v.name === 'total'),
});

describe('CODE node', () => {
  it('runs with the variables and its inputs as `input`; the returned JSON is the output and the variable', async () => {
    const env = await start('exec-code-ok', { price: 2.5 });
    const node = codeNode({
      code: 'const sum = input.quantity * input.price; return { orderId: input.orderId, sum, label: input.label }',
      inputs: { price: 'input.price', label: "orderId + '/' + quantity", quantity: 'quantity + 1' },
      outputVariable: 'total',
    });
    const next = await run(deps(), node, env);
    const thread = await threadOf(next);
    // `quantity` from inputs (4) wins over the variable (3).
    const output = { orderId: 'A-17', sum: 10, label: 'A-17/3' };
    expect(thread.nodeResults.calc).toMatchObject({ status: 'COMPLETED', output });
    expect(thread.variables.thread.total).toEqual(output);
    expect(thread.variables.thread.quantity).toBe(3);
  });

  it('code that returns nothing into a typed outputVariable is INVALID_VARIABLE saying the code returned nothing', async () => {
    const env = await start('exec-code-no-return');
    let step = env.step;
    const attempt = async (code: string) =>
      errorOf(
        await failureOf(run(deps(), codeNode({ code, outputVariable: 'total' }), { ...env, step: step++ })),
      );

    const none = await attempt('const sum = input.quantity * 2;\n({ sum });');
    expect(none).toMatchObject({ code: 'INVALID_VARIABLE', nodeId: 'calc' });
    expect(none.message).toMatch(/given null/);
    expect(none.message).toContain(
      "the code returned nothing: it has no return statement (a CODE node's output is what its code returns: add `return <value>`)",
    );
    // A return that gives nothing on this path, or null itself: said as such.
    const nothing = await attempt('if (input.quantity > 10) return { big: true };');
    expect(nothing.message).toContain(
      "the code returned null or nothing (a CODE node's output is what its code returns)",
    );
    // A value of another type is only the type mismatch.
    const text = await attempt('return "six";');
    expect(text.code).toBe('INVALID_VARIABLE');
    expect(text.message).not.toContain('returned');
  });

  it('a timeout is a coded failure naming the node, and the next CODE node runs normally', async () => {
    const env = await start('exec-code-timeout');
    const error = errorOf(
      await failureOf(run(deps(), codeNode({ code: 'while (true) {}', timeoutMs: 100 }, 'spin'), env)),
    );
    expect(error.code).toBe('CODE_TIMEOUT');
    expect(error.nodeId).toBe('spin');
    expect(error.message).toMatch(/^node spin: /);
    const thread = await threadOf(env);
    expect(thread.nodeResults.spin?.status).toBe('FAILED');

    const next = await run(deps(), codeNode({ code: 'return input.quantity * 2' }), {
      ...env,
      step: env.step + 1,
    });
    expect((await threadOf(next)).nodeResults.calc?.output).toBe(6);
  });

  it('a thrown error, a memory bomb and a bad input expression are coded failures naming the node', async () => {
    const env = await start('exec-code-errors');
    let step = env.step;
    const attempt = async (node: TaskNode) =>
      errorOf(await failureOf(run(deps(), node, { ...env, step: step++ })));

    const thrown = await attempt(codeNode({ code: 'const a = 1;\nthrow new Error("bad order")' }));
    expect(thrown).toMatchObject({ code: 'CODE_ERROR', nodeId: 'calc' });
    expect(thrown.message).toBe('node calc: Error: bad order (line 2)');

    const bomb = await attempt(
      codeNode({
        code: 'let s = "x"; while (true) { s += s; s.charCodeAt(s.length - 1); }',
        memoryLimitMb: 16,
      }),
    );
    expect(bomb).toMatchObject({ code: 'CODE_MEMORY_LIMIT', nodeId: 'calc' });

    const badInput = await attempt(codeNode({ code: 'return 1', inputs: { x: 'nosuch(1)' } }));
    expect(badInput.nodeId).toBe('calc');
    expect(badInput.message).toMatch(/^node calc: input "x": /);

    expect(await attempt(codeNode({ code: '' }))).toMatchObject({
      code: 'INVALID_NODE_CONFIG',
      nodeId: 'calc',
    });
  });
});
