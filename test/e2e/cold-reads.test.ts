/**
 * A cold read (no cached objects, as in a fresh Lambda) of a long conversation: the head segment, then
 * the pages, tail pages and segments its cover names, then the pages those pages list — at most
 * ⌈t/32⌉ + 8 S3 GETs in 3 round trips at turn t, and no DynamoDB request.
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

interface Waves {
  gets: number;
  waves: number;
}

/** An S3 client for the same bucket whose GetObject calls are counted in waves. */
function countingClients(): { clients: ReturnType<typeof createAwsClients>; waves: Waves } {
  const names = { tableName: 'e2e-cold-reads', bucketName: 'e2e-cold-reads' };
  const clients = createAwsClients(e2e.services.target, names);
  const waves: Waves = { gets: 0, waves: 0 };
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
  it('loads a 120-turn conversation with ⌈t/32⌉ + 8 GETs at most, in 3 rounds, without a Query', async () => {
    const turns = 120;
    const outcome = await e2e.runtime.prepare(longRunWorkflow('chat', turns)).run({});
    expect(outcome.status).toBe('COMPLETED');
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(thread.conversation.log.length).toBe(2 * turns);

    const { clients, waves } = countingClients();
    const cold = createConversationStore(clients, { cache: new SegmentCache() });
    let hinted = 0;
    const messages = await cold.readLog(thread.conversation.log, {
      // What the handlers pass for logs written before pages (a Query of the step records): unused here.
      segmentHints: () => {
        hinted += 1;
        return e2e.runtime.stores.threads.segmentIds([thread.id]);
      },
    });
    expect(messages).toHaveLength(2 * turns);
    // 3 pages (turns 1–96), 4 tail pages (97–116), turns 117–119 and the head.
    expect(waves).toEqual({ gets: 11, waves: 3 });
    expect(waves.gets).toBeLessThanOrEqual(Math.ceil(turns / 32) + 8);
    expect(hinted).toBe(0);
  }, 60_000);
});
