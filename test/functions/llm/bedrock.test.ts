import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BedrockProfile, createBedrockProvider } from '../../../functions/llm/bedrock.ts';
import { NO_CALLS } from '../../../functions/llm/provider.ts';
import { runToolLoop } from '../../../functions/llm/tool-loop.ts';
import { converseError, converseText, converseToolUse } from './servers/converse-replies.ts';
import { type ScriptedServer, startScriptedServer } from './servers/scripted-server.ts';

const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';
let server: ScriptedServer;
let client: BedrockRuntimeClient;
let delays: number[] = [];
const effects = {
  sleep: async (ms: number) => {
    delays.push(ms);
  },
  random: () => 1,
};

beforeAll(async () => {
  server = await startScriptedServer({ http2: true });
  client = new BedrockRuntimeClient({
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'dummy-secret' },
    maxAttempts: 1,
  });
});
afterAll(async () => {
  client.destroy();
  await server.close();
});
afterEach(() => {
  server.requests.length = 0;
  delays = [];
});

const profile = (extra: Partial<BedrockProfile> = {}): BedrockProfile => ({
  provider: 'bedrock',
  model: MODEL,
  ...extra,
});
const provider = (extra: Partial<BedrockProfile> = {}) =>
  createBedrockProvider(profile(extra), { client, retryEffects: effects });

describe('bedrock provider: Converse requests', () => {
  it('posts /model/{id}/converse, signed, with system apart, merged turns, inference config and tools', async () => {
    server.reply(converseText('Bonjour', { inputTokens: 30, outputTokens: 4 }));
    const response = await provider({ parameters: { maxTokens: 256, temperature: 0.2, top_k: 5 } }).complete({
      nodeId: 'n',
      calls: NO_CALLS,
      messages: [
        { role: 'system', content: 'You translate.' },
        { role: 'user', content: 'Translate: hello' },
        { role: 'user', content: 'Into French.' },
      ],
      parameters: { temperature: 0 },
      tools: { dictionary: { description: 'Looks a word up' } },
    });
    expect(response).toEqual({
      message: { role: 'assistant', content: 'Bonjour' },
      usage: { promptTokens: 30, completionTokens: 4 },
    });
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(decodeURIComponent(request?.path ?? '')).toBe(`/model/${MODEL}/converse`);
    expect(String(request?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTEST\//);
    expect(request?.body).toEqual({
      system: [{ text: 'You translate.' }],
      messages: [{ role: 'user', content: [{ text: 'Translate: hello' }, { text: 'Into French.' }] }],
      inferenceConfig: { maxTokens: 256, temperature: 0 },
      additionalModelRequestFields: { top_k: 5 },
      toolConfig: {
        tools: [
          {
            toolSpec: {
              name: 'dictionary',
              description: 'Looks a word up',
              inputSchema: { json: { type: 'object', properties: {} } },
            },
          },
        ],
      },
    });
  });

  it('runs tool use through the loop: toolUse from the model, toolResult back as user content', async () => {
    server.reply(
      converseToolUse([{ toolUseId: 'tu_1', name: 'add', input: { a: 2, b: 3 } }], 'Let me add.'),
      converseText('2 + 3 = 5'),
    );
    const result = await runToolLoop({
      provider: provider(),
      nodeId: 'calc',
      messages: [{ role: 'user', content: 'What is 2 + 3?' }],
      tools: { add: { description: 'adds', parameters: { type: 'object', properties: { a: {}, b: {} } } } },
      executeTool: async (_name, args) => ({ ok: true, content: String(Number(args.a) + Number(args.b)) }),
    });
    expect(result.appended).toEqual([
      {
        role: 'assistant',
        content: 'Let me add.',
        toolCalls: [{ id: 'tu_1', name: 'add', arguments: { a: 2, b: 3 } }],
      },
      { role: 'tool', content: '5', toolCallId: 'tu_1', name: 'add' },
      { role: 'assistant', content: '2 + 3 = 5' },
    ]);
    expect(result.usage).toEqual({ promptTokens: 20, completionTokens: 10 });
    const second = server.requests[1]?.body as { messages: unknown[] };
    expect(second.messages).toEqual([
      { role: 'user', content: [{ text: 'What is 2 + 3?' }] },
      {
        role: 'assistant',
        content: [
          { text: 'Let me add.' },
          { toolUse: { toolUseId: 'tu_1', name: 'add', input: { a: 2, b: 3 } } },
        ],
      },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tu_1', content: [{ text: '5' }] } }] },
    ]);
  });

  it('sends earlier tool traffic as text when the call offers no tools (Converse would reject the blocks)', async () => {
    server.reply(converseText('done'));
    await provider().complete({
      nodeId: 'n',
      calls: NO_CALLS,
      messages: [
        { role: 'user', content: 'add' },
        { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'add', arguments: { a: 1 } }] },
        { role: 'tool', content: '1', toolCallId: 't', name: 'add' },
        { role: 'user', content: 'summarise' },
      ],
    });
    expect(server.requests[0]?.body).toEqual({
      messages: [
        { role: 'user', content: [{ text: 'add' }] },
        { role: 'assistant', content: [{ text: '[called tool add with {"a":1}]' }] },
        { role: 'user', content: [{ text: 'Result of tool add: 1' }, { text: 'summarise' }] },
      ],
    });
  });
});

describe('bedrock provider: failures', () => {
  const ask = { nodeId: 'n', calls: NO_CALLS, messages: [{ role: 'user' as const, content: 'hi' }] };

  it('retries throttling with backoff, then succeeds', async () => {
    server.reply(
      converseError(429, 'ThrottlingException', 'Too many requests'),
      converseError(429, 'ThrottlingException', 'Too many requests'),
      converseText('ok'),
    );
    expect((await provider().complete(ask)).message.content).toBe('ok');
    expect(server.requests).toHaveLength(3);
    expect(delays).toEqual([200, 400]);
  });

  it('fails LLM_UNAVAILABLE after retrying 503s, and LLM_RATE_LIMITED after retrying throttling', async () => {
    server.reply(
      ...Array.from({ length: 3 }, () => converseError(503, 'ServiceUnavailableException', 'busy')),
    );
    await expect(provider({ maxRetries: 2 }).complete(ask)).rejects.toMatchObject({
      code: 'LLM_UNAVAILABLE',
    });
    expect(server.requests).toHaveLength(3);
    server.reply(converseError(429, 'ThrottlingException', 'slow'));
    await expect(provider({ maxRetries: 0 }).complete(ask)).rejects.toMatchObject({
      code: 'LLM_RATE_LIMITED',
    });
  });

  it('fails validation and access errors at once with their codes', async () => {
    server.reply(converseError(400, 'ValidationException', 'messages: must alternate'));
    const invalid = provider().complete(ask);
    await expect(invalid).rejects.toMatchObject({ code: 'LLM_BAD_REQUEST' });
    await expect(invalid).rejects.toThrow('ValidationException (HTTP 400): messages: must alternate');
    server.reply(converseError(403, 'AccessDeniedException', 'no model access'));
    await expect(provider().complete(ask)).rejects.toMatchObject({ code: 'LLM_AUTH_FAILED' });
    expect(server.requests).toHaveLength(2);
    expect(delays).toEqual([]);
  });

  it('times out a slow attempt with LLM_TIMEOUT', async () => {
    server.reply({ ...converseText('late'), delayMs: 2000 });
    await expect(provider({ timeoutMs: 50, maxRetries: 0 }).complete(ask)).rejects.toMatchObject({
      code: 'LLM_TIMEOUT',
    });
  });
});
