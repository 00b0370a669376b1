/** The S3 client of a target (tuned for loopback on the embedded one: loopback.ts). */
import { S3Client } from '@aws-sdk/client-s3';
import { forLoopback } from './loopback.ts';
import { type AwsTarget, clientConfig } from './target.ts';

export function createS3Client(target: AwsTarget): S3Client {
  const client = new S3Client(clientConfig(target, 's3'));
  return target.kind === 'embedded' ? forLoopback(client) : client;
}
