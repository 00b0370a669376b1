/**
 * The `bedrock` provider: the Converse API through @aws-sdk/client-bedrock-runtime, tool use
 * included. Credentials are the Lambda role's (or the local AWS profile's), never the workflow's.
 * The SDK's own retries are off (maxAttempts 1) so retry.ts is the only retry layer.
 */
import type {
  BedrockRuntimeClient,
  ConverseCommandInput,
  ConverseCommandOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { StepthreadError } from '../../engine/errors.ts';
import type { Profile } from '../../engine/model/schema.ts';
import { redactErrorText } from '../redaction/redactor.ts';
import { ConverseStreamAssembler } from './converse-stream.ts';
import type { LlmProvider, LlmRequest, LlmResponse, ReplyStream } from './provider.ts';
import {
  AttemptTimeout,
  callProvider,
  type LlmFailure,
  parseRetryAfter,
  type RetryEffects,
  type RetryPolicy,
} from './retry.ts';
import {
  fromConverseMessage,
  toConverseConversation,
  toConverseParameters,
  toConverseToolConfig,
} from './wire.ts';

export type BedrockProfile = Extract<Profile, { provider: 'bedrock' }>;

export interface BedrockProviderOptions {
  /** A client to use (tests point one at a local server); default one per region, per container. */
  readonly client?: BedrockRuntimeClient;
  readonly retryEffects?: RetryEffects;
  readonly retryPolicy?: Partial<RetryPolicy>;
}

// Loaded on first use: a function whose workflows only use other providers never pays for it at init.
let sdk: Promise<typeof import('@aws-sdk/client-bedrock-runtime')> | undefined;
const loadSdk = () => {
  sdk ??= import('@aws-sdk/client-bedrock-runtime');
  return sdk;
};
const clients = new Map<string, BedrockRuntimeClient>();

/** A warm Lambda reuses the client (and its connections) across invocations. */
async function clientFor(region: string | undefined): Promise<BedrockRuntimeClient> {
  const key = region ?? '';
  let client = clients.get(key);
  if (!client) {
    const { BedrockRuntimeClient } = await loadSdk();
    client = new BedrockRuntimeClient({ ...(region ? { region } : {}), maxAttempts: 1 });
    clients.set(key, client);
  }
  return client;
}

export function createBedrockProvider(
  profile: BedrockProfile,
  options: BedrockProviderOptions = {},
): LlmProvider {
  const where = `bedrock model ${profile.model}`;
  return {
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const client = options.client ?? (await clientFor(profile.region));
      const { ConverseCommand } = await loadSdk();
      const input = converseInput(profile, request);
      const stream = request.stream;
      let attempts = 0;
      const output = await callProvider(
        profile,
        request,
        options,
        (error) => classifyBedrockError(error, where),
        (abortSignal) => {
          if (stream === undefined) return client.send(new ConverseCommand(input), { abortSignal });
          // A retried attempt streams its reply again from the start.
          if (attempts++ > 0) stream.restart();
          return streamedConverse(client, input, abortSignal, stream);
        },
      );
      if (output.output?.message === undefined) {
        throw new StepthreadError('LLM_PROVIDER_ERROR', `${where}: the response has no message`, {
          nodeId: request.nodeId,
        });
      }
      const usage = output.usage;
      return {
        message: fromConverseMessage(output.output.message),
        ...(usage?.inputTokens !== undefined && usage.outputTokens !== undefined
          ? { usage: { promptTokens: usage.inputTokens, completionTokens: usage.outputTokens } }
          : {}),
      };
    },
  };
}

/**
 * One ConverseStream attempt, read to its end: the output Converse would have given (message and
 * usage), each piece of text handed to `stream` as it comes.
 */
