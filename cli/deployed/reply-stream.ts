/**
 * Subscribing to the replies a deployed stack streams (`stepthread watch`, `dev --target aws`): the
 * execution's channel of the stack's AppSync Events API (functions/events/reply-channel.ts), over its
 * realtime WebSocket protocol, signed with the caller's own IAM credentials (the operator policy
 * grants appsync:EventConnect and appsync:EventSubscribe):
 *   connect to wss://<realtime domain>/event/realtime with the subprotocols `aws-appsync-event-ws` and
 *   `header-<base64url of the signed headers of {}>` → connection_init → connection_ack
 *   → subscribe (signed over {"channel": …}) → subscribe_success → data … (ka keeps it alive).
 * Node's own WebSocket client (Node 22) carries it.
 */
import { randomUUID } from 'node:crypto';
import { StepthreadError } from '../../engine/errors.ts';
import type { AwsTarget } from '../../functions/aws/target.ts';
import {
  type CredentialSource,
  eventsRegion,
  eventsUrl,
  signedEventHeaders,
} from '../../functions/events/appsync-signing.ts';
import {
  EVENTS_HTTP_ENV,
  EVENTS_NAMESPACE_ENV,
  parseReplyEvent,
  REPLY_NAMESPACE,
  type ReplyEvent,
  replyChannel,
} from '../../functions/events/reply-channel.ts';
import { type StackNamesOptions, stackOutputs } from '../stack-names.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The realtime domain (or a base URL), beside STEPTHREAD_EVENTS_HTTP. */
export const EVENTS_REALTIME_ENV = 'STEPTHREAD_EVENTS_REALTIME';
const OUTPUTS = ['EventsHttpDomain', 'EventsRealtimeDomain', 'EventsNamespace'] as const;

export interface ReplyStreamEndpoints {
  /** HTTP domain (signatures are made for it) or base URL. */
  readonly http: string;
  /** Realtime domain or base URL. */
  readonly realtime: string;
  readonly namespace: string;
}

/**
 * Where the stack streams: STEPTHREAD_EVENTS_HTTP / STEPTHREAD_EVENTS_REALTIME when both are set, else
 * the stack's outputs. STREAMING_NOT_DEPLOYED when the stack has none (deployed with streaming off, or
 * before it existed).
 */
export async function replyStreamEndpoints(
  env: Env,
  target: AwsTarget,
  options: StackNamesOptions,
): Promise<ReplyStreamEndpoints> {
  const http = env[EVENTS_HTTP_ENV]?.trim();
  const realtime = env[EVENTS_REALTIME_ENV]?.trim();
  const namespace = env[EVENTS_NAMESPACE_ENV]?.trim() || undefined;
  if (http && realtime) return { http, realtime, namespace: namespace ?? REPLY_NAMESPACE };
  const outputs = await stackOutputs(env, target, options, OUTPUTS);
  if (outputs === undefined) {
    throw new StepthreadError(
      'STREAMING_NOT_DEPLOYED',
      `no stack named to stream from: pass --stack (or set STEPTHREAD_STACK_NAME), or set ${EVENTS_HTTP_ENV} and ${EVENTS_REALTIME_ENV}`,
    );
  }
  if (!outputs.EventsHttpDomain || !outputs.EventsRealtimeDomain) {
    throw new StepthreadError(
      'STREAMING_NOT_DEPLOYED',
      'the stack has no EventsHttpDomain/EventsRealtimeDomain outputs: deploy it with streaming on (the default; not -c stepthread:streaming=off)',
    );
  }
  return {
    http: outputs.EventsHttpDomain,
    realtime: outputs.EventsRealtimeDomain,
    namespace: namespace ?? outputs.EventsNamespace ?? REPLY_NAMESPACE,
  };
}

export interface ReplySubscription {
  /** Unsubscribes and closes the connection. */
  close(): void;
  /** Settles when the connection ends: resolves on close(), rejects when it broke. */
  readonly ended: Promise<void>;
}

