/** Shared e2e setup: real dynalite + s3rver (ephemeral), metered clients, the embedded runtime. */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from '../../engine/conversation/types.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { type Meter, meterClient } from '../../functions/aws/meter.ts';
import {
  createLocalRuntime,
  type LocalRuntime,
  type RunOutcome,
  type TaskCall,
} from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { executionChainOf, threadsOfChain } from '../../functions/stores/execution-chain.ts';
import { fullThread } from '../functions/fixtures.ts';

export const ROOT = join(import.meta.dirname, '..', '..');

/** The largest state payload seen by any e2e run in this process (asserted < 16 KB per run too). */
export const PAYLOAD_LIMIT_BYTES = 16 * 1024;

export interface E2e {
  services: LocalServices;
  runtime: LocalRuntime;
  dynamoMeter: Meter;
  s3Meter: Meter;
  thread(id: string): Promise<Thread>;
  conversation(id: string): Promise<Message[]>;
  /** Largest state payload of each run so far (every run through `runtime` is recorded). */
  readonly payloads: number[];
  /** Asserts every recorded run stayed under PAYLOAD_LIMIT_BYTES, then closes the services. */
  close(): Promise<void>;
}

/** The runtime, with every run's largest payload recorded. */
function recording(runtime: LocalRuntime, payloads: number[]): LocalRuntime {
  const record = async (outcome: Promise<RunOutcome>) => {
    const done = await outcome;
    payloads.push(done.largestPayloadBytes);
    return done;
  };
  return {
    ...runtime,
    prepare(workflow, options) {
      const prepared = runtime.prepare(workflow, options);
      return {
        ...prepared,
        run: (input, runOptions) => record(prepared.run(input, runOptions)),
        runThread: (threadId, runOptions) => record(prepared.runThread(threadId, runOptions)),
        startThread: (threadId, runOptions) => record(prepared.startThread(threadId, runOptions)),
      };
    },
  };
}

export async function startE2e(name: string): Promise<E2e> {
  const names = { tableName: `e2e-${name}`, bucketName: `e2e-${name}` };
  const services = await startLocalServices({ ephemeral: true, names });
  const clients = createAwsClients(services.target, names);
  const payloads: number[] = [];
  const runtime = recording(createLocalRuntime({ clients }), payloads);
  const thread = async (id: string) => (await fullThread(runtime.stores.threads, id)).thread;
  return {
    services,
    runtime,
    dynamoMeter: meterClient(clients.dynamo),
    s3Meter: meterClient(clients.s3),
    thread,
    conversation: async (id) => runtime.conversationOf(await thread(id)),
    payloads,
    async close() {
      await services.close();
      const largest = Math.max(0, ...payloads);
      if (largest >= PAYLOAD_LIMIT_BYTES) {
        throw new Error(`a run produced a ${largest}-byte state payload (limit ${PAYLOAD_LIMIT_BYTES})`);
      }
    },
  };
}

/**
 * Crash injection for `interceptTask`: every Task's first attempt dies right after its handler finished
 * (its writes landed), as a Lambda.ServiceException, so the definition's Retry runs it again.
 * `crashed` collects the state names that crashed.
 */
export function crashAfterFirstAttempt(crashed: string[]) {
  return async (call: TaskCall, invoke: () => Promise<unknown>) => {
    const result = await invoke();
    if (call.attempt === 1) {
      crashed.push(call.entry.stateName);
      throw Object.assign(new Error('the Lambda runtime died after the handler returned'), {
        name: 'Lambda.ServiceException',
      });
    }
    return result;
  };
}

/** A workflow checked by the validator, as the CLI would load it. */
export function valid(data: unknown): Workflow {
  const result = validateWorkflow(data);
  if (!result.valid || !result.workflow) {
    throw new Error(`invalid test workflow: ${JSON.stringify(result.errors, null, 2)}`);
  }
  return result.workflow;
}

export function example(name: string): Workflow {
  return valid(JSON.parse(readFileSync(join(ROOT, 'examples', `${name}.json`), 'utf8')));
}

/**
 * What a thread did and holds, without ids and times: a run that faults interrupted must leave its
 * threads so, as a fault-free run does. Callers add what else they compare (errors, events, ...).
 */
export function threadOutcome(thread: Thread) {
  return {
    path: thread.contextData.authorForkPathId ?? 'root',
    status: thread.status,
    step: thread.step,
    output: thread.output,
    variables: thread.variables,
    history: thread.executionHistory.map((entry) => [entry.nodeId, entry.status, entry.step]),
    // A CODE node's console output too: a step replayed or retried shows what it printed when it ran.
    results: Object.fromEntries(
      Object.entries(thread.nodeResults).map(([id, result]) => [
        id,
        [result.status, result.output, ...(result.logs === undefined ? [] : [result.logs])],
      ]),
    ),
  };
}

/** `value` with each thread's id written as its role (`<root>`, `<path>`): ids derive from the execution id. */
export function idsByRole(value: unknown, threads: readonly Thread[]): unknown {
  let text = JSON.stringify(value);
  for (const thread of threads) {
    text = text.replaceAll(thread.id, `<${thread.contextData.authorForkPathId ?? 'root'}>`);
  }
  return JSON.parse(text) as unknown;
}

/** Messages as plain `{ role, content }` (what the assertions spell out). */
export function plain(messages: readonly Message[]): { role: string; content: string }[] {
  return messages.map((message) => ({ role: message.role, content: String(message.content) }));
}

export const user = (content: string) => ({ role: 'user', content });
export const assistant = (content: string) => ({ role: 'assistant', content });
export const system = (content: string) => ({ role: 'system', content });

/**
 * What a run left that must not depend on faults, over every execution of it (continue-as-new), given
 * any of their ids: each execution's status, and each thread's outcome, error codes, event types,
 * conversation and token usage; ids named by role, so runs under different execution ids compare.
 */
export async function runState(runtime: LocalRuntime, executionId: string): Promise<unknown> {
  const { stores } = runtime;
  const chain = await executionChainOf(stores.executions, executionId);
  const rootThreadId = chain[0]?.rootThreadId;
  if (rootThreadId === undefined) throw new Error(`no execution ${executionId}`);
  const listed = await threadsOfChain(stores.threads, chain);
  const threads: Thread[] = [];
  for (const id of new Set([rootThreadId, ...listed.map((entry) => entry.thread.id)])) {
    threads.push((await fullThread(stores.threads, id)).thread);
  }
  const described = [];
  for (const thread of threads) {
    described.push({
      ...threadOutcome(thread),
      errors: thread.errors.map((error) => error.code),
      events: (thread.events ?? []).map((event) => event.type),
      conversation: plain(await runtime.conversationOf(thread)),
      tokenUsage: thread.conversation.tokenUsage,
    });
  }
  described.sort((a, b) => a.path.localeCompare(b.path) || a.status.localeCompare(b.status));
  return idsByRole({ executions: chain.map((record) => record.status), threads: described }, threads);
}
