/**
 * SigV4 for AppSync Events (service `appsync`), as its HTTP publish and realtime WebSocket protocols
 * want it: a POST to `https://<http domain>/event` with the body of the operation (the publish request;
 * `{}` to connect; `{"channel": …}` to subscribe) signed with the caller's IAM credentials, and the
 * signed headers sent with the request, or handed to the WebSocket as its authorization.
 *
 * The signer loads on first use, so a handler that never publishes never loads it.
 */
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Gives the credentials to sign with (called for each signature: a provider may refresh them). */
export type CredentialSource = () => Promise<AwsCredentials>;

type Env = Readonly<Record<string, string | undefined>>;

/** The headers AppSync Events expects to be part of the signature. */
const SIGNED_DEFAULTS = {
  accept: 'application/json, text/javascript',
  'content-encoding': 'amz-1.0',
  'content-type': 'application/json; charset=UTF-8',
} as const;

/**
 * The URL of an Events API endpoint: a domain as the stack outputs it (`…appsync-api.<region>.
 * amazonaws.com`) gets `scheme`; a URL (a stand-in on loopback) is taken as it is.
 */
export function eventsUrl(domainOrUrl: string, scheme: 'https' | 'wss', path: string): URL {
  const trimmed = domainOrUrl.trim().replace(/\/+$/, '');
  const base = trimmed.includes('://') ? trimmed : `${scheme}://${trimmed}`;
  return new URL(`${base}${path}`);
}

/** The region an AppSync domain is in, else the environment's. */
export function eventsRegion(host: string, env: Env): string {
  const named = /\.appsync-(?:api|realtime-api)\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/i.exec(host)?.[1];
  return named ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
}

function bytes(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** SHA-256 (and its HMAC) from node:crypto, in the shape the signer takes. */
export class Sha256 {
  readonly #hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
  reset(): void {
    throw new Error('not resettable');
  }
}

/**
 * The signed headers of a POST of `body` to `httpUrl` (the API's `/event` URL): `host`,
 * `x-amz-date`, `x-amz-security-token` with temporary credentials, `authorization`, and the three
 * AppSync wants signed.
 */
export async function signedEventHeaders(options: {
  readonly httpUrl: URL;
  readonly body: string;
  readonly region: string;
  readonly credentials: AwsCredentials;
}): Promise<Record<string, string>> {
  const { SignatureV4 } = await import('@smithy/signature-v4');
  const signer = new SignatureV4({
    service: 'appsync',
    region: options.region,
    credentials: options.credentials,
    sha256: Sha256,
  });
  const url = options.httpUrl;
  const signed = await signer.sign({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query: {},
    headers: { ...SIGNED_DEFAULTS, host: url.host },
    body: options.body,
  });
  return { ...(signed.headers as Record<string, string>) };
}

/**
 * The caller's credentials: the environment's keys when set (a Lambda's role, or the tests'), else
 * the SDK's default chain (profile, SSO, instance role), loaded on first use.
 */
export function credentialsFrom(env: Env): CredentialSource {
  let chain: Promise<() => Promise<AwsCredentials>> | undefined;
  return async () => {
    const accessKeyId = env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (accessKeyId && secretAccessKey) {
      const sessionToken = env.AWS_SESSION_TOKEN;
      return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
    }
    chain ??= import('@aws-sdk/credential-provider-node').then(({ defaultProvider }) =>
      defaultProvider(env.AWS_PROFILE ? { profile: env.AWS_PROFILE } : {}),
    );
    return (await chain)();
  };
}
