import { describe, expect, it } from 'vitest';
import type { Message } from '../../../engine/model/schema.ts';
import { pairToolMessages, toConverseParameters, toOpenAiMessages } from '../../../functions/llm/wire.ts';

describe('pairToolMessages', () => {
  it('drops calls that lost their result and turns results that lost their call into user text', () => {
    // As a truncate or filter can leave a conversation.
    const messages: Message[] = [
      { role: 'tool', content: '42', toolCallId: 'gone', name: 'calc' },
      {
        role: 'assistant',
        content: 'checking',
        toolCalls: [
          { id: 'a', name: 'calc', arguments: {} },
          { id: 'b', name: 'calc', arguments: {} },
        ],
      },
      { role: 'tool', content: 'A', toolCallId: 'a' },
      { role: 'tool', content: 'A again', toolCallId: 'a' },
      { role: 'assistant', content: 'x', toolCalls: [{ id: 'c', name: 'calc', arguments: {} }] },
      { role: 'user', content: 'next' },
    ];
    expect(pairToolMessages(messages)).toEqual([
      { role: 'user', content: 'Result of tool calc: 42' },
      { role: 'assistant', content: 'checking', toolCalls: [{ id: 'a', name: 'calc', arguments: {} }] },
      { role: 'tool', content: 'A', toolCallId: 'a' },
      { role: 'user', content: 'Result of a tool: A again' },
      { role: 'assistant', content: 'x' },
      { role: 'user', content: 'next' },
    ]);
  });

  it('leaves a well-formed conversation as it is', () => {
    const messages: Message[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 't', arguments: { x: 1 } }] },
      { role: 'tool', content: 'r', toolCallId: 'a' },
      { role: 'assistant', content: 'answer' },
    ];
    expect(pairToolMessages(messages)).toEqual(messages);
  });
});

describe('toOpenAiMessages', () => {
  it('sends unparsed arguments back verbatim and drops names the API would reject', () => {
    expect(
      toOpenAiMessages([
        { role: 'user', content: 'hi', name: 'not valid!' },
        { role: 'assistant', content: 'ok', toolCalls: [{ id: 'a', name: 't', arguments: '{broken' }] },
        { role: 'tool', content: 'Error', toolCallId: 'a' },
      ]),
    ).toEqual([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: 'ok',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 't', arguments: '{broken' } }],
      },
      { role: 'tool', tool_call_id: 'a', content: 'Error' },
    ]);
  });
});

describe('toConverseParameters', () => {
  it('maps common parameters (also by their OpenAI names) to inferenceConfig, the rest to the model', () => {
    expect(
      toConverseParameters({ max_tokens: 10, top_p: 0.9, stop: 'END', temperature: 0.5, top_k: 40 }),
    ).toEqual({
      inferenceConfig: { maxTokens: 10, topP: 0.9, stopSequences: ['END'], temperature: 0.5 },
      additionalModelRequestFields: { top_k: 40 },
    });
    expect(toConverseParameters({})).toEqual({});
  });
});
