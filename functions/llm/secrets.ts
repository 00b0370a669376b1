/**
 * API keys for the openai provider. Workflow files only *name* where a key lives; the key itself is
 * read at call time from the environment (locally, or a Lambda's own environment), Secrets Manager
 * or SSM Parameter Store (on AWS), and never written to state, events or logs.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { StepthreadError } from '../../engine/errors.ts';
import type { Profile } from '../../engine/model/schema.ts';

export type OpenAiProfile = Extract<Profile, { provider: 'openai' }>;
type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';

/** Where a profile's key comes from; `none` = send no key (a local server that needs none). */
export type ApiKeySource =
  | { readonly kind: 'env'; readonly name: string }
  | { readonly kind: 'secretsManager'; readonly secretId: string }
  | { readonly kind: 'ssm'; readonly parameter: string }
  | { readonly kind: 'none' };

/**
 * The source of a profile's key, in this order:
 * 1. `apiKeyEnv`, when that variable is set (a local override of the AWS sources);
 * 2. `apiKeySecret` (Secrets Manager), then `apiKeySsmParameter` (SSM);
 * 3. `apiKeyEnv` named but unset: missing;
 * 4. a `baseUrl` with nothing named: no key. OPENAI_API_KEY is deliberately not sent to a
 *    server other than OpenAI's (an Ollama or vLLM box should never see it);
 * 5. otherwise OPENAI_API_KEY.
 */
export function apiKeySource(profile: OpenAiProfile, env: Env): ApiKeySource {
  const named = profile.apiKeyEnv;
  if (named !== undefined && nonEmpty(env[named])) return { kind: 'env', name: named };
  if (profile.apiKeySecret !== undefined) return { kind: 'secretsManager', secretId: profile.apiKeySecret };
  if (profile.apiKeySsmParameter !== undefined) return { kind: 'ssm', parameter: profile.apiKeySsmParameter };
  if (named !== undefined) return { kind: 'env', name: named };
  if (profile.baseUrl !== undefined) return { kind: 'none' };
  return { kind: 'env', name: DEFAULT_API_KEY_ENV };
}

/** Reads secret values; the default reads AWS through the SDK, tests may pass their own. */
export interface SecretReader {
  secretString(secretId: string): Promise<string | undefined>;
  /** A parameter's value, decrypted when it is a SecureString. */
  parameterValue(name: string): Promise<string | undefined>;
}

// The SDK clients load on first use: most LLM calls name no secret, and init time is cold-start time.
let secretsManagerSdk: Promise<typeof import('@aws-sdk/client-secrets-manager')> | undefined;
let ssmSdk: Promise<typeof import('@aws-sdk/client-ssm')> | undefined;
let defaultSecretsManager: SecretsManagerClient | undefined;
let defaultSsm: SSMClient | undefined;

/** A reader over the given clients, or (default) clients built from the environment once per container. */
export function awsSecretReader(clients?: {
  secretsManager: SecretsManagerClient;
  ssm: SSMClient;
}): SecretReader {
  return {
    async secretString(secretId) {
      secretsManagerSdk ??= import('@aws-sdk/client-secrets-manager');
      const { GetSecretValueCommand, SecretsManagerClient } = await secretsManagerSdk;
      defaultSecretsManager ??= clients ? undefined : new SecretsManagerClient({});
      const client = clients?.secretsManager ?? defaultSecretsManager!;
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      return out.SecretString;
    },
    async parameterValue(name) {
      ssmSdk ??= import('@aws-sdk/client-ssm');
      const { GetParameterCommand, SSMClient } = await ssmSdk;
      defaultSsm ??= clients ? undefined : new SSMClient({});
      const client = clients?.ssm ?? defaultSsm!;
      const out = await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
      return out.Parameter?.Value;
    },
  };
}

/** Keys fetched from AWS, per container: a warm Lambda reads each secret once. */
export class ApiKeyCache {
  readonly #entries = new Map<string, Promise<string>>();

