/**
 * The embedded stores' table and bucket, created when absent — what functions/aws/provision.ts does
 * through the SDK, without it: the store server loaded the DynamoDB and S3 clients (about a quarter
 * of its bundle) for these few requests alone, at every start, while a command waited for it.
 *
 * The table goes through dynalite's own HTTP API (a DynamoDB JSON request is the SDK command's input
 * as JSON; dynalite checks the form of a signature, not its value), so dynalite validates and creates
 * it exactly as before. The bucket goes to s3rver's store, after the name check its CreateBucket makes.
 */
import { request } from 'node:http';
import { tableDefinition } from '../stores/table.ts';

/** A DynamoDB API error as dynalite answers it: `name` is the exception's short name, as the SDK's. */
class DynamoApiError extends Error {}

/** One DynamoDB JSON request to dynalite at `endpoint` (`http://127.0.0.1:port`). */
function dynamoRequest(
  endpoint: string,
  operation: string,
  input: unknown,
): Promise<Record<string, unknown>> {
  const body = JSON.stringify(input);
  return new Promise((resolve, reject) => {
    const req = request(
      `${endpoint}/`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'Content-Type': 'application/x-amz-json-1.0',
          'Content-Length': Buffer.byteLength(body),
          'X-Amz-Target': `DynamoDB_20120810.${operation}`,
          'X-Amz-Date': '20000101T000000Z',
          Authorization:
            'AWS4-HMAC-SHA256 Credential=local/20000101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0',
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          let parsed: Record<string, unknown>;
          try {
            parsed = JSON.parse(text || '{}') as Record<string, unknown>;
          } catch {
            parsed = { message: text };
          }
          if (res.statusCode === 200) return resolve(parsed);
          const type = String(parsed.__type ?? `HTTP ${res.statusCode}`);
          const error = new DynamoApiError(
            `${operation}: ${String(parsed.message ?? parsed.Message ?? type)}`,
          );
          error.name = type.slice(type.lastIndexOf('#') + 1);
          reject(error);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
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
