/**
 * A profile or tool written as a newcomer writes it is refused by validation with what to write: a
 * `baseUrl` without its scheme (which failed every model call of the run, after retries, as "could not
 * connect … at :"), a provider named after the product that serves it, and a required field left out
 * of a union (a profile's `provider`, a tool's `handler`, a node's `type`) said to be missing.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function withProfile(profile: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    id: 'chat',
    version: 1,
    profiles: { default: profile },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'ask', type: 'LLM', config: { prompt: 'hi' } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'end' },
    ],
    ...extra,
  };
}

const messages = (workflow: unknown) =>
  validateWorkflow(workflow).errors.map(({ code, path, message }) => ({ code, path, message }));

describe('an openai profile’s baseUrl', () => {
  it('must be an http(s) URL; one without its scheme says which URL it most likely meant', () => {
    expect(
      messages(withProfile({ provider: 'openai', model: 'llama3.1', baseUrl: 'localhost:11434/v1' })),
    ).toEqual([
      {
        code: 'SCHEMA_INVALID',
        path: 'profiles.default.baseUrl',
        message:
          'profiles.default.baseUrl: baseUrl must be an http:// or https:// URL such as "http://localhost:11434/v1", got "localhost:11434/v1"; did you mean "http://localhost:11434/v1"?',
      },
    ]);
    expect(
      messages(withProfile({ provider: 'openai', model: 'm', baseUrl: 'ftp://models.example/v1' })),
    ).toEqual([
      {
        code: 'SCHEMA_INVALID',
        path: 'profiles.default.baseUrl',
        message:
          'profiles.default.baseUrl: baseUrl must be an http:// or https:// URL such as "http://localhost:11434/v1", got "ftp://models.example/v1"',
      },
    ]);
    for (const baseUrl of [
      'http://localhost:11434/v1',
      'https://api.example.com/openai/v1',
      'http://[::1]:8000/v1',
    ])
      expect(messages(withProfile({ provider: 'openai', model: 'm', baseUrl })), baseUrl).toEqual([]);
  });
});

describe('an API key written into a profile', () => {
  it('is an unknown key that names apiKeyEnv, the variable that holds it', () => {
    expect(messages(withProfile({ provider: 'openai', model: 'm', apiKey: 'sk-…' }))).toEqual([
      {
        code: 'UNKNOWN_KEY',
        path: 'profiles.default.apiKey',
        message: 'profiles.default.apiKey: unknown key "apiKey"; did you mean "apiKeyEnv"?',
      },
    ]);
  });
});

describe('a profile’s provider', () => {
  it('names the value given and the provider meant: its case, or the provider that serves that product', () => {
    const expected = (given: string, meant: string) => [
      {
        code: 'SCHEMA_INVALID',
        path: 'profiles.default.provider',
        message: `profiles.default.provider: Invalid discriminator value. Expected 'scripted' | 'openai' | 'bedrock', got "${given}"; did you mean ${meant}?`,
      },
    ];
    expect(messages(withProfile({ provider: 'OpenAI', model: 'm' }))).toEqual(expected('OpenAI', '"openai"'));
    expect(messages(withProfile({ provider: 'gpt', model: 'm' }))).toEqual(expected('gpt', '"openai"'));
    expect(messages(withProfile({ provider: 'ollama', model: 'm' }))).toEqual(
      expected('ollama', '"openai" (any OpenAI-compatible server, at its "baseUrl")'),
    );
    expect(messages(withProfile({ provider: 'claude', model: 'm' }))).toEqual(
      expected('claude', '"bedrock"'),
    );
  });

  it('left out is required but missing, with the providers', () => {
    expect(messages(withProfile({ model: 'm' }))).toEqual([
      {
        code: 'SCHEMA_INVALID',
        path: 'profiles.default.provider',
        message:
          'profiles.default.provider: required but missing (expected one of "scripted", "openai", "bedrock")',
      },
    ]);
  });
});

describe('a required field of a union left out', () => {
  it("is a tool's handler required but missing, with what a handler is", () => {
    const workflow = withProfile(
      { provider: 'scripted', responses: ['ok'] },
      { tools: { lookup: { description: 'Looks an order up' } } },
    );
    expect(messages(workflow)).toEqual([
      {
        code: 'SCHEMA_INVALID',
        path: 'tools.lookup.handler',
        message:
          'tools.lookup.handler: required but missing (expected string or object): what runs the tool, such as {"kind": "code", "code": "return { … }"}, {"kind": "http", "url": "https://…"} or "builtin:echo"',
      },
    ]);
  });

  it("is a node's type required but missing, with the types", () => {
    const workflow = withProfile({ provider: 'scripted', responses: ['ok'] });
    delete (workflow.nodes[1] as { type?: string }).type;
    expect(validateWorkflow(workflow).errors).toEqual([
      expect.objectContaining({
        code: 'SCHEMA_INVALID',
        path: 'nodes[1].type',
        nodeId: 'ask',
        message: expect.stringMatching(
          /^nodes\[1\]\.type: required but missing \(expected one of "START", "END", .*"SUBGRAPH"\)$/,
        ),
      }),
    ]);
  });
});
