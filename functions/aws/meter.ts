/**
 * Request metering for the clients stepthread makes (the SDK's, and the embedded target's wire
 * clients): how many calls of each command, and how many request-body bytes they sent. Tests use it
 * to prove cost bounds (e.g. an append writes bytes proportional to the new messages, a fork writes
 * none), so the numbers are exact, not sampled.
 */
import { isWireClient } from './wire-clients.ts';

export interface CommandUsage {
  /** Calls made (one per `send`; SDK-internal retries of the same call are not counted again). */
  readonly requests: number;
  /** Request body bytes; for S3 PutObject, the object's bytes. */
  readonly bytes: number;
}

export interface Meter {
  /** Usage per command name, e.g. `PutObjectCommand`, `UpdateItemCommand`. */
  snapshot(): Readonly<Record<string, CommandUsage>>;
  /** Calls of one command, or of all commands when omitted. */
  requests(commandName?: string): number;
  /** Body bytes of one command, or of all commands when omitted. */
  bytes(commandName?: string): number;
  reset(): void;
}

/** The part of an SDK client the meter needs; every v3 client (and the document client) has it. */
interface MeterableClient {
  middlewareStack: {
    add(
      middleware: (
        next: (args: { request: unknown; input: unknown }) => Promise<unknown>,
        context: { commandName?: string },
      ) => (args: { request: unknown; input: unknown }) => Promise<unknown>,
      options: { step: 'build' | 'initialize'; name: string; priority?: 'low' },
    ): void;
  };
}

/** The serialised request as the build step sees it. */
interface SerialisedRequest {
  body?: unknown;
  headers?: Record<string, string>;
}

const METER_MIDDLEWARE = 'stepthreadMeter';

/** A call as `aroundCommands` shows it. */
export interface CommandCall {
  readonly commandName: string;
  readonly input: Readonly<Record<string, unknown>>;
}
const meters = new WeakMap<object, Meter>();

/**
 * Wraps every call `client` makes from now on: `around` gets the low-level command's name (e.g.
 * `GetItemCommand`, `PutObjectCommand`) and the command's input as given (unmarshalled), and sends
 * the call with `next`. On an SDK client it is middleware at the start of the stack, so it sees a
 * call once, whatever the SDK retries.
 */
export function aroundCommands(
  client: object,
  around: (call: CommandCall, next: () => Promise<unknown>) => Promise<unknown>,
): void {
  if (isWireClient(client)) {
    client.intercept((call, next) => around(call, next));
    return;
  }
  arounds += 1;
  (client as MeterableClient).middlewareStack.add(
    (next, context) => (args) =>
      around(
        {
          commandName: context.commandName ?? 'UnknownCommand',
          input: (args.input ?? {}) as Readonly<Record<string, unknown>>,
        },
        () => next(args),
      ),
    { step: 'initialize', name: `stepthreadAround${arounds}` },
  );
}
/** Middleware names must be unique on a stack. */
let arounds = 0;

/**
 * Adds counting to `client` (once; later calls return the same meter). The document client shares
 * its middleware stack with the DynamoDB client it wraps, so metering either counts both, under the
 * low-level command names.
 */
export function meterClient(client: object): Meter {
  const key = isWireClient(client) ? client : (client as MeterableClient).middlewareStack;
  const existing = meters.get(key);
  if (existing) return existing;

  const usage = new Map<string, { requests: number; bytes: number }>();
  const count = (name: string, bytes: number) => {
    const entry = usage.get(name) ?? { requests: 0, bytes: 0 };
    entry.requests += 1;
    entry.bytes += bytes;
    usage.set(name, entry);
  };
  if (isWireClient(client)) {
    client.intercept((call, next) => {
      count(call.commandName, call.bodyBytes);
      return next();
    });
  } else {
    // The build step runs once per call, after serialisation: the body is final and retries
    // (finalizeRequest step) do not pass through here again.
    (client as MeterableClient).middlewareStack.add(
      (next, context) => async (args) => {
        count(
          context.commandName ?? 'UnknownCommand',
          bodyBytes(args.request as SerialisedRequest | undefined),
        );
        return next(args);
      },
      { step: 'build', name: METER_MIDDLEWARE, priority: 'low' },
    );
  }

  const meter: Meter = {
    snapshot: () => Object.fromEntries([...usage].map(([name, u]) => [name, { ...u }])),
    requests: (commandName) => sum(usage, commandName, 'requests'),
    bytes: (commandName) => sum(usage, commandName, 'bytes'),
    reset: () => usage.clear(),
  };
  meters.set(key, meter);
  return meter;
}

function sum(
  usage: Map<string, { requests: number; bytes: number }>,
  commandName: string | undefined,
  field: 'requests' | 'bytes',
): number {
  if (commandName !== undefined) return usage.get(commandName)?.[field] ?? 0;
  let total = 0;
  for (const u of usage.values()) total += u[field];
  return total;
}

function bodyBytes(request: SerialisedRequest | undefined): number {
  const body: unknown = request?.body;
  if (body === undefined || body === null) return 0;
  if (typeof body === 'string') return Buffer.byteLength(body, 'utf8');
  if (body instanceof Uint8Array) return body.byteLength;
  if (body instanceof ArrayBuffer) return body.byteLength;
  // Streams: trust the declared length (the stores only send strings and buffers).
  const declared = request?.headers?.['content-length'] ?? request?.headers?.['Content-Length'];
  return declared ? Number(declared) : 0;
}
