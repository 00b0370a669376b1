/**
 * Where stepthread's AWS clients point — the embedded local services (dynalite + s3rver), an
 * AWS-compatible endpoint (LocalStack) or AWS itself — and the settings each client gets there. No SDK
 * imports: a Lambda bundle reads this without loading clients it never constructs.
 */

export type AwsTarget =
  | { readonly kind: 'embedded'; readonly dynamoEndpoint: string; readonly s3Endpoint: string }
  | { readonly kind: 'endpoint'; readonly endpoint: string }
  | { readonly kind: 'aws' };

export interface ResourceNames {
  readonly tableName: string;
  readonly bucketName: string;
  /**
   * The stack's event bus (its `EventBusName` output, or STEPTHREAD_EVENT_BUS): where what the CLI
   * records on a deployed run's threads (a cancel's THREAD_CANCELLED) is published, as the functions
   * publish theirs. Absent: published nowhere (the embedded stores).
   */
  readonly eventBusName?: string;
}

export const DEFAULT_TABLE_NAME = 'stepthread';
export const DEFAULT_BUCKET_NAME = 'stepthread-conversations';

type Env = Readonly<Record<string, string | undefined>>;

/** AWS_ENDPOINT_URL wins (LocalStack), then STEPTHREAD_TARGET=aws; the embedded runtime is the default. */
export function resolveAwsTarget(
  env: Env,
  embedded?: { dynamoEndpoint: string; s3Endpoint: string },
): AwsTarget {
  const endpoint = env.AWS_ENDPOINT_URL?.trim();
  if (endpoint) return { kind: 'endpoint', endpoint };
  if (env.STEPTHREAD_TARGET === 'aws') return { kind: 'aws' };
  if (embedded) return { kind: 'embedded', ...embedded };
  // The embedded endpoints exist only once startLocalServices has run; the caller supplies them.
  return {
    kind: 'embedded',
    dynamoEndpoint: env.STEPTHREAD_DYNAMODB_ENDPOINT ?? '',
    s3Endpoint: env.STEPTHREAD_S3_ENDPOINT ?? '',
  };
}

export function resolveResourceNames(env: Env): ResourceNames {
  return {
    tableName: env.STEPTHREAD_TABLE?.trim() || DEFAULT_TABLE_NAME,
    bucketName: env.STEPTHREAD_BUCKET?.trim() || DEFAULT_BUCKET_NAME,
  };
}

export type AwsService = 'dynamodb' | 's3' | 'sfn' | 'events' | 'cloudformation';

interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The constructor settings of one client; AWS itself needs none (region and role come from Lambda). */
export interface ClientConfig {
  readonly endpoint?: string;
  readonly region?: string;
  readonly credentials?: Credentials;
  readonly forcePathStyle?: boolean;
  readonly requestChecksumCalculation?: 'WHEN_REQUIRED';
  readonly responseChecksumValidation?: 'WHEN_REQUIRED';
}

// The emulators accept any signature; S3rver only accepts its own fixed key pair.
const EMBEDDED_CREDENTIALS: Credentials = {
  accessKeyId: 'stepthread-local',
  secretAccessKey: 'stepthread-local',
};
const S3RVER_CREDENTIALS: Credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const LOCALSTACK_CREDENTIALS: Credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

export function clientConfig(target: AwsTarget, service: AwsService, env: Env = process.env): ClientConfig {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  switch (target.kind) {
    case 'embedded': {
      if (!target.dynamoEndpoint || !target.s3Endpoint) {
        throw new Error('embedded target needs the endpoints returned by startLocalServices');
      }
      if (service === 'dynamodb') {
        return { endpoint: target.dynamoEndpoint, region, credentials: EMBEDDED_CREDENTIALS };
      }
      if (service === 's3') {
        return {
          endpoint: target.s3Endpoint,
          region,
          credentials: S3RVER_CREDENTIALS,
          forcePathStyle: true,
          // Otherwise the SDK sends aws-chunked bodies with trailing checksums, and s3rver stores
          // the chunk framing as part of the object.
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        };
      }
      // There is no embedded Step Functions service: the local runner executes ASL in-process.
      return { region, credentials: EMBEDDED_CREDENTIALS };
    }
    case 'endpoint': {
      const hasEnvCredentials = Boolean(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY);
      return {
        endpoint: target.endpoint,
        region,
        ...(hasEnvCredentials ? {} : { credentials: LOCALSTACK_CREDENTIALS }),
        ...(service === 's3' ? { forcePathStyle: true } : {}),
      };
    }
    case 'aws':
      return {};
  }
}

/** One key per target and resource names, for caching clients per container. */
export function clientCacheKey(target: AwsTarget, names: ResourceNames): string {
  return JSON.stringify([target, names.tableName, names.bucketName, names.eventBusName ?? null]);
}
