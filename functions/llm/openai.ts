/**
 * The `openai` provider: any server speaking OpenAI chat completions (OpenAI, Ollama, vLLM,
 * LM Studio), through the official `openai` package. Its built-in retries are off so retry.ts is
 * the only retry layer (one policy, one Retry-After rule, countable attempts).
 */
import type { APIError } from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessage,
} from 'openai/resources/chat/completions';
import * as z from 'zod';
import { StepthreadError } from '../../engine/errors.ts';
import { Redactor, redactErrorText } from '../redaction/redactor.ts';
import { type ChatChunk, ChatStreamAssembler } from './openai-stream.ts';
import type { LlmProvider, LlmRequest, LlmResponse, ReplyStream } from './provider.ts';
import {
  AttemptTimeout,
  callProvider,
  DEFAULT_CALL_TIMEOUT_MS,
  type LlmFailure,
  parseRetryAfter,
  type RetryEffects,
  type RetryPolicy,
} from './retry.ts';
import { forgetApiKey, type OpenAiProfile, type ResolveApiKeyOptions, resolveApiKey } from './secrets.ts';
import { redactingStream } from './stream-redaction.ts';
import { fromOpenAiMessage, toOpenAiMessages, toOpenAiTools } from './wire.ts';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAiProviderOptions {
  /** Where API keys named by env are read (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly secrets?: ResolveApiKeyOptions;
  readonly retryEffects?: RetryEffects;
  readonly retryPolicy?: Partial<RetryPolicy>;
}

export function createOpenAiProvider(
  profile: OpenAiProfile,
  options: OpenAiProviderOptions = {},
): LlmProvider {
  const env = options.env ?? process.env;
  const baseURL = profile.baseUrl ?? OPENAI_BASE_URL;
  const where = `openai model ${profile.model} at ${hostOf(baseURL)}`;

  return {
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const apiKey = await resolveApiKey(profile, env, options.secrets);
      const sdk = await loadOpenAi();
      const client = new sdk.OpenAI({
        // The SDK insists on a key; with none, the Authorization header is removed instead.
        apiKey: apiKey ?? 'none',
        ...(apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
        baseURL,
        maxRetries: 0,
        timeout: profile.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
        // Explicit, so OPENAI_ORG_ID / OPENAI_PROJECT_ID in the environment don't reach other servers.
        organization: null,
        project: null,
      });
      const body = requestBody(profile, request);
      const stream = request.stream;
      let attempts = 0;
      try {
        const completion = await callProvider(
          profile,
          request,
          options,
          (error) => classifyOpenAiError(sdk, error, where, apiKey),
          (signal) => {
            if (stream === undefined) return client.chat.completions.create(body, { signal });
            // A retried attempt streams its reply again from the start.
            if (attempts++ > 0) stream.restart();
            return streamedCompletion(client, body, signal, redactingStream(stream, apiKey));
          },
        );
        // What the rest reads of the reply, checked: a server that is not quite OpenAI's may send
        // anything with a 200.
        const reply = completionSchema.safeParse(completion);
        if (!reply.success) {
          const issue = reply.error.issues[0];
          const at = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
          throw new StepthreadError(
            'LLM_PROVIDER_ERROR',
            `${where}: the response is not a chat completion (${issue?.message ?? 'unreadable'}${at})`,
            { nodeId: request.nodeId },
          );
        }
        const choice = reply.data.choices[0];
        if (choice === undefined) {
          throw new StepthreadError('LLM_PROVIDER_ERROR', `${where}: the response has no choices`, {
            nodeId: request.nodeId,
          });
        }
        const usage = reply.data.usage;
        // A server may echo what it was sent (the Authorization header included) in a successful
        // reply: the key is redacted, in every encoding, before the reply reaches the conversation.
        return {
          message: new Redactor([apiKey]).value(fromOpenAiMessage(choice.message as ChatCompletionMessage)),
          ...(usage
            ? { usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens } }
            : {}),
        };
      } catch (error) {
        // A rotated secret: read it again next time instead of retrying a dead key from the cache.
        if (error instanceof StepthreadError && error.code === 'LLM_AUTH_FAILED') forgetApiKey(profile, env);
        throw error;
      }
    },
  };
}

type OpenAiClient = InstanceType<OpenAiSdk['OpenAI']>;

/**
 * One streamed attempt, read to its end: the completion its chunks make, each piece of text handed
 * to `stream` as it comes. A connection lost mid-reply is retried like one lost before it. A server
 * that ignores `stream: true` and answers with a whole completion is read as one.
 */
async function streamedCompletion(
  client: OpenAiClient,
  body: ChatCompletionCreateParamsNonStreaming,
  signal: AbortSignal,
  stream: ReplyStream & { flush(): void },
): Promise<unknown> {
  const response = await client.chat.completions
    .create({ ...body, stream: true, stream_options: { include_usage: true } }, { signal })
    .asResponse();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const completion = (await response.json()) as { choices?: { message?: { content?: unknown } }[] };
    const text = completion?.choices?.[0]?.message?.content;
    if (typeof text === 'string' && text !== '') stream.text(text);
    stream.flush();
    return completion;
  }
  const { Stream } = await import('openai/streaming');
  const controller = new AbortController();
  signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  const chunks = Stream.fromSSEResponse<ChatChunk>(response, controller, client);
  const assembler = new ChatStreamAssembler();
  try {
    for await (const chunk of chunks) {
      const text = assembler.add(chunk);
      if (text !== '') stream.text(text);
    }
  } catch (error) {
    const sdk = await loadOpenAi();
    if (error instanceof sdk.APIError || signal.aborted) throw error;
    throw new StreamCut(error);
  }
  stream.flush();
  return assembler.completion();
}

