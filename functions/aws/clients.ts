/**
 * AWS SDK clients for the three places stepthread runs: the embedded local services (dynalite +
 * s3rver), an AWS-compatible endpoint (LocalStack) and AWS itself. Only endpoint and credentials
 * differ; the store code above them is the same.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type AwsTarget =
  | { readonly kind: 'embedded'; readonly dynamoEndpoint: string; readonly s3Endpoint: string }
  | { readonly kind: 'endpoint'; readonly endpoint: string }
  | { readonly kind: 'aws' };

export interface AwsClients {
  readonly target: AwsTarget;
  readonly dynamo: DynamoDBDocumentClient;
  readonly s3: S3Client;
  readonly sfn: SFNClient;
  readonly tableName: string;
  readonly bucketName: string;
}

export interface ResourceNames {
  readonly tableName: string;
  readonly bucketName: string;
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

// The emulators accept any signature; S3rver only accepts its own fixed key pair.
const EMBEDDED_CREDENTIALS = { accessKeyId: 'stepthread-local', secretAccessKey: 'stepthread-local' };
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const LOCALSTACK_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

const cache = new Map<string, AwsClients>();

/**
 * Clients for a target, cached at module level so a warm Lambda (or a long local run) reuses
 * connections instead of paying client construction and TLS setup per invocation.
 */
export function createAwsClients(
  target: AwsTarget,
  names: ResourceNames = resolveResourceNames(process.env),
): AwsClients {
  const key = JSON.stringify([target, names.tableName, names.bucketName]);
  const cached = cache.get(key);
  if (cached) return cached;
  const clients = buildClients(target, names);
  cache.set(key, clients);
  return clients;
}

/** Destroys every cached client (closing their sockets); used when local services shut down. */
export function clearAwsClientCache(): void {
  for (const clients of cache.values()) destroyClients(clients);
  cache.clear();
}

/** Destroys and forgets the cached clients of one target (its endpoints are going away). */
export function releaseAwsClients(target: AwsTarget): void {
  const prefix = JSON.stringify([target]).slice(0, -1);
  for (const [key, clients] of cache) {
    if (!key.startsWith(`${prefix},`)) continue;
    destroyClients(clients);
    cache.delete(key);
  }
}

export function destroyClients(clients: AwsClients): void {
  clients.dynamo.destroy();
  clients.s3.destroy();
  clients.sfn.destroy();
}

function buildClients(target: AwsTarget, names: ResourceNames): AwsClients {
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  switch (target.kind) {
    case 'embedded': {
      if (!target.dynamoEndpoint || !target.s3Endpoint) {
        throw new Error('embedded target needs the endpoints returned by startLocalServices');
      }
      const dynamo = new DynamoDBClient({
        endpoint: target.dynamoEndpoint,
        region,
        credentials: EMBEDDED_CREDENTIALS,
      });
      const s3 = new S3Client({
        endpoint: target.s3Endpoint,
        region,
        credentials: S3RVER_CREDENTIALS,
        forcePathStyle: true,
        // Otherwise the SDK sends aws-chunked bodies with trailing checksums, and s3rver stores
        // the chunk framing as part of the object.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
      // There is no embedded Step Functions service: the local runner executes ASL in-process.
      const sfn = new SFNClient({ region, credentials: EMBEDDED_CREDENTIALS });
      return { target, dynamo: documentClient(dynamo), s3, sfn, ...names };
    }
    case 'endpoint': {
      const common = {
        endpoint: target.endpoint,
        region,
        credentials: hasEnvCredentials() ? undefined : LOCALSTACK_CREDENTIALS,
      };
      return {
        target,
        dynamo: documentClient(new DynamoDBClient(common)),
        s3: new S3Client({ ...common, forcePathStyle: true }),
        sfn: new SFNClient(common),
        ...names,
      };
    }
    case 'aws':
      return {
        target,
        dynamo: documentClient(new DynamoDBClient({})),
        s3: new S3Client({}),
        sfn: new SFNClient({}),
        ...names,
      };
  }
}

function hasEnvCredentials(): boolean {
  return Boolean(process.env.AWS_ACCESS_KEY_ID && process.env.AWS_SECRET_ACCESS_KEY);
}

function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    unmarshallOptions: { wrapNumbers: false },
  });
}
