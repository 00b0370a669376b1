/**
 * AWS SDK clients for the three places stepthread runs: the embedded local services (dynalite +
 * s3rver), an AWS-compatible endpoint (LocalStack) and AWS itself. Only endpoint and credentials
 * differ (target.ts); the store code above them is the same. This module loads every client it
 * offers, so the CLI, the local runtime and tests use it; Lambda handlers use lambda-clients.ts, which
 * loads S3 and Step Functions only when a handler first needs them.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from './dynamo-client.ts';
import { forLoopback } from './loopback.ts';
import {
  type AwsTarget,
  clientCacheKey,
  clientConfig,
  type ResourceNames,
  resolveResourceNames,
} from './target.ts';

export {
  type AwsTarget,
  DEFAULT_BUCKET_NAME,
  DEFAULT_TABLE_NAME,
  type ResourceNames,
  resolveAwsTarget,
  resolveResourceNames,
} from './target.ts';

export interface AwsClients {
  readonly target: AwsTarget;
  readonly dynamo: DynamoDBDocumentClient;
  readonly s3: S3Client;
  readonly sfn: SFNClient;
  readonly tableName: string;
  readonly bucketName: string;
}

const cache = new Map<string, AwsClients>();

/**
 * Clients for a target, cached at module level so a warm Lambda (or a long local run) reuses
 * connections instead of paying client construction and TLS setup per invocation.
 */
/** The S3 client of a target (tuned for loopback on the embedded one: loopback.ts). */
export function createS3Client(target: AwsTarget): S3Client {
  const client = new S3Client(clientConfig(target, 's3'));
  return target.kind === 'embedded' ? forLoopback(client) : client;
}

export function createAwsClients(
  target: AwsTarget,
  names: ResourceNames = resolveResourceNames(process.env),
): AwsClients {
  const key = clientCacheKey(target, names);
  const cached = cache.get(key);
  if (cached) return cached;
  const clients: AwsClients = {
    target,
    dynamo: createDocumentClient(target),
    s3: createS3Client(target),
    sfn: new SFNClient(clientConfig(target, 'sfn')),
    ...names,
  };
  cache.set(key, clients);
  return clients;
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
