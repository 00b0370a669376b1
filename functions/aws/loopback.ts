/**
 * SDK clients of the embedded stand-ins (dynalite and s3rver on 127.0.0.1): the same clients and
 * commands, serialisation, endpoint resolution, SigV4 signing, retries and HTTP, without the
 * per-request work that only matters against AWS or that the SDK can do once:
 *
 * - no logger middleware: with the default no-op logger it still copied every input and output
 *   through the operation's schema (`schemaLogFilter`) to hand them to a logger that drops them;
 * - no user agent (built and escaped per request) and no Lambda recursion detection (trace
 *   headers from the Lambda environment): neither emulator reads them;
 * - the middleware stack resolved once per command class (and bucket), not per request: what the
 *   SDK's own `cacheMiddleware` option does, which the DynamoDB document client refuses. Any later
 *   change to the stack (a test's meter) drops the resolved handlers, so it is seen by the next call.
 *
 * No SDK imports: it works on any v3 client, the document client included.
 */

type Handler = (args: unknown) => Promise<{ output: unknown }>;

interface MiddlewareStack {
  remove(name: string): boolean;
  concat(from: MiddlewareStack): MiddlewareStack;
}

interface SdkCommand {
  readonly input?: { readonly Bucket?: unknown };
  readonly middlewareStack: MiddlewareStack;
  resolveMiddleware(stack: MiddlewareStack, config: unknown, options: undefined): Handler;
}

/** lib-dynamodb's commands: they marshal into a low-level command they hold (protected members). */
interface DocumentCommand extends SdkCommand {
  readonly clientCommand: SdkCommand;
  addMarshallingMiddleware(config: unknown): void;
}

interface SdkClient {
  readonly config: unknown;
  readonly middlewareStack: MiddlewareStack;
  send(command: unknown, ...rest: unknown[]): Promise<unknown>;
}

/** Middleware that serves AWS-side features only (see above). */
const AWS_ONLY_MIDDLEWARE = ['loggerMiddleware', 'getUserAgentMiddleware', 'recursionDetectionMiddleware'];

/** The stack methods that change what a resolved handler would contain. */
const MUTATORS = ['add', 'addRelativeTo', 'use', 'remove', 'removeByTag'] as const;

const tuned = new WeakSet<object>();

/** Tunes `client` (above) in place and returns it; a second call changes nothing. */
export function forLoopback<C extends object>(client: C): C {
  if (tuned.has(client)) return client;
  tuned.add(client);
  const sdk = client as unknown as SdkClient;
  const stack = sdk.middlewareStack;
  for (const name of AWS_ONLY_MIDDLEWARE) stack.remove(name);

  // Resolved handlers by command class, then by bucket: an S3 endpoint names its bucket, and the
  // handler's context (shared by its calls) holds the endpoint it resolved.
  const handlers = new Map<unknown, Map<unknown, Handler>>();
  const methods = stack as unknown as Record<(typeof MUTATORS)[number], (...args: unknown[]) => unknown>;
  for (const method of MUTATORS) {
    const original = methods[method];
    methods[method] = (...args: unknown[]) => {
      handlers.clear();
      return original.apply(stack, args);
    };
  }

  const send = sdk.send.bind(sdk);
  sdk.send = (command: unknown, ...rest: unknown[]) => {
    // Per-call options (an abort signal) or a callback: the SDK's own path.
    if (rest.some((arg) => arg !== undefined)) return send(command, ...rest);
    const cmd = command as SdkCommand;
    const document = isDocumentCommand(cmd);
    let byBucket = handlers.get(cmd.constructor);
    if (byBucket === undefined) {
      byBucket = new Map();
      handlers.set(cmd.constructor, byBucket);
    }
    const bucket = cmd.input?.Bucket;
    let handler = byBucket.get(bucket);
    if (handler === undefined) {
      if (document) {
        // What DynamoDBDocumentClientCommand.resolveMiddleware does, minus binding the handler to
        // this one command: its middleware reads the command it is called with.
        cmd.addMarshallingMiddleware(sdk.config);
        handler = cmd.clientCommand.resolveMiddleware(
          stack.concat(cmd.middlewareStack),
          sdk.config,
          undefined,
        );
      } else {
        handler = cmd.resolveMiddleware(stack, sdk.config, undefined);
      }
      byBucket.set(bucket, handler);
    }
    return handler(document ? cmd.clientCommand : cmd).then((result) => result.output);
  };
  return client;
}

function isDocumentCommand(command: SdkCommand): command is DocumentCommand {
  const candidate = command as Partial<DocumentCommand>;
  return candidate.clientCommand !== undefined && typeof candidate.addMarshallingMiddleware === 'function';
}