export interface SubscribeOptions {
  readonly endpoints: ReplyStreamEndpoints;
  readonly executionId: string;
  readonly credentials: CredentialSource;
  readonly env: Env;
  readonly onEvent: (event: ReplyEvent) => void;
  /** How long connecting and subscribing may take (default 10 s). */
  readonly timeoutMs?: number;
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

/** The realtime URL: a domain gets wss://; a stand-in's http(s):// base becomes ws(s)://. */
function realtimeUrl(realtime: string): URL {
  const url = eventsUrl(realtime, 'wss', '/event/realtime');
  if (url.protocol === 'http:') url.protocol = 'ws:';
  if (url.protocol === 'https:') url.protocol = 'wss:';
  return url;
}

function refused(what: string, message: Record<string, unknown>): StepthreadError {
  const errors = Array.isArray(message.errors) ? (message.errors as Array<Record<string, unknown>>) : [];
  const detail = errors.map((e) => [e.errorType, e.message].filter(Boolean).join(': ')).join('; ');
  return new StepthreadError(
    'AWS_REQUEST_FAILED',
    `the Events API refused the ${what}${detail ? ` (${detail})` : ''}: do your credentials have the stack's operator policy (appsync:EventConnect, appsync:EventSubscribe)?`,
  );
}

/** Subscribes to the execution's channel; resolves once the subscription is acknowledged. */
export async function subscribeReplies(options: SubscribeOptions): Promise<ReplySubscription> {
  const httpUrl = eventsUrl(options.endpoints.http, 'https', '/event');
  const region = eventsRegion(httpUrl.hostname, options.env);
  const channel = replyChannel(options.endpoints.namespace, options.executionId);
  const credentials = await options.credentials();
  const connection = await signedEventHeaders({ httpUrl, body: '{}', region, credentials });
  const socket = new WebSocket(realtimeUrl(options.endpoints.realtime), [
    'aws-appsync-event-ws',
    `header-${base64url(JSON.stringify(connection))}`,
  ]);
  const id = randomUUID();
  let keepAlive: ReturnType<typeof setTimeout> | undefined;
  let closing = false;
  let settleReady: { resolve: () => void; reject: (error: Error) => void } | undefined;
  let settleEnded: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    settleReady = { resolve, reject };
  });
  const ended = new Promise<void>((resolve, reject) => {
    settleEnded = { resolve, reject };
  });
  ended.catch(() => {}); // a caller that never reads it is not an unhandled rejection
  const fail = (error: Error) => {
    if (keepAlive !== undefined) clearTimeout(keepAlive);
    settleReady?.reject(error);
    settleEnded?.reject(error);
    if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close();
  };
  const timeout = setTimeout(
    () =>
      fail(
        new StepthreadError(
          'AWS_ENDPOINT_UNREACHABLE',
          `no subscription to ${channel} within the time allowed`,
        ),
      ),
    options.timeoutMs ?? 10_000,
  );
  const watchdog = (ms: number) => {
    if (keepAlive !== undefined) clearTimeout(keepAlive);
    keepAlive = setTimeout(() => fail(new Error('the Events API connection went silent')), ms);
    keepAlive.unref?.();
  };
  let silenceMs = 300_000;

  socket.addEventListener('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
  socket.addEventListener('error', () =>
    fail(
      new StepthreadError(
        'AWS_ENDPOINT_UNREACHABLE',
        `cannot reach ${realtimeUrl(options.endpoints.realtime).host}`,
      ),
    ),
  );
  socket.addEventListener('close', () => {
    if (keepAlive !== undefined) clearTimeout(keepAlive);
    if (closing) settleEnded?.resolve();
    else fail(new Error('the Events API closed the connection'));
  });
  socket.addEventListener('message', (message: MessageEvent) => {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(String(message.data)) as Record<string, unknown>;
    } catch {
      return;
    }
    switch (parsed.type) {
      case 'connection_ack': {
        if (typeof parsed.connectionTimeoutMs === 'number') silenceMs = parsed.connectionTimeoutMs;
        watchdog(silenceMs);
        const body = JSON.stringify({ channel });
        void signedEventHeaders({ httpUrl, body, region, credentials }).then(
          (authorization) => socket.send(JSON.stringify({ type: 'subscribe', id, channel, authorization })),
          (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))),
        );
        return;
      }
      case 'ka':
        watchdog(silenceMs);
        return;
      case 'subscribe_success':
        clearTimeout(timeout);
        settleReady?.resolve();
        return;
      case 'connection_error':
        return fail(refused('connection', parsed));
      case 'subscribe_error':
        return fail(refused('subscription', parsed));
      case 'error':
        return fail(refused('request', parsed));
      case 'data': {
        if (parsed.id !== id) return;
        const texts = Array.isArray(parsed.event) ? parsed.event : [parsed.event];
        for (const text of texts) {
          try {
            const event = parseReplyEvent(JSON.parse(String(text)));
            if (event) options.onEvent(event);
          } catch {
            // Not one of ours: nothing to show.
          }
        }
        return;
      }
      default:
        return;
    }
  });

  try {
    await ready;
  } finally {
    clearTimeout(timeout);
  }
  return {
    close() {
      if (closing) return;
      closing = true;
      if (keepAlive !== undefined) clearTimeout(keepAlive);
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ type: 'unsubscribe', id }));
        socket.close();
      } else settleEnded?.resolve();
    },
    ended,
  };
}
