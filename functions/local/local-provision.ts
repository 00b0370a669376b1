/**
 * The embedded stores' table and bucket, created when absent — what functions/aws/provision.ts does
 * through the SDK, without it: the store server loaded the DynamoDB and S3 clients (about a quarter
 * of its bundle) for these few requests alone, at every start, while a command waited for it.
 *
 * The table goes through dynalite's own HTTP API (functions/aws/wire-http.ts: a DynamoDB JSON request
 * is the SDK command's input as JSON), so dynalite validates and creates it exactly as before. The
 * bucket goes to s3rver's store, after the name check its CreateBucket makes.
 */
import { dynamoOperation } from '../aws/wire-http.ts';
import { tableDefinition } from '../stores/table.ts';

/** One DynamoDB JSON request to dynalite at `endpoint` (`http://127.0.0.1:port`), on a fresh connection. */
function dynamoRequest(endpoint: string, operation: string, input: object): Promise<Record<string, unknown>> {
  return dynamoOperation(new URL(endpoint), false, operation, input as Record<string, unknown>);
}

async function tableStatus(endpoint: string, tableName: string): Promise<string | undefined> {
  try {
    const { Table } = await dynamoRequest(endpoint, 'DescribeTable', { TableName: tableName });
    return String((Table as { TableStatus?: unknown } | undefined)?.TableStatus);
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return undefined;
    throw error;
  }
}

/** Creates the table in dynalite at `endpoint` when absent; returns once it is ACTIVE. */
export async function ensureLocalTable(endpoint: string, tableName: string): Promise<void> {
  let status = await tableStatus(endpoint, tableName);
  if (status === 'ACTIVE') return;
  if (status === undefined) {
    try {
      await dynamoRequest(endpoint, 'CreateTable', tableDefinition(tableName));
    } catch (error) {
      // Another starter won the race.
      if ((error as Error).name !== 'ResourceInUseException') throw error;
    }
  }
  // A table is usable once ACTIVE; dynalite flips it asynchronously even with createTableMs 0.
  for (let attempt = 0; attempt < 100; attempt += 1) {
    status = await tableStatus(endpoint, tableName);
    if (status === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The part of s3rver's store the bucket needs. */
export interface BucketStore {
  getBucket(bucket: string): Promise<unknown>;
  putBucket(bucket: string): Promise<unknown>;
}

/** Creates the bucket in s3rver's `store` when absent, refusing the names its CreateBucket refuses. */
export async function ensureLocalBucket(store: BucketStore, bucketName: string): Promise<void> {
  if (!/^[a-z0-9]+(.?[-a-z0-9]+)*$/.test(bucketName) || bucketName.length < 3 || bucketName.length > 63) {
    const error = new Error(
      `bucket name ${JSON.stringify(bucketName)} is invalid: 3 to 63 characters, lowercase letters, numbers, hyphens and dots, each label starting and ending with a letter or number`,
    );
    error.name = 'InvalidBucketName';
    throw error;
  }
  if ((await store.getBucket(bucketName)) === null) await store.putBucket(bucketName);
}
