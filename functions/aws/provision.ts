/**
 * Creates the table and bucket when they are absent. Used by the embedded runtime and the
 * LocalStack suite; on AWS, infra/ owns them. Safe to call repeatedly and concurrently.
 */
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { tableDefinition } from '../stores/table.ts';
import type { AwsClients } from './clients.ts';

export async function ensureResources(
  clients: Pick<AwsClients, 'dynamo' | 's3' | 'tableName' | 'bucketName'>,
): Promise<void> {
  await Promise.all([ensureTable(clients), ensureBucket(clients)]);
}

export async function ensureTable({
  dynamo,
  tableName,
}: Pick<AwsClients, 'dynamo' | 'tableName'>): Promise<void> {
  try {
    await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if (errorName(error) !== 'ResourceNotFoundException') throw error;
  }
  try {
    await dynamo.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (error) {
    // Another starter won the race.
    if (errorName(error) !== 'ResourceInUseException') throw error;
  }
  // A table is usable once ACTIVE; dynalite flips it asynchronously even with createTableMs 0, and a
  // write that arrives first (a loaded machine) fails with ResourceNotFoundException.
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function ensureBucket({ s3, bucketName }: Pick<AwsClients, 's3' | 'bucketName'>): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucketName }));
    return;
  } catch (error) {
    if (errorName(error) !== 'NotFound' && errorName(error) !== 'NoSuchBucket') throw error;
  }
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucketName }));
  } catch (error) {
    const name = errorName(error);
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  }
}

export function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}
