/**
 * Every AWS SDK call this process makes, seen before it is sent: `Client.prototype.send` (the one
 * class every SDK v3 client extends, shared with the bundles, which leave `@aws-sdk/*` external) is
 * wrapped so a check can refuse a call as IAM would, with an AccessDenied error that never reaches
 * the service. Used by the Lambda bridge (each call against the calling function's role) and by the
 * cloud suites (the CLI's calls against the operator policy).
 */
import { __Client } from '@aws-sdk/client-dynamodb';
import {
  type AwsRequest,
  type Decision,
  evaluate,
  type PolicyStatement,
  requestsOf,
  type Where,
} from './iam.ts';

export interface SdkCall {
  serviceId: string;
  /** The command's class name; a lib-dynamodb command as the low-level one it wraps (PutItemCommand). */
  command: string;
  input: Record<string, unknown>;
}

/** What `check` answers for a call: undefined lets it through, an error refuses it. */
export type SdkCallCheck = (call: SdkCall) => Error | undefined;

interface Sendable {
  config: { serviceId?: string };
  send(command: unknown, ...rest: unknown[]): Promise<unknown>;
}

const prototype = __Client.prototype as unknown as Sendable;
const realSend = prototype.send;
const checks = new Set<SdkCallCheck>();

function describe(client: Sendable, command: unknown): SdkCall {
  const wrapped = (command as { clientCommand?: object }).clientCommand;
  return {
    serviceId: client.config.serviceId ?? 'unknown',
    command: (wrapped ?? (command as object)).constructor.name,
    input: ((command as { input?: Record<string, unknown> }).input ?? {}) as Record<string, unknown>,
  };
}

/** Runs `check` on every SDK call from now on; the returned function stops it. */
export function interceptSdkCalls(check: SdkCallCheck): () => void {
  if (checks.size === 0) {
    prototype.send = function send(this: Sendable, command: unknown, ...rest: unknown[]) {
      const call = describe(this, command);
      for (const each of checks) {
        const refused = each(call);
        if (refused) return Promise.reject(refused);
      }
      return realSend.call(this, command, ...rest);
    };
  }
  checks.add(check);
  return () => {
    checks.delete(check);
    if (checks.size === 0) prototype.send = realSend;
  };
}

/** One authorisation a call needed, and what the policy said. */
export interface CheckedRequest extends AwsRequest, Decision {
  /** Who called: a function name, or `operator`. */
  principal: string;
  command: string;
}

/** The error AWS answers a call its caller's policy does not allow with. */
export function accessDenied(principal: string, request: AwsRequest): Error {
  return Object.assign(
    new Error(
      `User: ${principal} is not authorized to perform: ${request.action} on resource: ${request.resources.join(', ') || '(any)'}`,
    ),
    {
      name: request.action.startsWith('s3:') ? 'AccessDenied' : 'AccessDeniedException',
      $fault: 'client',
      $metadata: { httpStatusCode: 403 },
    },
  );
}

/** Checks a call against a principal's statements, records each authorisation, refuses what is denied. */
export function checkCall(
  principal: string,
  statements: readonly PolicyStatement[],
  call: SdkCall,
  where: Where,
  record: (checked: CheckedRequest) => void,
): Error | undefined {
  let refusal: Error | undefined;
  for (const request of requestsOf(call.serviceId, call.command, call.input, where)) {
    const decision = evaluate(statements, request);
    record({ ...request, ...decision, principal, command: call.command });
    if (!decision.allowed) refusal ??= accessDenied(principal, request);
  }
  return refusal;
}
