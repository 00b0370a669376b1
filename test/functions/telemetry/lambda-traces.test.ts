/**
 * The Lambda path of OpenTelemetry traces (issue 27): the deployed handlers (functions/handlers/*.ts,
 * `handler` as the Lambda runtime calls it, stores from the environment) invoked with the Task inputs
 * a definition compiled with `traceContext` gives them, one state after the other as Step Functions
 * would, the execution input carrying a caller's `traceparent`. Each invocation has exported its spans
 * by the time it returns (forceFlush), to a local OTLP/HTTP receiver; together they make one trace:
 * the caller's span → the run → its steps → a fork branch's steps under the FORK's step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import { createAwsClients } from '../../../functions/aws/clients.ts';
import { handler as end } from '../../../functions/handlers/end.ts';
import { handler as fork } from '../../../functions/handlers/fork.ts';
import { handler as join } from '../../../functions/handlers/join.ts';
import { handler as llm } from '../../../functions/handlers/llm.ts';
import { handler as start } from '../../../functions/handlers/start.ts';
import { type LocalServices, startLocalServices } from '../../../functions/local/services.ts';
import { putNodeTable } from '../../../functions/stores/node-tables.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../../support/otlp-receiver.ts';

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const EXECUTION = 'arn:aws:states:us-east-1:123456789012:execution:traced:run-1';

const workflow: Workflow = {
  id: 'lambda-traced',
  version: 1,
  profiles: { default: { provider: 'scripted', responses: ['ok'] } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'plan', type: 'LLM', config: { prompt: 'Plan' } },
    {
      id: 'split',
      type: 'FORK',
      config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a', 'b'] },
    },
    { id: 'a', type: 'LLM', config: { prompt: 'Branch a' } },
    { id: 'b', type: 'LLM', config: { prompt: 'Branch b' } },
    {
      id: 'merge',
      type: 'JOIN',
      config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'a' },
    },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'plan' },
    { from: 'plan', to: 'split' },
    { from: 'a', to: 'merge' },
    { from: 'b', to: 'merge' },
    { from: 'merge', to: 'end' },
  ],
} as Workflow;

type States = Record<string, { Parameters?: Record<string, unknown>; Branches?: { States: States }[] }>;

/** A Task state's static Parameters (the `.$` paths are what the test fills in). */
function staticParameters(states: States, name: string): Record<string, unknown> {
  const parameters = states[name]?.Parameters;
  if (parameters === undefined) throw new Error(`no state ${name}`);
  return Object.fromEntries(Object.entries(parameters).filter(([key]) => !key.endsWith('.$')));
}

/** What a branch's entry Pass state makes of the FORK's output, by its Parameters' paths. */
function passEnvelope(parameters: Record<string, unknown>, input: Envelope): Envelope {
  const read = (path: string): unknown => {
    let value: unknown = input;
    for (const part of path
      .replace(/^\$\./, '')
      .split(/\.|\[(\d+)\]/)
      .filter(Boolean)) {
      value = (value as Record<string, unknown>)[part];
    }
    return value;
  };
  return Object.fromEntries(
    Object.entries(parameters).map(([key, value]) =>
      key.endsWith('.$') ? [key.slice(0, -2), read(String(value))] : [key, value],
    ),
  ) as unknown as Envelope;
}

const context = { awsRequestId: 'request-1' };
const invoke = async (fn: typeof start, event: unknown): Promise<Envelope> =>
  (await fn(event, context as never)) as Envelope;

let services: LocalServices;
let receiver: OtlpReceiver;
const VARIABLES = {
  STEPTHREAD_TABLE: 'traced',
  STEPTHREAD_BUCKET: 'traced',
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  // Batches held until the flush: a span seen after an invocation was flushed by it.
  OTEL_BSP_SCHEDULE_DELAY: '600000',
} as const;
const saved: Record<string, string | undefined> = {};
beforeAll(async () => {
  services = await startLocalServices({
    ephemeral: true,
    names: { tableName: 'traced', bucketName: 'traced' },
  });
  receiver = await startOtlpReceiver();
  const variables: Record<string, string> = {
    ...VARIABLES,
    STEPTHREAD_DYNAMODB_ENDPOINT: services.target.dynamoEndpoint!,
    STEPTHREAD_S3_ENDPOINT: services.target.s3Endpoint!,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  };
  for (const [key, value] of Object.entries(variables)) {
    saved[key] = process.env[key];
    process.env[key] = value;
  }
});
afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  await receiver?.close();
  await services?.close();
});

