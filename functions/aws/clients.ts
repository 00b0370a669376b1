/**
 * Clients for the three places stepthread runs: the embedded local services (dynalite + s3rver), an
 * AWS-compatible endpoint (LocalStack) and AWS itself. Only endpoint and credentials differ
 * (target.ts), and on the embedded target the DynamoDB and S3 clients are wire clients
 * (wire-clients.ts: the same commands, without the SDK's per-request work); the store code above
 * them is the same. This module loads every client it
 * offers, so the CLI, the local runtime and tests use it; Lambda handlers use lambda-clients.ts, which
 * loads S3 and Step Functions only when a handler first needs them.
 */
import { SFNClient } from '@aws-sdk/client-sfn';
import { cachedClients } from './client-cache.ts';
import { createDocumentClient, type DocumentClient } from './dynamo-client.ts';
import { createS3Client, type ObjectClient } from './s3-client.ts';
import {
  type AwsTarget,
  clientCacheKey,
  clientConfig,
  type ResourceNames,
  resolveResourceNames,
} from './target.ts';
import { createWireDocumentClient, createWireS3Client } from './wire-clients.ts';

export { releaseAwsClients } from './client-cache.ts';
export { createS3Client } from './s3-client.ts';
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
  readonly dynamo: DocumentClient;
  readonly s3: ObjectClient;
  readonly sfn: SFNClient;
  readonly tableName: string;
  readonly bucketName: string;
  /** The stack's event bus, when the names gave one (ResourceNames.eventBusName). */
  readonly eventBusName?: string;
}

/**
 * Clients for a target, cached at module level so a warm Lambda (or a long local run) reuses
 * connections instead of paying client construction and TLS setup per invocation.
 */
export function createAwsClients(
  target: AwsTarget,
  names: ResourceNames = resolveResourceNames(process.env),
): AwsClients {
  return cachedClients(
    clientCacheKey(target, names),
    () => ({
      target,
      dynamo:
        target.kind === 'embedded'
          ? createWireDocumentClient(target.dynamoEndpoint)
          : createDocumentClient(target),
      s3: target.kind === 'embedded' ? createWireS3Client(target.s3Endpoint) : createS3Client(target),
      sfn: new SFNClient(clientConfig(target, 'sfn')),
      ...names,
    }),
    destroyClients,
  );
}

export function destroyClients(clients: AwsClients): void {
  clients.dynamo.destroy();
  clients.s3.destroy();
  clients.sfn.destroy();
}