async function streamedConverse(
  client: BedrockRuntimeClient,
  input: ConverseCommandInput,
  abortSignal: AbortSignal,
  stream: ReplyStream,
): Promise<{ output: ConverseCommandOutput['output']; usage?: ConverseCommandOutput['usage'] }> {
  const { ConverseStreamCommand } = await loadSdk();
  const response = await client.send(new ConverseStreamCommand(input), { abortSignal });
  const assembler = new ConverseStreamAssembler();
  for await (const event of response.stream ?? []) {
    const text = assembler.add(event);
    if (text !== '') stream.text(text);
  }
  const usage = assembler.usage();
  return {
    output: { message: assembler.message() },
    ...(usage ? { usage: usage as ConverseCommandOutput['usage'] } : {}),
  };
}

/** The Converse request for a call: profile parameters, then node parameters. */
export function converseInput(profile: BedrockProfile, request: LlmRequest): ConverseCommandInput {
  const tools = request.tools ?? {};
  const withTools = Object.keys(tools).length > 0;
  const { system, messages } = toConverseConversation(request.messages, { withToolBlocks: withTools });
  const parameters = toConverseParameters({ ...profile.parameters, ...request.parameters });
  return {
    modelId: profile.model,
    messages,
    ...(system.length > 0 ? { system } : {}),
    ...(withTools ? { toolConfig: toConverseToolConfig(tools) } : {}),
    ...(parameters.inferenceConfig ? { inferenceConfig: parameters.inferenceConfig } : {}),
    ...(parameters.additionalModelRequestFields
      ? { additionalModelRequestFields: parameters.additionalModelRequestFields as never }
      : {}),
  };
}

const AUTH_ERRORS = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
  'IncompleteSignature',
  'CredentialsProviderError',
]);
const THROTTLING_ERRORS = new Set(['ThrottlingException', 'TooManyRequestsException']);
const UNAVAILABLE_ERRORS = new Set([
  'ServiceUnavailableException',
  'InternalServerException',
  'InternalFailure',
  'ModelNotReadyException',
  // A streamed reply that broke off mid-way: asking again usually gets a whole one.
  'ModelStreamErrorException',
]);
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

/** What one failed Converse attempt means. */
export function classifyBedrockError(error: unknown, where: string): LlmFailure {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkError;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  const message = redactErrorText(
    `${where}: ${name}${status ? ` (HTTP ${status})` : ''}: ${e.message ?? String(error)}`,
  );
  const headers = e.$response?.headers ?? {};
  const retryAfterMs = parseRetryAfter((header) => headers[header]);
  const after = retryAfterMs !== undefined ? { retryAfterMs } : {};
  if (error instanceof AttemptTimeout || name === 'ModelTimeoutException' || name === 'TimeoutError') {
    return { code: 'LLM_TIMEOUT', retryable: true, message };
  }
  if (AUTH_ERRORS.has(name) || status === 401 || status === 403) {
    return { code: 'LLM_AUTH_FAILED', retryable: false, message };
  }
  if (THROTTLING_ERRORS.has(name) || status === 429) {
    return { code: 'LLM_RATE_LIMITED', retryable: true, message, ...after };
  }
  // A quota is not a burst: waiting seconds does not lift it.
  if (name === 'ServiceQuotaExceededException')
    return { code: 'LLM_RATE_LIMITED', retryable: false, message };
  if (UNAVAILABLE_ERRORS.has(name) || (status !== undefined && status >= 500)) {
    return { code: 'LLM_UNAVAILABLE', retryable: true, message, ...after };
  }
  if (e.code !== undefined && (NETWORK_ERRORS.has(e.code) || e.code.startsWith('ERR_HTTP2'))) {
    return { code: 'LLM_UNAVAILABLE', retryable: true, message };
  }
  if (
    name === 'ValidationException' ||
    name === 'ResourceNotFoundException' ||
    (status !== undefined && status < 500)
  ) {
    return { code: 'LLM_BAD_REQUEST', retryable: false, message };
  }
  return { code: 'LLM_PROVIDER_ERROR', retryable: false, message };
}
