/** The DynamoDB document client every handler uses (the one client each of them loads at init). */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type AwsTarget, clientConfig } from './target.ts';

/** What the stores use of a document client: the SDK's, or the embedded target's (wire-clients.ts). */
export type DocumentClient = Pick<DynamoDBDocumentClient, 'send' | 'destroy'>;

/** How stored values map to attribute values, here and in the embedded wire client. */
export const DOCUMENT_TRANSLATION = {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  unmarshallOptions: { wrapNumbers: false },
} as const;

export function createDocumentClient(target: AwsTarget): DynamoDBDocumentClient {
  // Copies: lib-dynamodb writes its defaults into the option objects it is given.
  return DynamoDBDocumentClient.from(new DynamoDBClient(clientConfig(target, 'dynamodb')), {
    marshallOptions: { ...DOCUMENT_TRANSLATION.marshallOptions },
    unmarshallOptions: { ...DOCUMENT_TRANSLATION.unmarshallOptions },
  });
}
