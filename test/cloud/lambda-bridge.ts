/**
 * The Lambda service of the cloud suite: a small Node process that runs the synthesized bundles
 * (`cdk.out/asset.<hash>/index.mjs`) for moto (test/cloud/moto_server.py forwards every Invoke here).
 * Each bundle is imported once per process, as a warm container would keep it, and runs with the
 * function's environment from the template plus AWS_ENDPOINT_URL (moto).
 *
 *   POST /register  {"<function name>": {dir: "<asset directory>", statements: [<its role's policy>]}, ...}
 *   POST /invoke    {functionName, environment, event}  → {payload, errored, logs}
 *   GET  /calls     → every authorisation the bundles' SDK calls needed, and the role's answer
 *   GET  /running   → invocations under way, by function name
 *
 * IAM as on AWS: each SDK call a bundle makes is checked against its function's role as synthesized
 * (sdk-calls.ts, iam.ts); a call the role does not allow fails with AccessDenied before it reaches
 * moto, which enforces no IAM itself.
 *   POST /faults    {mode: "none" | "fail-first" | "crash-first", error?: "<Lambda error name>"}
 *     fail-first:  the first invocation with a given event fails before its handler runs
 *     crash-first: the first invocation with a given event runs its handler, then fails
 *     (both as `error`, default Lambda.ServiceException: the errors the Lambda service reports)
 *     answers with the mode and number of faults injected before the switch
 *   GET  /faults    → {mode, injected: number}
 *
 * Usage: tsx test/cloud/lambda-bridge.ts <port>; prints "ready <port>".
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PolicyStatement } from './iam.ts';
import { type CheckedRequest, checkCall, interceptSdkCalls } from './sdk-calls.ts';

type Handler = (event: unknown, context: unknown) => Promise<unknown>;
type FaultMode = 'none' | 'fail-first' | 'crash-first';

const bundles = new Map<string, { dir: string; statements: PolicyStatement[] }>();
const loaded = new Map<string, Promise<Handler>>();
const seen = new Set<string>();
let mode: FaultMode = 'none';
let injected = 0;
let faultError = 'Lambda.ServiceException';
/** Invocations under way, by function name (a cancelled run's LLM function must return early). */
const running = new Map<string, number>();

/** The function whose handler is running, across its awaits: whose role an SDK call is checked against. */
const invoking = new AsyncLocalStorage<string>();
/** Each distinct authorisation (principal, action, resources, answer) with how often it was needed. */
const calls = new Map<string, CheckedRequest & { count: number }>();
const where = {
  account: process.env.STEPTHREAD_CLOUD_ACCOUNT ?? '123456789012',
  region: process.env.AWS_REGION ?? 'us-east-1',
};
interceptSdkCalls((call) => {
  const functionName = invoking.getStore();
  const statements = functionName === undefined ? [] : (bundles.get(functionName)?.statements ?? []);
  return checkCall(functionName ?? '(outside any invocation)', statements, call, where, (checked) => {
    const key = JSON.stringify([
      checked.principal,
      checked.action,
      checked.resources,
      checked.allowed,
      checked.by,
    ]);
    const seen = calls.get(key);
    if (seen) seen.count += 1;
    else calls.set(key, { ...checked, count: 1 });
  });
});

function handlerOf(functionName: string): Promise<Handler> {
  const dir = bundles.get(functionName)?.dir;
  if (!dir) return Promise.reject(new Error(`no bundle registered for function ${functionName}`));
  let handler = loaded.get(functionName);
  if (!handler) {
    handler = import(pathToFileURL(join(dir, 'index.mjs')).href).then((module) => module.handler as Handler);
    loaded.set(functionName, handler);
  }
  return handler;
}

/** What the Lambda runtime reports for an error a handler threw. */
function lambdaError(error: unknown): { errorType: string; errorMessage: string } {
  const e = error as { name?: unknown; message?: unknown };
  return {
    errorType: typeof e?.name === 'string' ? e.name : 'Error',
    errorMessage: typeof e?.message === 'string' ? e.message : String(error),
  };
}

const serviceException = (when: string) =>
  Object.assign(new Error(`injected: the Lambda service failed ${when}`), { name: faultError });

async function invoke(request: {
  functionName: string;
  environment: Record<string, string>;
  event: unknown;
}): Promise<{ payload: unknown; errored: boolean }> {
  Object.assign(process.env, request.environment);
  const key = createHash('sha256')
    .update(`${request.functionName}\n${JSON.stringify(request.event)}`)
    .digest('hex');
  const first = !seen.has(key);
  seen.add(key);
  const context = {
    functionName: request.functionName,
    awsRequestId: key.slice(0, 32),
    getRemainingTimeInMillis: () => 900_000,
  };
  try {
    if (mode === 'fail-first' && first) {
      injected++;
      throw serviceException('before the handler ran');
    }
    const handler = await handlerOf(request.functionName);
    running.set(request.functionName, (running.get(request.functionName) ?? 0) + 1);
    const payload = await invoking
      .run(request.functionName, () => handler(request.event, context))
      .finally(() => running.set(request.functionName, running.get(request.functionName)! - 1));
    if (mode === 'crash-first' && first) {
      injected++;
      throw serviceException('after the handler returned');
    }
    return { payload: payload ?? null, errored: false };
  } catch (error) {
    return { payload: lambdaError(error), errored: true };
  }
}

async function body(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? {} : JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const server = createServer((request, response) => {
  const reply = (status: number, value: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(value));
  };
  body(request)
    .then(async (value) => {
      if (request.method === 'POST' && request.url === '/invoke') {
        return reply(200, await invoke(value as Parameters<typeof invoke>[0]));
      }
      if (request.method === 'POST' && request.url === '/register') {
        for (const [name, bundle] of Object.entries(
          value as Record<string, { dir: string; statements: PolicyStatement[] }>,
        )) {
          bundles.set(name, bundle);
        }
        return reply(200, { functions: bundles.size });
      }
      if (request.method === 'GET' && request.url === '/calls') return reply(200, [...calls.values()]);
      if (request.method === 'GET' && request.url === '/running') {
        return reply(200, Object.fromEntries(running));
      }
      if (request.url === '/faults') {
        // Answers with the faults injected so far, then (POST) switches to the new mode and resets.
        const before = { mode, injected };
        if (request.method === 'POST') {
          mode = (value as { mode: FaultMode }).mode;
          faultError = (value as { error?: string }).error ?? 'Lambda.ServiceException';
          seen.clear();
          injected = 0;
        }
        return reply(200, before);
      }
      return reply(404, { error: `no route ${request.method} ${request.url}` });
    })
    .catch((error: unknown) => reply(500, lambdaError(error)));
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`ready ${typeof address === 'object' && address ? address.port : ''}`);
});
