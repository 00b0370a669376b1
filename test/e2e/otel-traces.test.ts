/**
 * OpenTelemetry traces of local runs (issue 27): `stepthread run` in a child process with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver exports one trace per run — the
 * run's span, a span per node step, per model call (GenAI semantic conventions) and per tool call,
 * fork branches and list items under their FORK's step — with prompt and reply text only when
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and no secret in any span.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cliProcess } from '../support/cli-process.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.ts';
// For its one setting: the SDK's Node version warning off, here and in the CLI processes.
import './helpers.ts';

const TOOL_SECRET = 'tok /="OTEL-SECRET-42" x+y';
const MODEL_KEY = 'sk-otel-7Hq/Zp+Lw=KEY987';

/** Every form a secret could be written back in (raw, URL-, form-, JSON-encoded, base64). */
function forms(secret: string): string[] {
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  return [
    secret,
    encodeURIComponent(secret),
    form,
    JSON.stringify(secret).slice(1, -1),
    JSON.stringify(JSON.stringify(secret)).slice(1, -1),
    Buffer.from(secret).toString('base64'),
  ];
}

function bodyOf(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on('end', () => resolve(text));
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The CRM: echoes the secret header back (the tool executor redacts it from the result). */
const crm = createServer(async (request, response) => {
  await bodyOf(request);
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ order: 'A-17', echoed: String(request.headers['x-api-key'] ?? '') }));
});

/**
 * A chat-completions server: asks for the `lookup` tool when offered tools and no tool result came
 * back yet, else answers; reports usage (11 in, 7 out) and the finish reason.
 */
const model = createServer(async (request, response) => {
  const body = JSON.parse(await bodyOf(request)) as {
    messages: { role: string; content: string }[];
    tools?: unknown[];
  };
  const toolTurn = (body.tools?.length ?? 0) > 0 && !body.messages.some((m) => m.role === 'tool');
  const last = body.messages.at(-1)?.content ?? '';
  const message = toolTurn
    ? {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"order":"A-17"}' } },
        ],
      }
    : { role: 'assistant', content: `answered: ${last.slice(0, 40)}` };
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      id: 'chatcmpl-otel',
      object: 'chat.completion',
      created: 1,
      model: 'echo',
      choices: [{ index: 0, message, finish_reason: toolTurn ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    }),
  );
});

let dir: string;
let crmUrl: string;
let modelUrl: string;
let receiver: OtlpReceiver;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-otel-'));
  [crmUrl, modelUrl] = await Promise.all([listen(crm), listen(model)]);
  receiver = await startOtlpReceiver();
  await writeFile(join(dir, 'traced.json'), JSON.stringify(tracedWorkflow()));
  await writeFile(join(dir, 'failing.json'), JSON.stringify(failingWorkflow()));
  await writeFile(join(dir, 'items.json'), JSON.stringify(itemsWorkflow('items', 'inline')));
  await writeFile(
    join(dir, 'stored-items.json'),
    JSON.stringify(itemsWorkflow('stored-items', 'distributed')),
  );
});
beforeEach(() => {
  receiver.spans.length = 0;
  receiver.bodies.length = 0;
});
afterAll(async () => {
  for (const server of [crm, model]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await receiver?.close();
  await rm(dir, { recursive: true, force: true });
});

/** An agent with a tool (its header a secret), a TOOL node, then a FORK of two model calls. */
function tracedWorkflow() {
  return {
    id: 'traced',
    version: 1,
    profiles: {
      default: { provider: 'openai', model: 'echo', baseUrl: `${modelUrl}/v1`, apiKeyEnv: 'MODEL_KEY' },
    },
    tools: {
      lookup: {
        description: 'Looks an order up',
        parameters: { type: 'object' },
        handler: {
          kind: 'http',
          url: `${crmUrl}/lookup`,
          method: 'GET',
          headers: { 'X-Api-Key': '{{secrets.CRM_KEY}}' },
          allowPrivateNetwork: true,
        },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'agent',
        type: 'LLM',
        config: { prompt: 'Order {{input.order}}, note {{input.note}}', tools: ['lookup'] },
      },
      { id: 'fetch', type: 'TOOL', config: { toolName: 'lookup', arguments: { order: '{{input.order}}' } } },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a', 'b'] },
      },
      { id: 'a', type: 'LLM', config: { prompt: 'Branch a' } },
      { id: 'b', type: 'LLM', config: { prompt: 'Branch b' } },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'a' },
      },
      { id: 'end', type: 'END', config: { output: { done: true } } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'fetch' },
      { from: 'fetch', to: 'split' },
      { from: 'a', to: 'merge' },
      { from: 'b', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  };
}

