/**
 * Clients for a deployed Lambda, cached per container. DynamoDB is built at init (every handler
 * commits its step there); S3 is imported on first use, so a handler that never touches a
 * conversation (VARIABLE, ROUTE, ...) never pays for loading it.
 */
import { createDocumentClient, type DocumentClient } from './dynamo-client.ts';
import { once } from './once.ts';
import type { ObjectClient } from './s3-client.ts';
import { type AwsTarget, clientCacheKey, clientConfig, type ResourceNames } from './target.ts';

export interface LambdaClients {
  readonly target: AwsTarget;
  readonly dynamo: DocumentClient;
  readonly tableName: string;
  readonly bucketName: string;
  /** The S3 client, loaded and built on the first call (later calls share it). */
  s3(): Promise<ObjectClient>;
}

const cache = new Map<string, LambdaClients>();

export function createLambdaClients(target: AwsTarget, names: ResourceNames): LambdaClients {
  const key = clientCacheKey(target, names);
  const cached = cache.get(key);
  if (cached) return cached;
  const clients: LambdaClients = {
    target,
    dynamo: createDocumentClient(target),
    ...names,
    // The SDK package itself is imported here, not through s3-client.ts: a bundler inlines a local
    // module, and its static import of @aws-sdk/client-s3 would then load at init.
    s3: once(async (): Promise<ObjectClient> => {
      const { S3Client } = await import('@aws-sdk/client-s3');
      return new S3Client(clientConfig(target, 's3'));
    }),
  };
  cache.set(key, clients);
  return clients;
}
