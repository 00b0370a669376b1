/**
 * Counting, not timing: forking a long conversation into 4 paths and joining it back writes the same
 * S3 bytes as a short one (fork and join move pointers, never message bodies), and no state payload
 * grows with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandUsage } from '../../functions/aws/meter.ts';
import type { TaskCall } from '../../functions/local/runtime.ts';
import { type E2e, PAYLOAD_LIMIT_BYTES, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('counting');
});
afterAll(() => e2e.close());

const PATHS = ['a', 'b', 'c', 'd'];

function longConversationWorkflow(messages: number) {
  const byNode = Object.fromEntries(PATHS.map((path) => [`${path}-work`, [`${path} done`]]));
  return valid({
    id: `long-${messages}`,
    version: 1,
    profiles: { default: { provider: 'scripted', byNode } },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'seed',
        type: 'CONTEXT_PROCESSOR',
        config: {
          operation: 'insert',
          insert: {
            position: 0,
            messages: Array.from({ length: messages }, (_, i) => ({
              role: i % 2 === 0 ? 'user' : 'assistant',
              content: `message number ${i} of the long conversation`,
            })),
          },
        },
      },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: PATHS, forkStrategy: 'parallel', childNodeIds: PATHS.map((p) => `${p}-work`) },
      },
      ...PATHS.map((path) => ({ id: `${path}-work`, type: 'LLM', config: { prompt: `work on ${path}` } })),
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: PATHS, joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId: 'c' },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'seed' },
      { from: 'seed', to: 'split' },
      ...PATHS.map((path) => ({ from: `${path}-work`, to: 'merge' })),
      { from: 'merge', to: 'end' },
    ],
  });
}

type Usage = Readonly<Record<string, CommandUsage>>;

function diff(after: Usage, before: Usage): { requests: number; bytes: number; puts: number } {
  let requests = 0;
  let bytes = 0;
  for (const [name, usage] of Object.entries(after)) {
    requests += usage.requests - (before[name]?.requests ?? 0);
    bytes += usage.bytes - (before[name]?.bytes ?? 0);
  }
  const puts = (after.PutObjectCommand?.requests ?? 0) - (before.PutObjectCommand?.requests ?? 0);
  return { requests, bytes, puts };
}

/** Runs the workflow and meters everything from the FORK's first invocation to the JOIN's return. */
async function forkToJoinUsage(messages: number) {
  let s3Before: Usage = {};
  let dynamoBefore: Usage = {};
  let s3After: Usage = {};
  let dynamoAfter: Usage = {};
  const interceptTask = async (call: TaskCall, invoke: () => Promise<unknown>) => {
    if (call.entry.nodeId === 'split' && call.entry.action === 'execute') {
      s3Before = e2e.s3Meter.snapshot();
      dynamoBefore = e2e.dynamoMeter.snapshot();
    }
    const result = await invoke();
    if (call.entry.nodeId === 'merge' && call.entry.action === 'execute') {
      s3After = e2e.s3Meter.snapshot();
      dynamoAfter = e2e.dynamoMeter.snapshot();
    }
    return result;
  };
  const outcome = await e2e.runtime.prepare(longConversationWorkflow(messages)).run({}, { interceptTask });
  expect(outcome.status).toBe('COMPLETED');
  const conversation = await e2e.conversation(outcome.threadId);
  expect(conversation).toHaveLength(messages + 2);
  expect(conversation.at(-1)?.content).toBe('c done');
  return { outcome, s3: diff(s3After, s3Before), dynamo: diff(dynamoAfter, dynamoBefore) };
}

describe('fork/join cost does not grow with the conversation', () => {
  it('writes the same S3 bytes and DynamoDB requests for 10 and 10,000 messages', async () => {
    const short = await forkToJoinUsage(10);
    const long = await forkToJoinUsage(10_000);
    // One segment per path (its prompt and reply), nothing for fork or join themselves.
    expect(short.s3.puts).toBe(PATHS.length);
    expect(long.s3.puts).toBe(PATHS.length);
    // Segments name their predecessor and base offset: a few more digits, never the log.
    expect(Math.abs(long.s3.bytes - short.s3.bytes)).toBeLessThanOrEqual(64);
    expect(long.dynamo.requests).toBe(short.dynamo.requests);
    expect(Math.abs(long.dynamo.bytes - short.dynamo.bytes)).toBeLessThanOrEqual(512);
    expect(short.outcome.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
    expect(long.outcome.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
    expect(Math.abs(long.outcome.largestPayloadBytes - short.outcome.largestPayloadBytes)).toBeLessThan(64);
  });
});
