/**
 * The openai provider with a watcher: it asks for a streamed reply (`stream: true`, usage in the
 * last chunk), hands each piece of text on as it comes, and returns the very message and usage a
 * non-streamed request of the same reply returns, tool calls sent in pieces included.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiProvider } from '../../../functions/llm/openai.ts';
import { ChatStreamAssembler } from '../../../functions/llm/openai-stream.ts';
import { NO_CALLS } from '../../../functions/llm/provider.ts';
import type { OpenAiProfile } from '../../../functions/llm/secrets.ts';
import { chunk, errorReply, textReply, toolCallReply, usageChunk } from './servers/openai-replies.ts';
import { replyRecorder as recorder } from './servers/reply-recorder.ts';
import { type ScriptedServer, startScriptedServer } from './servers/scripted-server.ts';

const KEY = 'sk-test-0123456789abcdefSECRET';
let server: ScriptedServer;

beforeAll(async () => {
  server = await startScriptedServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.requests.length = 0;
});

const profile = (extra: Partial<OpenAiProfile> = {}): OpenAiProfile => ({
  provider: 'openai',
  model: 'gpt-test',
  baseUrl: `${server.url}/v1`,
  ...extra,
});
const provider = (extra: Partial<OpenAiProfile> = {}) =>
  createOpenAiProvider(profile(extra), {
    env: { TEST_KEY: KEY },
    retryEffects: { sleep: async () => {}, random: () => 0 },
  });
const ask = { nodeId: 'n', messages: [{ role: 'user' as const, content: 'hi' }], calls: NO_CALLS };

describe('openai provider: streamed replies', () => {
  it('asks for a stream with usage, hands on each piece, and returns what a plain request returns', async () => {
    const reply = textReply('Streams are lists over time.', { prompt: 12, completion: 6 });
    server.reply(reply);
    const plain = await provider().complete(ask);
    server.reply(reply);
    const stream = recorder();
    const streamed = await provider().complete({ ...ask, stream });

    expect(JSON.stringify(streamed)).toBe(JSON.stringify(plain));
    expect(stream.seen).toEqual(['Streams ', 'are ', 'lists ', 'over ', 'time.']);
    const [first, second] = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(first!.stream).toBeUndefined();
    expect(second).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('puts tool calls sent in pieces (by index, interleaved) back together', async () => {
    const calls = [
      { id: 'call_a', name: 'lookup', arguments: { city: 'Oslo', units: 'metric' } },
      { id: 'call_b', name: 'convert', arguments: { from: 'C', to: 'F' } },
    ];
    server.reply(toolCallReply(calls, { prompt: 30, completion: 9 }, 'Let me look.'));
    const plain = await provider().complete(ask);
    const a = JSON.stringify(calls[0]!.arguments);
    const b = JSON.stringify(calls[1]!.arguments);
    server.reply({
      stream: [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Let me ' }),
        chunk({ content: 'look.' }),
        chunk({
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: a.slice(0, 5) } }] }),
        chunk({
          tool_calls: [
            {
              index: 1,
              id: 'call_b',
              type: 'function',
              function: { name: 'convert', arguments: b.slice(0, 3) },
            },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: a.slice(5) } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: b.slice(3) } }] }),
        chunk({}, 'tool_calls'),
        usageChunk({ prompt: 30, completion: 9 }),
      ],
    });
    const stream = recorder();
    const streamed = await provider().complete({ ...ask, stream });
    expect(JSON.stringify(streamed)).toBe(JSON.stringify(plain));
    expect(streamed.message.toolCalls).toEqual([
      { id: 'call_a', name: 'lookup', arguments: { city: 'Oslo', units: 'metric' } },
      { id: 'call_b', name: 'convert', arguments: { from: 'C', to: 'F' } },
    ]);
    expect(stream.seen).toEqual(['Let me ', 'look.']);
  });

  it('retries a stream cut off mid-reply, telling the watcher the reply starts over', async () => {
    const full = textReply('One two three.', { prompt: 5, completion: 3 });
    const stream = recorder();
    // Cut once the client has read what was sent (else what it never read is simply not shown).
    const read = async () => {
      while (!stream.seen.includes('tw')) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    server.reply(
      {
        stream: [chunk({ content: 'One ' }), chunk({ content: 'tw' })],
        cutAfterChunks: true,
        beforeChunk: async (index) => (index === 2 ? read() : undefined),
      },
      full,
    );
    const response = await provider().complete({ ...ask, stream });
    expect(response.message.content).toBe('One two three.');
    expect(stream.seen).toEqual(['One ', 'tw', '<restart>', 'One ', 'two ', 'three.']);
    expect(server.requests).toHaveLength(2);
  });

  it('reads a whole completion from a server that ignores stream: true, handing its text on at once', async () => {
    const reply = textReply('Not streamed at all.', { prompt: 4, completion: 4 });
    server.reply(reply);
    const plain = await provider().complete(ask);
    server.reply({ ...reply, ignoresStream: true });
    const stream = recorder();
    const streamed = await provider().complete({ ...ask, stream });
    expect(JSON.stringify(streamed)).toBe(JSON.stringify(plain));
    expect(stream.seen).toEqual(['Not streamed at all.']);
  });

  it('fails a streamed request refused by the server as a plain one fails', async () => {
    server.reply(errorReply(400, 'bad model'));
    const stream = recorder();
    await expect(provider().complete({ ...ask, stream })).rejects.toMatchObject({ code: 'LLM_BAD_REQUEST' });
    expect(stream.seen).toEqual([]);
  });

  it('redacts the key from streamed text even when a chunk boundary splits it', async () => {
    const text = `You sent Bearer ${KEY} to me.`;
    const cut = text.indexOf(KEY) + 7;
    server.reply({
      stream: [
        chunk({ content: text.slice(0, cut) }),
        chunk({ content: text.slice(cut) }),
        chunk({}, 'stop'),
      ],
    });
    const stream = recorder();
    const response = await provider({ apiKeyEnv: 'TEST_KEY' }).complete({ ...ask, stream });
    expect(response.message.content).toBe('You sent Bearer [REDACTED] to me.');
    expect(stream.seen.join('')).toBe('You sent Bearer [REDACTED] to me.');
  });
});

describe('ChatStreamAssembler', () => {
  it('reads only the first choice, takes a later id or name over an earlier one, and keeps usage', () => {
    const assembler = new ChatStreamAssembler();
    expect(assembler.add({ choices: [{ index: 0, delta: { content: 'Hi' } }] })).toBe('Hi');
    expect(assembler.add({ choices: [{ index: 1, delta: { content: 'ignored' } }] })).toBe('');
    assembler.add({
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] } }],
    });
    assembler.add({
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: ':1}' } }] },
        },
      ],
    });
    assembler.add({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } });
    expect(assembler.completion()).toEqual({
      choices: [
        {
          message: {
            content: 'Hi',
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    });
  });

  it('gives no choice for a stream that sent none, so the provider reports no reply', () => {
    const assembler = new ChatStreamAssembler();
    assembler.add({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 0 } });
    expect(assembler.completion().choices).toEqual([]);
  });
});
