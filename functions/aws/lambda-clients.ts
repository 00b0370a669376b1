/**
 * Clients for a deployed Lambda, cached per container. DynamoDB is built at init (every handler
 * commits its step there); S3 is imported on first use, so a handler that never touches a
 * conversation (VARIABLE, ROUTE, ...) never pays for loading it.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from './dynamo-client.ts';
import { type AwsTarget, clientCacheKey, clientConfig, type ResourceNames } from './target.ts';

export interface LambdaClients {
  readonly target: AwsTarget;
  readonly dynamo: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly bucketName: string;
  /** The S3 client, loaded and built on the first call (later calls share it). */
  s3(): Promise<S3Client>;
}

function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make().catch((error: unknown) => {
      // A failed load (e.g. a transient import error) must not poison the container for good.
      made = undefined;
      throw error;
    });
    return made;
  };
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
    s3: once(async () => {
      const { S3Client } = await import('@aws-sdk/client-s3');
      return new S3Client(clientConfig(target, 's3'));
    }),
  };
  cache.set(key, clients);
  return clients;
}
