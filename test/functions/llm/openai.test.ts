import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Message } from '../../../engine/model/schema.ts';
import { createOpenAiProvider } from '../../../functions/llm/openai.ts';
import { NO_CALLS } from '../../../functions/llm/provider.ts';
import type { OpenAiProfile } from '../../../functions/llm/secrets.ts';
import { runToolLoop } from '../../../functions/llm/tool-loop.ts';
import { errorReply, textReply, toolCallReply } from './servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from './servers/scripted-server.ts';

const KEY = 'sk-test-0123456789abcdefSECRET';
let server: ScriptedServer;
let delays: number[];
const effects = {
  sleep: async (ms: number) => {
    delays.push(ms);
  },
  random: () => 0.5,
};

beforeAll(async () => {
  server = await startScriptedServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.requests.length = 0;
  delays = [];
  vi.restoreAllMocks();
});
delays = [];

function profile(extra: Partial<OpenAiProfile> = {}): OpenAiProfile {
  return {
    provider: 'openai',
    model: 'gpt-test',
    baseUrl: `${server.url}/v1`,
    apiKeyEnv: 'TEST_KEY',
    ...extra,
  };
}
const env = { TEST_KEY: KEY };
const provider = (extra: Partial<OpenAiProfile> = {}, options = {}) =>
  createOpenAiProvider(profile(extra), { env, retryEffects: effects, ...options });
const ask = (messages: Message[] = [{ role: 'user', content: 'hi' }]) => ({
  nodeId: 'n',
  messages,
  calls: NO_CALLS,
});

describe('openai provider: requests on the wire', () => {
  it('posts chat completions with the key, the model, converted messages, tools and merged parameters', async () => {
    server.reply(textReply('hello there', { prompt: 12, completion: 3 }));
    const response = await provider({
      parameters: { temperature: 0.1, max_tokens: 50, stream: true },
    }).complete({
      ...ask([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'weather?', name: 'alice' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'lookup', arguments: { city: 'Oslo' } }],
        },
        { role: 'tool', content: '{"temp":3}', toolCallId: 'c1', name: 'lookup' },
      ]),
      parameters: { temperature: 0.7 },
      tools: {
        lookup: {
          description: 'Look up weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    });

    expect(response).toEqual({
      message: { role: 'assistant', content: 'hello there' },
      usage: { promptTokens: 12, completionTokens: 3 },
    });
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request?.body).toEqual({
      model: 'gpt-test',
      temperature: 0.7,
      max_tokens: 50,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'weather?', name: 'alice' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: '{"temp":3}' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'lookup',
            description: 'Look up weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
    });
  });

  it('reads tool calls with JSON-string arguments, keeping unparseable arguments as the raw text', async () => {
    server.reply(
      toolCallReply([
        { id: 'call_a', name: 'lookup', arguments: { city: 'Oslo' } },
        { id: 'call_b', name: 'lookup', arguments: '{not json' },
      ]),
    );
    const { message, usage } = await provider().complete(ask());
    expect(usage).toBeUndefined();
    expect(message).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'call_a', name: 'lookup', arguments: { city: 'Oslo' } },
        { id: 'call_b', name: 'lookup', arguments: '{not json' },
      ],
    });
  });

  it('sends no Authorization header to a base URL with no key named, even when OPENAI_API_KEY is set', async () => {
    server.reply(textReply('local model'));
    const local = createOpenAiProvider(
      { provider: 'openai', model: 'llama3', baseUrl: `${server.url}/v1` },
      { env: { OPENAI_API_KEY: KEY } },
    );
    expect((await local.complete(ask())).message.content).toBe('local model');
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('fails with LLM_MISSING_API_KEY before any request when the named variable is unset', async () => {
    const missing = createOpenAiProvider(profile({ apiKeyEnv: 'NOT_SET_ANYWHERE' }), { env: {} });
    await expect(missing.complete(ask())).rejects.toMatchObject({ code: 'LLM_MISSING_API_KEY' });
    expect(server.requests).toHaveLength(0);
  });
});

