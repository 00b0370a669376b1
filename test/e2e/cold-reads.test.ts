/**
 * A cold read (no cached segments, as in a fresh Lambda) of a long conversation: the segments its
 * steps wrote come in parallel, named by the step records, not one GET per link of the chain.
 * Counted as waves of S3 GETs: a GET that starts while none is in flight begins a new round trip.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longRunWorkflow } from '../../bench/long-runs.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { createConversationStore, SegmentCache } from '../../functions/stores/conversation-store.ts';
import { type E2e, startE2e } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('cold-reads');
});
afterAll(() => e2e.close());

/** Every counter made, so each middleware gets a name of its own (clients are cached and shared). */
const waveCounters: Waves[] = [];

interface Waves {
  gets: number;
  waves: number;
}

/** An S3 client for the same bucket whose GetObject calls are counted in waves. */
function countingClients(): { clients: ReturnType<typeof createAwsClients>; waves: Waves } {
  const names = { tableName: 'e2e-cold-reads', bucketName: 'e2e-cold-reads' };
  const clients = createAwsClients(e2e.services.target, names);
  const waves: Waves = { gets: 0, waves: 0 };
  waveCounters.push(waves);
  let inFlight = 0;
  aroundCommands(clients.s3, async ({ commandName }, next) => {
    if (commandName !== 'GetObjectCommand') return next();
    if (inFlight === 0) waves.waves += 1;
    inFlight += 1;
    waves.gets += 1;
    try {
      return await next();
    } finally {
      inFlight -= 1;
    }
  });
  return { clients, waves };
}

describe('cold reads', () => {
  it('loads a 120-turn conversation in 2 rounds of S3 GETs (plus one Query), not one per segment', async () => {
    const turns = 120;
    const outcome = await e2e.runtime.prepare(longRunWorkflow('chat', turns)).run({});
    expect(outcome.status).toBe('COMPLETED');
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(thread.conversation.log.length).toBe(2 * turns);

    const { clients, waves } = countingClients();
    const cold = createConversationStore(clients, { cache: new SegmentCache() });
    const messages = await cold.readLog(thread.conversation.log, {
      segmentHints: () => e2e.runtime.stores.threads.segmentIds([thread.id]),
    });
    expect(messages).toHaveLength(2 * turns);
    expect(waves).toEqual({ gets: turns, waves: 2 });

    // Without hints, the same read walks the chain: one round trip per segment.
    const { clients: plainClients, waves: plain } = countingClients();
    await createConversationStore(plainClients, { cache: new SegmentCache() }).readLog(
      thread.conversation.log,
    );
    expect(plain).toEqual({ gets: turns, waves: turns });
  }, 60_000);
});
