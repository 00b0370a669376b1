/** The DynamoDB document client every handler uses (the one client each of them loads at init). */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { forLoopback } from './loopback.ts';
import { type AwsTarget, clientConfig } from './target.ts';

export function createDocumentClient(target: AwsTarget): DynamoDBDocumentClient {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient(clientConfig(target, 'dynamodb')), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    unmarshallOptions: { wrapNumbers: false },
  });
  return target.kind === 'embedded' ? forLoopback(client) : client;
}