describe('openai provider: failures', () => {
  it('retries a 429, waiting what Retry-After says, then succeeds', async () => {
    server.reply(errorReply(429, 'slow down', { headers: { 'retry-after': '2' } }), textReply('ok'));
    expect((await provider().complete(ask())).message.content).toBe('ok');
    expect(server.requests).toHaveLength(2);
    expect(delays).toEqual([2000]);
  });

  it('retries 5xx with exponential backoff and full jitter, then fails LLM_UNAVAILABLE', async () => {
    server.reply(...Array.from({ length: 4 }, () => errorReply(500, 'boom', { type: 'server_error' })));
    const failure = provider().complete(ask());
    await expect(failure).rejects.toMatchObject({ code: 'LLM_UNAVAILABLE', nodeId: 'n' });
    await expect(failure).rejects.toThrow(/HTTP 500: boom \(after 4 attempts\)/);
    expect(server.requests).toHaveLength(4);
    // random() = 0.5 of caps 200, 400, 800
    expect(delays).toEqual([100, 200, 400]);
  });

  it('gives up on a rate limit after maxRetries with LLM_RATE_LIMITED', async () => {
    server.reply(errorReply(429, 'rate limited'), errorReply(429, 'rate limited'));
    await expect(provider({ maxRetries: 1 }).complete(ask())).rejects.toMatchObject({
      code: 'LLM_RATE_LIMITED',
    });
    expect(server.requests).toHaveLength(2);
  });

  it('does not retry an exhausted quota', async () => {
    server.reply(errorReply(429, 'You exceeded your current quota', { code: 'insufficient_quota' }));
    await expect(provider().complete(ask())).rejects.toMatchObject({ code: 'LLM_RATE_LIMITED' });
    expect(server.requests).toHaveLength(1);
  });

  it('fails a 401 at once with LLM_AUTH_FAILED, and the key appears in no message or log', async () => {
    const logged: unknown[] = [];
    for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logged.push(...args);
      });
    }
    vi.stubEnv('OPENAI_LOG', 'debug');
    server.reply(errorReply(401, `Incorrect API key provided: ${KEY}. Bearer ${KEY}`));
    try {
      const error = await provider()
        .complete(ask())
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'LLM_AUTH_FAILED' });
      const text = `${(error as Error).message} ${JSON.stringify(error)} ${String((error as Error).cause ?? '')}`;
      expect(text).toContain('HTTP 401');
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('0123456789abcdef');
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(logged.length).toBeGreaterThan(0); // the SDK's debug log ran ...
      expect(
        JSON.stringify(logged, (_k, v) => (v instanceof Headers ? Object.fromEntries(v) : v)),
      ).not.toContain(KEY); // ... without the key
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('fails a 400 at once with LLM_BAD_REQUEST carrying the server message', async () => {
    server.reply(errorReply(400, "Invalid value for 'temperature'"));
    const failure = provider().complete(ask());
    await expect(failure).rejects.toMatchObject({ code: 'LLM_BAD_REQUEST' });
    await expect(failure).rejects.toThrow("HTTP 400: Invalid value for 'temperature'");
    expect(server.requests).toHaveLength(1);
    server.reply(errorReply(404, 'The model gpt-nope does not exist'));
    await expect(provider().complete(ask())).rejects.toMatchObject({ code: 'LLM_BAD_REQUEST' });
  });

  it('fails a 200 that is no chat completion with LLM_PROVIDER_ERROR naming the node, not a TypeError', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ id: 'x' }, /not a chat completion \(.* at choices\)/],
      [{ id: 'x', choices: [] }, /has no choices/],
      [{ id: 'x', choices: [{ message: null }] }, /not a chat completion \(.* at choices\.0\.message\)/],
      [{ id: 'x', choices: [{ message: { content: { a: 1 } } }] }, /at choices\.0\.message\.content/],
      [
        { id: 'x', choices: [{ message: { content: 'hi' } }], usage: { prompt_tokens: 'many' } },
        /at usage\.prompt_tokens/,
      ],
      [
        { id: 'x', choices: [{ message: { content: null, tool_calls: [{ id: 'c', type: 'function' }] } }] },
        /at choices\.0\.message\.tool_calls\.0/,
      ],
    ];
    for (const [body, message] of cases) {
      server.reply({ body });
      const failure = provider().complete(ask());
      await expect(failure, JSON.stringify(body)).rejects.toMatchObject({
        code: 'LLM_PROVIDER_ERROR',
        nodeId: 'n',
      });
      await expect(failure).rejects.toThrow(message);
    }
  });

  it('times out a slow attempt with LLM_TIMEOUT', async () => {
    // The reply comes after 2 s: LLM_TIMEOUT (not the reply) shows the 50 ms limit ended the attempt.
    server.reply({ ...textReply('late'), delayMs: 2000 });
    await expect(provider({ timeoutMs: 50, maxRetries: 0 }).complete(ask())).rejects.toMatchObject({
      code: 'LLM_TIMEOUT',
    });
  });

  it("ends at once on the caller's abort, with its reason and no retry", async () => {
    server.reply({ ...textReply('late'), delayMs: 2000 });
    const controller = new AbortController();
    const call = provider().complete({ ...ask(), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('run ended')), 20);
    await expect(call).rejects.toThrow('run ended');
    expect(delays).toEqual([]);
  });

  it('reports an unreachable server as LLM_UNAVAILABLE after retries', async () => {
    const closed = await startScriptedServer();
    await closed.close();
    const unreachable = createOpenAiProvider(profile({ baseUrl: `${closed.url}/v1`, maxRetries: 1 }), {
      env,
      retryEffects: effects,
    });
    await expect(unreachable.complete(ask())).rejects.toMatchObject({ code: 'LLM_UNAVAILABLE' });
    expect(delays).toHaveLength(1);
  });
});