/** A streamed reply that broke off before its end (the connection closed, unreadable data). */
class StreamCut extends Error {
  constructor(cause: unknown) {
    super(`the streamed reply broke off: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = 'StreamCut';
  }
}

const tokenCount = z.number().int().nonnegative();

/** The parts of a chat completion the provider reads; other fields pass through unchecked. */
const completionSchema = z.object({
  choices: z.array(
    z.object({
      message: z.object({
        content: z.string().nullish(),
        tool_calls: z
          .array(
            z.union([
              z.object({
                id: z.string(),
                type: z.literal('function'),
                function: z.object({ name: z.string(), arguments: z.string() }),
              }),
              // Custom (free-text) tool calls: never offered, skipped by fromOpenAiMessage.
              z.object({ type: z.literal('custom') }).passthrough(),
            ]),
          )
          .nullish(),
      }),
    }),
  ),
  usage: z.object({ prompt_tokens: tokenCount, completion_tokens: tokenCount }).nullish(),
});

/** The chat-completions body: profile parameters, then node parameters; model, messages and tools are ours. */
export function requestBody(
  profile: OpenAiProfile,
  request: LlmRequest,
): ChatCompletionCreateParamsNonStreaming {
  const tools = request.tools ?? {};
  const {
    stream: _stream,
    stream_options: _options,
    ...parameters
  } = {
    ...profile.parameters,
    ...request.parameters,
  };
  return {
    ...parameters,
    model: profile.model,
    messages: toOpenAiMessages(request.messages),
    ...(Object.keys(tools).length > 0 ? { tools: toOpenAiTools(tools) } : {}),
  };
}

type OpenAiSdk = typeof import('openai');
let openAiSdk: Promise<OpenAiSdk> | undefined;
// Loaded on first use: only functions that call an OpenAI-compatible server pay for the package.
const loadOpenAi = () => {
  openAiSdk ??= import('openai');
  return openAiSdk;
};

/** What one failed attempt means; messages are redacted of the key and anything key-shaped. */
function classifyOpenAiError(sdk: OpenAiSdk, error: unknown, where: string, apiKey?: string): LlmFailure {
  const { APIConnectionError, APIConnectionTimeoutError, APIError } = sdk;
  const safe = (text: string) => redactErrorText(`${where}: ${text}`, [apiKey]);
  if (error instanceof AttemptTimeout || error instanceof APIConnectionTimeoutError) {
    return { code: 'LLM_TIMEOUT', retryable: true, message: safe('no response in time') };
  }
  if (error instanceof StreamCut) {
    return { code: 'LLM_UNAVAILABLE', retryable: true, message: safe(error.message) };
  }
  if (error instanceof APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return { code: 'LLM_UNAVAILABLE', retryable: true, message: safe(`could not connect${cause}`) };
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const status = error.status;
    const message = safe(`HTTP ${status}: ${serverMessage(error)}`);
    const retryAfterMs = error.headers ? parseRetryAfter((name) => error.headers?.get(name)) : undefined;
    const after = retryAfterMs !== undefined ? { retryAfterMs } : {};
    if (status === 401 || status === 403) return { code: 'LLM_AUTH_FAILED', retryable: false, message };
    if (status === 429) {
      // An exhausted quota will not recover in seconds; only real rate limiting is worth retrying.
      const quota = errorCode(error) === 'insufficient_quota';
      return { code: 'LLM_RATE_LIMITED', retryable: !quota, message, ...after };
    }
    if (status === 408) return { code: 'LLM_TIMEOUT', retryable: true, message, ...after };
    if (status === 409 || status >= 500)
      return { code: 'LLM_UNAVAILABLE', retryable: true, message, ...after };
    return { code: 'LLM_BAD_REQUEST', retryable: false, message };
  }
  const text = error instanceof Error ? error.message : String(error);
  return { code: 'LLM_PROVIDER_ERROR', retryable: false, message: safe(text) };
}

function serverMessage(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  return error.message;
}

function errorCode(error: APIError): string | undefined {
  if (typeof error.code === 'string') return error.code;
  const body = error.error as { code?: unknown } | undefined;
  return typeof body?.code === 'string' ? body.code : undefined;
}

/** Host only: a base URL may carry credentials in its user info or query. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid base URL';
  }
}
