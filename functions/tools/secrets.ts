/**
 * Secrets for `{{secrets.NAME}}` in http tools: environment variables locally, Secrets Manager on
 * AWS. Values are only ever placed in outgoing requests; the executor's Redactor
 * (functions/redaction) scrubs them, in every encoding, from whatever a call produced before it is
 * returned, stored or logged.
 */
import type { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import type { SecretResolver } from './types.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** `secrets.NAME` is the environment variable NAME (the embedded runtime). */
export function envSecrets(env: Env): SecretResolver {
  return {
    async resolve(name) {
      const value = env[name];
      return value === undefined || value === '' ? undefined : value;
    },
  };
}

/** The one call of SecretsManagerClient used here, so tests can pass a stub. */
export interface SecretsManagerLike {
  send(
    command: GetSecretValueCommand,
    options?: { abortSignal?: AbortSignal },
  ): Promise<{ SecretString?: string }>;
}

export interface SecretsManagerOptions {
  /** Prepended to the name to form the SecretId, e.g. `stepthread/`. */
  prefix?: string;
  /** How long a value is reused in a warm Lambda; default 5 minutes. */
  ttlMs?: number;
  /** Clock for the cache (injectable for tests). */
  now?: () => number;
}

const NOT_FOUND = 'ResourceNotFoundException';

/** `secrets.NAME` is the Secrets Manager secret `<prefix>NAME` (its SecretString), cached per TTL. */
export function secretsManagerSecrets(
  client: SecretsManagerLike,
  options: SecretsManagerOptions = {},
): SecretResolver {
  const { prefix = '', ttlMs = 300_000, now = Date.now } = options;
  const cache = new Map<string, { value: string | undefined; expires: number }>();
  return {
    async resolve(name, signal) {
      const hit = cache.get(name);
      if (hit && hit.expires > now()) return hit.value;
      let value: string | undefined;
      // Loaded on the first secret read: a TOOL or LLM Lambda whose tools use none never loads it.
      const { GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
      try {
        const response = await client.send(
          new GetSecretValueCommand({ SecretId: `${prefix}${name}` }),
          signal ? { abortSignal: signal } : {},
        );
        value = response.SecretString;
      } catch (error) {
        if ((error as { name?: unknown }).name !== NOT_FOUND) throw error;
      }
      cache.set(name, { value, expires: now() + ttlMs });
      return value;
    },
  };
}
