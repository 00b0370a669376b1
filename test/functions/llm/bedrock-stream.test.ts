/**
 * The bedrock provider with a watcher: ConverseStream against a local HTTP/2 server that speaks the
 * AWS event-stream encoding (the SDK's own codec), each piece of text handed on as it comes, and the
 * same message and usage as a Converse call of the same reply, toolUse input sent in pieces included.
 */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BedrockProfile, createBedrockProvider } from '../../../functions/llm/bedrock.ts';
import { ConverseStreamAssembler } from '../../../functions/llm/converse-stream.ts';
import { NO_CALLS } from '../../../functions/llm/provider.ts';
import { converseText, converseToolUse } from './servers/converse-replies.ts';
import { replyRecorder as recorder } from './servers/reply-recorder.ts';
import { type ScriptedServer, startScriptedServer } from './servers/scripted-server.ts';

const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';
let server: ScriptedServer;
let client: BedrockRuntimeClient;

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
});

const profile: BedrockProfile = { provider: 'bedrock', model: MODEL };
const provider = () =>
  createBedrockProvider(profile, { client, retryEffects: { sleep: async () => {}, random: () => 0 } });
const ask = { nodeId: 'n', calls: NO_CALLS, messages: [{ role: 'user' as const, content: 'hi' }] };

describe('bedrock provider: streamed replies (ConverseStream)', () => {
  it('posts /converse-stream, hands on each piece, and returns what Converse returns', async () => {
    const reply = converseText('Bonjour tout le monde', { inputTokens: 9, outputTokens: 4 });
    server.reply(reply);
    const plain = await provider().complete(ask);
    server.reply(reply);
    const stream = recorder();
    const streamed = await provider().complete({ ...ask, stream });
    expect(JSON.stringify(streamed)).toBe(JSON.stringify(plain));
    expect(stream.seen).toEqual(['Bonjour ', 'tout ', 'le ', 'monde']);
    expect(decodeURIComponent(server.requests[1]?.path ?? '')).toBe(`/model/${MODEL}/converse-stream`);
    expect(server.requests[1]?.body).toEqual(server.requests[0]?.body);
  });

  it('puts toolUse blocks back together from their input pieces', async () => {
    const reply = converseToolUse(
      [
        { toolUseId: 'tu_1', name: 'add', input: { a: 2, b: 3 } },
        { toolUseId: 'tu_2', name: 'log', input: { line: 'adding' } },
      ],
      'Let me add.',
    );
    server.reply(reply);
    const plain = await provider().complete(ask);
    server.reply(reply);
    const stream = recorder();
    const streamed = await provider().complete({ ...ask, stream });
    expect(JSON.stringify(streamed)).toBe(JSON.stringify(plain));
    expect(streamed.message.toolCalls).toEqual([
      { id: 'tu_1', name: 'add', arguments: { a: 2, b: 3 } },
      { id: 'tu_2', name: 'log', arguments: { line: 'adding' } },
    ]);
    expect(stream.seen).toEqual(['Let ', 'me ', 'add.']);
  });

  it('retries a throttling exception sent mid-stream, telling the watcher the reply starts over', async () => {
    server.reply(
      {
        stream: [
          { messageStart: { role: 'assistant' } },
          { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'Half ' } } },
          { throttlingException: { message: 'slow down' } },
        ],
      },
      converseText('Whole reply'),
    );
    const stream = recorder();
    const response = await provider().complete({ ...ask, stream });
    expect(response.message.content).toBe('Whole reply');
    expect(stream.seen).toEqual(['Half ', '<restart>', 'Whole ', 'reply']);
  });
});

describe('ConverseStreamAssembler', () => {
  it('orders blocks by index and keeps the metadata usage', () => {
    const assembler = new ConverseStreamAssembler();
    assembler.add({
      contentBlockStart: { contentBlockIndex: 1, start: { toolUse: { toolUseId: 't', name: 'f' } } },
    });
    assembler.add({ contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: '{"x":' } } } });
    expect(assembler.add({ contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'Hi' } } })).toBe('Hi');
    assembler.add({ contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: '1}' } } } });
    assembler.add({
      metadata: { usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 }, metrics: undefined },
    });
    expect(assembler.message()).toEqual({
      role: 'assistant',
      content: [{ text: 'Hi' }, { toolUse: { toolUseId: 't', name: 'f', input: { x: 1 } } }],
    });
    expect(assembler.usage()).toMatchObject({ inputTokens: 3, outputTokens: 2 });
  });
});