/** A FORK over the input's list (a Map state, inline or distributed), one model call per item. */
function itemsWorkflow(id: string, mode: 'inline' | 'distributed') {
  return {
    id,
    version: 1,
    profiles: {
      default: { provider: 'openai', model: 'echo', baseUrl: `${modelUrl}/v1`, apiKeyEnv: 'MODEL_KEY' },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'each',
        type: 'FORK',
        config: {
          forkPathIds: ['item'],
          forkStrategy: 'parallel',
          childNodeIds: ['work'],
          forEach: '{{input.items}}',
          itemVariable: 'item',
          mode,
        },
      },
      { id: 'work', type: 'LLM', config: { prompt: 'Work on {{item}}' } },
      { id: 'merge', type: 'JOIN', config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED' } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'work', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  };
}

function failingWorkflow() {
  return {
    id: 'failing',
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'boom', type: 'CODE', config: { code: "throw new Error('boom')" } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'boom' },
      { from: 'boom', to: 'end' },
    ],
  };
}

async function run(
  file: string,
  input: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<{ executionId: string; threadId: string; status: string }> {
  const result = await cliProcess(
    ['run', join(dir, file), '--input', JSON.stringify(input), '--json', '--data-dir', join(dir, 'data')],
    {
      cwd: dir,
      env: {
        CRM_KEY: TOOL_SECRET,
        MODEL_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        ...env,
      },
    },
  );
  expect(result.code, result.stderr).not.toBeNull();
  return JSON.parse(result.stdout);
}

const named = (spans: readonly ReceivedSpan[], name: string): ReceivedSpan[] =>
  spans.filter((span) => span.name === name);
const one = (spans: readonly ReceivedSpan[], name: string): ReceivedSpan => {
  const found = named(spans, name);
  expect(found.map((span) => span.name)).toEqual([name]);
  return found[0]!;
};

const CONTENT_ATTRIBUTES = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
];

