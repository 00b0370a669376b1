import { describe, expect, it } from 'vitest';
import { countCall, NO_CALLS } from '../../../functions/llm/provider.ts';
import {
  createScriptedProvider,
  followingPrompt,
  pickScriptedResponse,
} from '../../../functions/llm/scripted.ts';

describe('scripted provider', () => {
  const profile = { provider: 'scripted' as const, responses: ['r0', 'r1'], byNode: { n: ['n0'] } };

  it('uses byNode[N][i] while it lasts, then responses[j mod len] over all calls of the thread', () => {
    let calls = NO_CALLS;
    const picks: unknown[] = [];
    for (const nodeId of ['n', 'm', 'n', 'm', 'm']) {
      picks.push(pickScriptedResponse(profile, { nodeId, calls }));
      calls = countCall(calls, nodeId);
    }
    expect(picks).toEqual(['n0', 'r1', 'r0', 'r1', 'r0']);
    expect(calls).toEqual({ total: 5, byNode: { n: 2, m: 3 } });
  });

  it('fails with a coded error when the script has nothing for a call', async () => {
    const provider = createScriptedProvider({ provider: 'scripted', byNode: { n: ['only'] } });
    await expect(provider.complete({ nodeId: 'x', messages: [], calls: NO_CALLS })).rejects.toMatchObject({
      code: 'LLM_PROVIDER_ERROR',
    });
  });

  it('waits delayMs, and an abort ends the wait at once', async () => {
    const provider = createScriptedProvider({
      provider: 'scripted',
      responses: [{ content: 'hi' }],
      delayMs: 10_000,
    });
    const controller = new AbortController();
    const started = Date.now();
    const call = provider.complete({ nodeId: 'n', messages: [], calls: NO_CALLS, signal: controller.signal });
    controller.abort(new Error('run ended'));
    await expect(call).rejects.toThrow('run ended');
    // Well under the 10 s wait it cut short, whatever the machine's load.
    expect(Date.now() - started).toBeLessThan(8000);
    const quick = createScriptedProvider({
      provider: 'scripted',
      responses: [{ content: 'hi' }],
      delayMs: 1,
    });
    expect((await quick.complete({ nodeId: 'n', messages: [], calls: NO_CALLS })).message).toEqual({
      role: 'assistant',
      content: 'hi',
    });
  });
});

describe('scripted tool-call replies', () => {
  it('turns {content?, toolCalls} entries into assistant tool calls with deterministic ids', async () => {
    const provider = createScriptedProvider({
      provider: 'scripted',
      responses: [
        { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }, { name: 'now' }] },
        { content: 'with id', toolCalls: [{ id: 'mine', name: 'lookup', arguments: {} }] },
      ],
    });
    const first = await provider.complete({ nodeId: 'n', messages: [], calls: { total: 4, byNode: {} } });
    expect(first.message).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'scripted_4_0', name: 'lookup', arguments: { q: 'x' } },
        { id: 'scripted_4_1', name: 'now', arguments: {} },
      ],
    });
    const again = await provider.complete({ nodeId: 'm', messages: [], calls: { total: 4, byNode: {} } });
    expect(again.message).toEqual(first.message);
    const second = await provider.complete({ nodeId: 'n', messages: [], calls: { total: 5, byNode: {} } });
    expect(second.message.toolCalls).toEqual([{ id: 'mine', name: 'lookup', arguments: {} }]);
    expect(second.message.content).toBe('with id');
  });

  it('a byPrompt entry answers the first case the prompt (the last user message) contains, else otherwise', async () => {
    const entry = {
      byPrompt: [
        { contains: 'granted: 0 EUR', reply: 'No credit.' },
        { contains: 'granted:', reply: { content: 'Credit.' } },
      ],
      otherwise: 'Nothing to say.',
    };
    const asked = (prompt: string) => [
      { role: 'user' as const, content: 'granted: 0 EUR (an earlier message)' },
      { role: 'assistant' as const, content: 'ok' },
      { role: 'user' as const, content: prompt },
    ];
    expect(followingPrompt(entry, asked('Credit granted: 0 EUR.'))).toBe('No credit.');
    expect(followingPrompt(entry, asked('Credit granted: 6 EUR.'))).toEqual({ content: 'Credit.' });
    expect(followingPrompt(entry, asked('Nothing granted.'))).toBe('Nothing to say.');
    expect(followingPrompt('plain', asked('x'))).toBe('plain');

    const provider = createScriptedProvider({ provider: 'scripted', byNode: { n: [entry] } });
    const reply = await provider.complete({
      nodeId: 'n',
      messages: asked('Credit granted: 6 EUR.'),
      calls: NO_CALLS,
    });
    expect(reply.message).toEqual({ role: 'assistant', content: 'Credit.' });
  });

  it('a byPrompt entry with no matching case and no otherwise has no response for the call', async () => {
    const provider = createScriptedProvider({
      provider: 'scripted',
      responses: [{ byPrompt: [{ contains: 'yes', reply: 'Yes.' }] }],
    });
    await expect(
      provider.complete({ nodeId: 'n', messages: [{ role: 'user', content: 'no' }], calls: NO_CALLS }),
    ).rejects.toMatchObject({ code: 'LLM_PROVIDER_ERROR' });
  });
});

describe('scripted streamChunkMs', () => {
  it('hands a watcher the reply a word at a time, each after the wait, and returns the same message', async () => {
    const waits: string[] = [];
    const profile = {
      provider: 'scripted' as const,
      responses: ['Hello  streaming\nworld'],
      streamChunkMs: 1,
    };
    const plain = await createScriptedProvider({
      provider: 'scripted',
      responses: profile.responses,
    }).complete({ nodeId: 'n', messages: [], calls: NO_CALLS });
    const streamed = await createScriptedProvider(profile).complete({
      nodeId: 'n',
      messages: [],
      calls: NO_CALLS,
      stream: { text: (delta) => waits.push(delta), restart: () => waits.push('<restart>') },
    });
    expect(streamed).toEqual(plain);
    expect(waits).toEqual(['Hello  ', 'streaming\n', 'world']);
    expect(waits.join('')).toBe('Hello  streaming\nworld');
  });

  it('streams the text of a reply that asks for tools, and nothing of an empty one', async () => {
    const seen: string[] = [];
    const provider = createScriptedProvider({
      provider: 'scripted',
      responses: [{ content: 'Let me add.', toolCalls: [{ name: 'add' }] }, ''],
      streamChunkMs: 0,
    });
    const stream = { text: (delta: string) => seen.push(delta), restart: () => {} };
    await provider.complete({ nodeId: 'n', messages: [], calls: NO_CALLS, stream });
    await provider.complete({ nodeId: 'n', messages: [], calls: countCall(NO_CALLS, 'n'), stream });
    expect(seen).toEqual(['Let ', 'me ', 'add.']);
  });
});
