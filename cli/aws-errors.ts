/**
 * The AWS SDK's failures to reach a deployed stack, as coded errors saying what to set or start: the
 * endpoint that refused (AWS_ENDPOINT_URL: is LocalStack running?), the region or credentials that
 * are not set. Anything else is undefined: the caller reports it as it was.
 */
import type { CodedError } from '../engine/errors.ts';

type Env = Readonly<Record<string, string | undefined>>;

const NETWORK_CODES = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET'];

/** The errno-style code of a network failure, from the error, its cause or its message. */
function networkCode(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 3; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.includes(code)) return code;
    const named = NETWORK_CODES.find(
      (candidate) => current instanceof Error && current.message.includes(candidate),
    );
    if (named) return named;
    current = current.cause;
  }
  return undefined;
}

export function awsAccessProblem(error: unknown, env: Env): CodedError | undefined {
  if (!(error instanceof Error)) return undefined;
  const network = networkCode(error);
  if (network !== undefined) {
    const endpoint = env.AWS_ENDPOINT_URL?.trim();
    return {
      code: 'AWS_ENDPOINT_UNREACHABLE',
      message: endpoint
        ? `cannot reach ${endpoint} (AWS_ENDPOINT_URL): ${network}. Is LocalStack (or whatever serves it) running there? Start it, or set AWS_ENDPOINT_URL to where it listens; unset it to use AWS`
        : `cannot reach AWS: ${network} (${error.message}). Check the network connection and AWS_REGION`,
    };
  }
  if (/\bregion is missing\b/i.test(error.message)) {
    return {
      code: 'AWS_REGION_MISSING',
      message:
        'no AWS region is set: set AWS_REGION (for example `export AWS_REGION=us-east-1`), or a region in your AWS profile',
    };
  }
  if (error.name === 'CredentialsProviderError' || /could not load credentials/i.test(error.message)) {
    return {
      code: 'AWS_CREDENTIALS_MISSING',
      message:
        'no AWS credentials were found: set AWS_PROFILE (after `aws configure` or `aws sso login`), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
    };
  }
  return undefined;
}
