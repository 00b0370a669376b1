/**
 * The AWS LambdaInvoker: a synchronous Invoke through @aws-sdk/client-lambda. The SDK is imported on
 * first use, so the local runtime and tests never load it (it is not yet a direct dependency).
 */
import type { LambdaInvoker } from './types.ts';

export interface LambdaInvokerOptions {
  region?: string;
  /** LocalStack or another AWS-compatible endpoint. */
  endpoint?: string;
  /** Default: the SDK's credential chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export function createLambdaInvoker(options: LambdaInvokerOptions = {}): LambdaInvoker {
  let client: Promise<{ invoke: LambdaInvoker }> | undefined;
  return async (request) => {
    client ??= connect(options);
    return (await client).invoke(request);
  };
}

async function connect(options: LambdaInvokerOptions): Promise<{ invoke: LambdaInvoker }> {
  const { LambdaClient, InvokeCommand } = await import('@aws-sdk/client-lambda');
  const lambda = new LambdaClient({
    ...(options.region ? { region: options.region } : {}),
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
  });
  return {
    async invoke({ functionName, payload, signal }) {
      const response = await lambda.send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: new TextEncoder().encode(JSON.stringify(payload ?? null)),
        }),
        { abortSignal: signal },
      );
      const text = response.Payload ? new TextDecoder().decode(response.Payload) : '';
      const result: unknown = text === '' ? null : JSON.parse(text);
      if (response.FunctionError) throw new Error(functionErrorMessage(response.FunctionError, result));
      return result;
    },
  };
}

/** Lambda reports a handler's exception as `{ errorType, errorMessage }` in the payload. */
export function functionErrorMessage(kind: string, payload: unknown): string {
  if (payload !== null && typeof payload === 'object') {
    const { errorType, errorMessage } = payload as { errorType?: unknown; errorMessage?: unknown };
    if (typeof errorMessage === 'string')
      return `${typeof errorType === 'string' ? `${errorType}: ` : ''}${errorMessage}`;
  }
  return `the function failed (${kind})`;
}
