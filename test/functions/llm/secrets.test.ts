import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiKeyCache,
  apiKeySource,
  awsSecretReader,
  forgetApiKey,
  type OpenAiProfile,
  resolveApiKey,
} from '../../../functions/llm/secrets.ts';
import { redactErrorText } from '../../../functions/redaction/redactor.ts';
import { type ScriptedServer, startScriptedServer } from './servers/scripted-server.ts';

const base: OpenAiProfile = { provider: 'openai', model: 'm' };

describe('apiKeySource', () => {
  it('prefers a set apiKeyEnv, then Secrets Manager, then SSM; a baseUrl alone needs no key', () => {
    const named = { ...base, apiKeyEnv: 'MY_KEY', apiKeySecret: 'prod/openai', apiKeySsmParameter: '/p/key' };
    expect(apiKeySource(named, { MY_KEY: 'k' })).toEqual({ kind: 'env', name: 'MY_KEY' });
    expect(apiKeySource(named, {})).toEqual({ kind: 'secretsManager', secretId: 'prod/openai' });
    expect(apiKeySource({ ...base, apiKeySsmParameter: '/p/key' }, {})).toEqual({
      kind: 'ssm',
      parameter: '/p/key',
    });
    expect(apiKeySource({ ...base, apiKeyEnv: 'MY_KEY' }, {})).toEqual({ kind: 'env', name: 'MY_KEY' });
    expect(apiKeySource({ ...base, baseUrl: 'http://localhost:11434/v1' }, { OPENAI_API_KEY: 'k' })).toEqual({
      kind: 'none',
    });
    expect(apiKeySource(base, {})).toEqual({ kind: 'env', name: 'OPENAI_API_KEY' });
  });
});

describe('resolveApiKey from the environment', () => {
  it('reads the named variable or OPENAI_API_KEY, and reports a missing one by name', async () => {
    expect(await resolveApiKey(base, { OPENAI_API_KEY: ' sk-1 ' })).toBe('sk-1');
    expect(await resolveApiKey({ ...base, apiKeyEnv: 'K' }, { K: 'sk-2' })).toBe('sk-2');
    expect(await resolveApiKey({ ...base, baseUrl: 'http://127.0.0.1:1/v1' }, {})).toBeUndefined();
    await expect(resolveApiKey({ ...base, apiKeyEnv: 'K' }, { K: '' })).rejects.toMatchObject({
      code: 'LLM_MISSING_API_KEY',
      message: expect.stringContaining('environment variable K'),
    });
  });
});

describe('resolveApiKey from AWS (through the SDK against a local server)', () => {
  let server: ScriptedServer;
  let reader: ReturnType<typeof awsSecretReader>;
  const clientConfig = () => ({
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
  });
  beforeAll(async () => {
    server = await startScriptedServer();
    reader = awsSecretReader({
      secretsManager: new SecretsManagerClient(clientConfig()),
      ssm: new SSMClient(clientConfig()),
    });
  });
  afterAll(() => server.close());
  afterEach(() => {
    server.requests.length = 0;
  });

  it('reads a Secrets Manager secret once per container, and again after forgetApiKey', async () => {
    const cache = new ApiKeyCache();
    const profile = { ...base, apiKeySecret: 'prod/openai' };
    server.reply({ body: { Name: 'prod/openai', SecretString: '{"apiKey":"sk-from-sm"}' } });
    expect(await resolveApiKey(profile, {}, { reader, cache })).toBe('sk-from-sm');
    expect(await resolveApiKey(profile, {}, { reader, cache })).toBe('sk-from-sm');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    expect(server.requests[0]?.body).toEqual({ SecretId: 'prod/openai' });

    forgetApiKey(profile, {}, cache);
    server.reply({ body: { SecretString: 'sk-rotated' } });
    expect(await resolveApiKey(profile, {}, { reader, cache })).toBe('sk-rotated');
    expect(server.requests).toHaveLength(2);
  });

  it('reads an SSM parameter with decryption', async () => {
    server.reply({ body: { Parameter: { Name: '/p/key', Type: 'SecureString', Value: 'sk-from-ssm' } } });
    const key = await resolveApiKey(
      { ...base, apiKeySsmParameter: '/p/key' },
      {},
      { reader, cache: new ApiKeyCache() },
    );
    expect(key).toBe('sk-from-ssm');
    expect(server.requests[0]?.headers['x-amz-target']).toBe('AmazonSSM.GetParameter');
    expect(server.requests[0]?.body).toEqual({ Name: '/p/key', WithDecryption: true });
  });

  it('reports an unreadable secret as LLM_MISSING_API_KEY naming it, and does not cache the failure', async () => {
    const cache = new ApiKeyCache();
    const profile = { ...base, apiKeySecret: 'nope' };
    server.reply({
      status: 400,
      body: {
        __type: 'ResourceNotFoundException',
        message: "Secrets Manager can't find the specified secret.",
      },
    });
    await expect(resolveApiKey(profile, {}, { reader, cache })).rejects.toMatchObject({
      code: 'LLM_MISSING_API_KEY',
      message: expect.stringMatching(/Secrets Manager secret "nope".*ResourceNotFoundException/),
    });
    server.reply({ body: { SecretString: 'sk-now-there' } });
    expect(await resolveApiKey(profile, {}, { reader, cache })).toBe('sk-now-there');
  });

  it('rejects a JSON secret without an apiKey field', async () => {
    server.reply({ body: { SecretString: '{"token":"x"}' } });
    await expect(
      resolveApiKey({ ...base, apiKeySecret: 's' }, {}, { reader, cache: new ApiKeyCache() }),
    ).rejects.toMatchObject({ code: 'LLM_MISSING_API_KEY', message: expect.stringContaining('"apiKey"') });
  });
});

describe('redactErrorText', () => {
  it('removes the given secrets, bearer tokens and key-shaped strings', () => {
    expect(redactErrorText('key=abc123secret!', ['abc123secret'])).toBe('key=[REDACTED]!');
    expect(redactErrorText('Authorization: Bearer abc.def-ghi')).toBe('Authorization: Bearer [REDACTED]');
    expect(redactErrorText('Incorrect API key provided: sk-proj-ab***********yz.')).toBe(
      'Incorrect API key provided: [REDACTED].',
    );
    expect(redactErrorText('nothing secret here')).toBe('nothing secret here');
  });
});