describe('openai provider in the tool loop', () => {
  it('runs the tool the model asks for and sends the result back in the wire format', async () => {
    server.reply(
      toolCallReply([{ id: 'call_1', name: 'lookup', arguments: { city: 'Oslo' } }], {
        prompt: 20,
        completion: 5,
      }),
      textReply('It is 3 degrees in Oslo.', { prompt: 40, completion: 8 }),
    );
    const executed: unknown[] = [];
    const result = await runToolLoop({
      provider: provider(),
      nodeId: 'agent',
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: { lookup: { description: 'weather', parameters: { type: 'object' } } },
      executeTool: async (name, args) => {
        executed.push([name, args]);
        return { ok: true, content: { temp: 3 } };
      },
    });
    expect(executed).toEqual([['lookup', { city: 'Oslo' }]]);
    expect(result.finalText).toBe('It is 3 degrees in Oslo.');
    expect(result.usage).toEqual({ promptTokens: 60, completionTokens: 13 });
    expect(result.toolCallCount).toBe(1);
    const second = server.requests[1]?.body as { messages: unknown[]; tools: unknown[] };
    expect(second.messages).toEqual([
      { role: 'user', content: 'weather in Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
    ]);
    expect(second.tools).toHaveLength(1);
  });
});

describe('openai provider: a server that echoes the request', () => {
  it('redacts the key, in every encoding, from a successful reply and its tool calls', async () => {
    const basic = Buffer.from(`user:${KEY}`).toString('base64');
    server.reply(
      toolCallReply(
        [{ id: 'c1', name: 'lookup', arguments: { auth: `Bearer ${KEY}`, [KEY]: encodeURIComponent(KEY) } }],
        undefined,
        `You sent Authorization: Bearer ${KEY} (${basic}); as JSON ${JSON.stringify({ key: KEY })}`,
      ),
    );
    const response = await provider().complete(ask());
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    const text = JSON.stringify(response);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(basic.slice(8, -4));
    expect(response.message.content).toContain('Bearer [REDACTED]');
    expect(response.message.toolCalls?.[0]?.arguments).toEqual({
      auth: 'Bearer [REDACTED]',
      '[REDACTED]': '[REDACTED]',
    });
  });
});