  get(key: string, load: () => Promise<string>): Promise<string> {
    const cached = this.#entries.get(key);
    if (cached) return cached;
    const loading = load();
    this.#entries.set(key, loading);
    // A failed read is not remembered: the next call tries again.
    loading.catch(() => this.#entries.delete(key));
    return loading;
  }

  /** Drops a key (after the server rejected it), so a rotated secret is read again. */
  forget(key: string): void {
    this.#entries.delete(key);
  }
}

const sharedCache = new ApiKeyCache();

export interface ResolveApiKeyOptions {
  readonly reader?: SecretReader;
  readonly cache?: ApiKeyCache;
}

/** The cache key of a source, or undefined for sources that are not cached (env, none). */
export function cacheKeyOf(source: ApiKeySource): string | undefined {
  if (source.kind === 'secretsManager') return `secretsmanager:${source.secretId}`;
  if (source.kind === 'ssm') return `ssm:${source.parameter}`;
  return undefined;
}

/**
 * The API key of a profile, or undefined when the profile needs none. A key that should exist but
 * cannot be found or read is LLM_MISSING_API_KEY, with a message naming where it was looked for.
 */
export async function resolveApiKey(
  profile: OpenAiProfile,
  env: Env,
  options: ResolveApiKeyOptions = {},
): Promise<string | undefined> {
  const source = apiKeySource(profile, env);
  const cache = options.cache ?? sharedCache;
  switch (source.kind) {
    case 'none':
      return undefined;
    case 'env': {
      const value = env[source.name];
      if (nonEmpty(value)) return value.trim();
      throw new StepthreadError(
        'LLM_MISSING_API_KEY',
        `the openai profile (model ${profile.model}) needs an API key in the environment variable ${source.name}, which is not set`,
      );
    }
    case 'secretsManager': {
      const reader = options.reader ?? awsSecretReader();
      const where = `Secrets Manager secret "${source.secretId}"`;
      return cache.get(cacheKeyOf(source)!, async () =>
        keyFromSecretString(await readOrExplain(where, () => reader.secretString(source.secretId)), where),
      );
    }
    case 'ssm': {
      const reader = options.reader ?? awsSecretReader();
      const where = `SSM parameter "${source.parameter}"`;
      return cache.get(cacheKeyOf(source)!, async () => {
        const value = await readOrExplain(where, () => reader.parameterValue(source.parameter));
        if (!nonEmpty(value)) throw missing(`${where} is empty`);
        return value.trim();
      });
    }
  }
}

/** Forgets the cached key of a profile (call after the server answered 401/403 with it). */
export function forgetApiKey(profile: OpenAiProfile, env: Env, cache: ApiKeyCache = sharedCache): void {
  const key = cacheKeyOf(apiKeySource(profile, env));
  if (key !== undefined) cache.forget(key);
}

/** A secret holds the key itself, or JSON with an `apiKey` field (the usual Secrets Manager key/value form). */
function keyFromSecretString(value: string | undefined, where: string): string {
  if (!nonEmpty(value)) throw missing(`${where} has no string value`);
  const text = value.trim();
  if (!text.startsWith('{')) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  const field = (parsed as { apiKey?: unknown }).apiKey;
  if (typeof field === 'string' && nonEmpty(field)) return field.trim();
  throw missing(`${where} is JSON without a string "apiKey" field`);
}

async function readOrExplain(
  where: string,
  read: () => Promise<string | undefined>,
): Promise<string | undefined> {
  try {
    return await read();
  } catch (error) {
    // SDK errors name the secret and the reason, never its value.
    const name = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    throw missing(`could not read the API key from ${where}: ${name}: ${message}`);
  }
}

function missing(message: string): StepthreadError {
  return new StepthreadError('LLM_MISSING_API_KEY', message);
}

function nonEmpty(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}