describe('OpenTelemetry traces of a local run', () => {
  it('one trace per run: the run, each step, each model call and tool call, fork branches under their FORK', async () => {
    const first = await run('traced.json', { order: 'A-17', note: 'rush' });
    const second = await run('traced.json', { order: 'A-18', note: 'slow' });
    expect([first.status, second.status]).toEqual(['COMPLETED', 'COMPLETED']);

    const traces = new Map<string, ReceivedSpan[]>();
    for (const span of receiver.spans) traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span]);
    expect(traces.size).toBe(2);

    for (const { executionId, threadId } of [first, second]) {
      const root = receiver.spans.find(
        (span) =>
          span.name === 'invoke_workflow traced' &&
          span.attributes['stepthread.execution.id'] === executionId,
      );
      expect(root, `run span of ${executionId}`).toBeDefined();
      expect(root!.parentSpanId).toBe('');
      expect(root!.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_workflow',
        'gen_ai.workflow.name': 'traced',
        'stepthread.run.status': 'COMPLETED',
        'stepthread.root_thread.id': threadId,
      });
      expect(root!.resource['service.name']).toBe('stepthread');
      const spans = traces.get(root!.traceId)!;
      // Every span of the trace is this run's.
      for (const span of spans) {
        const execution = span.attributes['stepthread.execution.id'];
        if (execution !== undefined) expect(execution).toBe(executionId);
      }

      const step = (node: string) => one(spans, `step ${node}`);
      for (const node of ['start', 'agent', 'fetch', 'split', 'merge', 'end']) {
        expect(step(node).parentSpanId, node).toBe(root!.spanId);
        expect(step(node).attributes).toMatchObject({
          'stepthread.node.id': node,
          'stepthread.thread.id': threadId,
          'stepthread.step.status': 'COMPLETED',
          'stepthread.step.attempt': 1,
        });
      }
      expect(step('agent').attributes['stepthread.node.type']).toBe('LLM');
      // Fork branches: on their own threads, children of the FORK's step.
      for (const node of ['a', 'b']) {
        expect(step(node).parentSpanId, node).toBe(step('split').spanId);
        expect(step(node).attributes['stepthread.thread.id']).not.toBe(threadId);
      }
      // Each branch's node reported its path to the JOIN in its own step: no `branch-done` span.
      expect(named(spans, 'branch-done merge')).toEqual([]);

      // Model calls: two for the agent (a tool call, then the answer), one per branch.
      const chats = named(spans, 'chat echo');
      expect(chats).toHaveLength(4);
      const agentChats = chats.filter((span) => span.parentSpanId === step('agent').spanId);
      expect(agentChats.map((span) => span.attributes['gen_ai.response.finish_reasons'])).toEqual(
        expect.arrayContaining([['tool_calls'], ['stop']]),
      );
      for (const chat of chats) {
        expect(chat.attributes).toMatchObject({
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.system': 'openai',
          'gen_ai.request.model': 'echo',
          'gen_ai.usage.input_tokens': 11,
          'gen_ai.usage.output_tokens': 7,
          'server.address': '127.0.0.1',
        });
      }
      expect(chats.filter((span) => span.parentSpanId === step('a').spanId)).toHaveLength(1);

      // Tool calls: the agent's (with the model's call id) and the TOOL node's.
      const tools = named(spans, 'execute_tool lookup');
      expect(tools.map((span) => span.parentSpanId).sort()).toEqual(
        [step('agent').spanId, step('fetch').spanId].sort(),
      );
      for (const tool of tools) {
        expect(tool.attributes).toMatchObject({
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'lookup',
          'gen_ai.tool.type': 'extension',
          'gen_ai.tool.description': 'Looks an order up',
        });
      }
      expect(
        tools.find((span) => span.parentSpanId === step('agent').spanId)!.attributes['gen_ai.tool.call.id'],
      ).toBe('c1');

      // Content is opt-in.
      for (const span of spans) {
        for (const key of CONTENT_ATTRIBUTES)
          expect(span.attributes[key], `${span.name} ${key}`).toBeUndefined();
      }
    }
  }, 120_000);

  it('keeps prompt, reply and tool text with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and no secret anywhere', async () => {
    // The tool's secret is in the prompt too (the input's note), the model's key in its headers.
    const result = await run(
      'traced.json',
      { order: 'A-17', note: TOOL_SECRET },
      { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' },
    );
    expect(result.status).toBe('COMPLETED');
    const spans = receiver.spans;
    const agent = one(spans, 'step agent');
    const chats = named(spans, 'chat echo').filter((span) => span.parentSpanId === agent.spanId);
    expect(chats).toHaveLength(2);
    const input = JSON.parse(String(chats[0]!.attributes['gen_ai.input.messages']));
    expect(input).toContainEqual({
      role: 'user',
      parts: [{ type: 'text', content: 'Order A-17, note [REDACTED]' }],
    });
    const outputs = chats.map((span) => JSON.parse(String(span.attributes['gen_ai.output.messages'])));
    expect(outputs).toContainEqual([
      {
        role: 'assistant',
        parts: [{ type: 'tool_call', id: 'c1', name: 'lookup', arguments: { order: 'A-17' } }],
        finish_reason: 'tool_calls',
      },
    ]);
    const call = named(spans, 'execute_tool lookup').find((span) => span.parentSpanId === agent.spanId)!;
    expect(JSON.parse(String(call.attributes['gen_ai.tool.call.arguments']))).toEqual({ order: 'A-17' });
    expect(String(call.attributes['gen_ai.tool.call.result'])).toContain('[REDACTED]');

    const leaks = [...forms(TOOL_SECRET), ...forms(MODEL_KEY)].filter((form) =>
      receiver.bodies.some((body) => body.includes(form)),
    );
    expect(leaks).toEqual([]);
  }, 120_000);

  it('list items (a Map, inline and distributed): each item’s steps are children of the FORK’s step, in the run’s one trace', async () => {
    for (const file of ['items', 'stored-items']) {
      receiver.spans.length = 0;
      const result = await run(`${file}.json`, { items: ['x', 'y', 'z'] });
      expect(result.status, file).toBe('COMPLETED');
      const spans = receiver.spans;
      expect(new Set(spans.map((span) => span.traceId)).size, file).toBe(1);
      const root = one(spans, `invoke_workflow ${file}`);
      const fork = one(spans, 'step each');
      expect(fork.parentSpanId).toBe(root.spanId);
      const items = named(spans, 'step work');
      expect(items, file).toHaveLength(3);
      expect(new Set(items.map((span) => span.attributes['stepthread.thread.id'])).size).toBe(3);
      for (const item of items) {
        expect(item.parentSpanId, file).toBe(fork.spanId);
        expect(item.attributes['stepthread.thread.id']).not.toBe(result.threadId);
        const chats = named(spans, 'chat echo').filter((span) => span.parentSpanId === item.spanId);
        expect(chats, file).toHaveLength(1);
      }
    }
  }, 120_000);

  it('a failed node: its step and the run carry the error code', async () => {
    const result = await run('failing.json', {});
    expect(result.status).toBe('FAILED');
    const spans = receiver.spans;
    const boom = one(spans, 'step boom');
    expect(boom.statusCode).toBe(2);
    expect(boom.attributes['stepthread.step.status']).toBe('FAILED');
    const code = boom.attributes['stepthread.error.code'];
    expect(code).toEqual(expect.any(String));
    expect(boom.attributes['error.type']).toBe(code);
    const root = one(spans, 'invoke_workflow failing');
    expect(root.statusCode).toBe(2);
    expect(root.attributes).toMatchObject({
      'stepthread.run.status': 'FAILED',
      'stepthread.error.code': code,
    });
    expect(boom.traceId).toBe(root.traceId);
  }, 120_000);
});
