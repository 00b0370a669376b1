/** The S3 client of a target (clients.ts gives the embedded target a wire client instead). */
import { S3Client } from '@aws-sdk/client-s3';
import { type AwsTarget, clientConfig } from './target.ts';

/** What the stores use of an S3 client: the SDK's, or the embedded target's (wire-clients.ts). */
export type ObjectClient = Pick<S3Client, 'send' | 'destroy'>;

export function createS3Client(target: AwsTarget): S3Client {
  return new S3Client(clientConfig(target, 's3'));
}