describe('traces from the Lambda handlers', () => {
  it('one trace for the execution, in the caller’s, carried through the state payload into fork branches', async () => {
    const compiled = compileWorkflow(workflow, { traceContext: true });
    const states = compiled.definition.States as unknown as States;
    // What the deploy does: the Tasks name their nodes in this table, which the handlers read from S3.
    await putNodeTable(createAwsClients(services.target).s3, 'traced', compiled.nodeTable);
    const spanCount = () => receiver.spans.length;

    const started = await invoke(start, {
      ...staticParameters(states, 'start'),
      executionId: EXECUTION,
      input: { input: {}, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    });
    // Flushed before the invocation returned.
    expect(receiver.spans.map((span) => span.name)).toEqual(['step start']);
    expect(started.traceparent).toMatch(new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-01$`));

    const planned = await invoke(llm, { ...staticParameters(states, 'plan'), envelope: started });
    expect(planned.traceparent).toBe(started.traceparent);
    const forked = await invoke(fork, { ...staticParameters(states, 'split'), envelope: planned });
    expect(forked.fork?.traceparent).toMatch(new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-01$`));

    const branches = states['split:paths']!.Branches!;
    let joinEnd: { Error: string; Cause: string } | undefined;
    for (const [index, path] of (['a', 'b'] as const).entries()) {
      const branch = branches[index]!.States;
      const entry = passEnvelope(branch[`split:${path}`]!.Parameters!, forked);
      expect(entry.traceparent).toBe(forked.fork?.traceparent);
      // The path's one node reports the path to the JOIN itself (its Task carries `report`).
      const reported = (await invoke(llm, { ...staticParameters(branch, path), envelope: entry })) as {
        joinDecided?: string;
      };
      // The last branch decides the join: its Fail state raises JoinDecided, which the Parallel's Catch
      // hands the JOIN at $.joinEnd.
      if (reported.joinDecided !== undefined)
        joinEnd = { Error: 'stepthread.JoinDecided', Cause: 'JOIN merge decided' };
    }
    expect(joinEnd).toBeDefined();
    const merged = await invoke(join, {
      ...staticParameters(states, 'merge'),
      envelope: { ...forked, joinEnd },
    });
    const before = spanCount();
    await invoke(end, { ...staticParameters(states, 'end'), envelope: merged });
    expect(spanCount()).toBeGreaterThan(before);

    const spans = receiver.spans;
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([CALLER_TRACE]));
    const named = (name: string): ReceivedSpan[] => spans.filter((span) => span.name === name);
    const [run] = named('invoke_workflow lambda-traced');
    expect(run?.parentSpanId).toBe(CALLER_SPAN);
    expect(started.traceparent).toBe(`00-${CALLER_TRACE}-${run!.spanId}-01`);
    expect(run!.attributes).toMatchObject({
      'stepthread.execution.id': EXECUTION,
      'stepthread.run.status': 'COMPLETED',
    });

    const stepOf = (node: string): ReceivedSpan[] => named(`step ${node}`);
    for (const node of ['start', 'plan', 'split', 'merge', 'end']) {
      expect(
        stepOf(node).map((span) => span.parentSpanId),
        node,
      ).toEqual([run!.spanId]);
    }
    const split = stepOf('split')[0]!;
    expect(forked.fork?.traceparent).toBe(`00-${CALLER_TRACE}-${split.spanId}-01`);
    for (const node of ['a', 'b']) {
      expect(
        stepOf(node).map((span) => span.parentSpanId),
        node,
      ).toEqual([split.spanId]);
    }
    // The model calls, under their steps.
    const chats = named('chat scripted');
    expect(chats).toHaveLength(3);
    const steps = new Set(['plan', 'a', 'b'].map((node) => stepOf(node)[0]!.spanId));
    for (const chat of chats) {
      expect(steps.has(chat.parentSpanId)).toBe(true);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'stepthread.scripted',
        'gen_ai.response.finish_reasons': ['stop'],
        'stepthread.usage.estimated': true,
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
    }
  }, 60_000);
});
