import type { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../../functions/redaction/redactor.ts';
import { envSecrets, secretsManagerSecrets } from '../../../functions/tools/index.ts';

describe('envSecrets', () => {
  it('reads a secret from the environment; empty counts as unset', async () => {
    const secrets = envSecrets({ A: 'alpha', B: '' });
    expect(await secrets.resolve('A')).toBe('alpha');
    expect(await secrets.resolve('B')).toBeUndefined();
    expect(await secrets.resolve('C')).toBeUndefined();
  });
});

describe('secretsManagerSecrets', () => {
  function stub(values: Record<string, string>) {
    const asked: string[] = [];
    const client = {
      async send(command: GetSecretValueCommand) {
        const id = command.input.SecretId ?? '';
        asked.push(id);
        if (id.endsWith('BROKEN'))
          throw Object.assign(new Error('denied'), { name: 'AccessDeniedException' });
        if (!(id in values)) throw Object.assign(new Error('missing'), { name: 'ResourceNotFoundException' });
        return { SecretString: values[id] };
      },
    };
    return { client, asked };
  }

  it('reads <prefix>NAME and caches it until the TTL passes', async () => {
    const { client, asked } = stub({ 'stepthread/CRM': 'v1' });
    let clock = 0;
    const secrets = secretsManagerSecrets(client, { prefix: 'stepthread/', ttlMs: 100, now: () => clock });
    expect(await secrets.resolve('CRM')).toBe('v1');
    expect(await secrets.resolve('CRM')).toBe('v1');
    expect(asked).toEqual(['stepthread/CRM']);
    clock = 150;
    await secrets.resolve('CRM');
    expect(asked).toEqual(['stepthread/CRM', 'stepthread/CRM']);
  });

  it('gives undefined for a missing secret and rethrows other errors', async () => {
    const { client } = stub({});
    const secrets = secretsManagerSecrets(client);
    expect(await secrets.resolve('NONE')).toBeUndefined();
    await expect(secrets.resolve('BROKEN')).rejects.toThrow('denied');
  });
});

describe('Redactor on tool data', () => {
  it('replaces every secret, plain or URL-encoded, in values and keys', () => {
    const value = { msg: 'token a/b+c and a%2Fb%2Bc', list: ['a/b+c'], 'a/b+c': 1, n: 3, none: null };
    expect(new Redactor(['a/b+c', '']).value(value)).toEqual({
      msg: 'token [REDACTED] and [REDACTED]',
      list: ['[REDACTED]'],
      '[REDACTED]': 1,
      n: 3,
      none: null,
    });
  });

  it('returns the value untouched when there are no secrets', () => {
    const value = { a: 'b' };
    expect(new Redactor([]).value(value)).toBe(value);
  });
});
