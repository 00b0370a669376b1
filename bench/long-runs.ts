/**
 * Long runs: what one step costs as a run grows, on the embedded runtime with the handlers' own code.
 * Two workloads, each turn a ~1 KB prompt and a ~1 KB reply (2 KB of raw message text):
 * - chain: START → T distinct LLM nodes → END;
 * - chat: START → LOOP_START → LLM → LOOP_END (T iterations) → END.
 * Per step it records DynamoDB writes (item sizes as billed, UpdateItem after the write), S3 PUTs
 * and GETs; it prints the figures at chosen steps, totals against raw message bytes, and time.
 *
 *   npx tsx bench/long-runs.ts [--t 10,100,320,1000] [--json]
 *
 * The test test/e2e/constant-cost.test.ts asserts the bounds on the same workloads (counts only).
 */

import { S3Client } from '@aws-sdk/client-s3';
import type { Workflow } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createDocumentClient } from '../functions/aws/dynamo-client.ts';
import { aroundCommands, type Meter, meterClient } from '../functions/aws/meter.ts';
import { type AwsTarget, clientConfig } from '../functions/aws/target.ts';
import { meterItemWrites } from '../functions/aws/write-meter.ts';
import { createHandlerStores } from '../functions/handlers/deps.ts';
import { createLocalRuntime, type RunOutcome } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import {
  createConversationStore,
  PAGE_PREFIX,
  SEGMENT_PREFIX,
  SegmentCache,
} from '../functions/stores/conversation-store.ts';
import { createThreadStore } from '../functions/stores/thread-store.ts';

/** ~1 KB of prompt text (a variable, so the workflow file stays small) and a 1 KB reply. */
const FILLER = 'lorem ipsum '.repeat(85).slice(0, 1000);
const REPLY = 'The answer, at length: '.padEnd(1024, 'z');

export type Workload = 'chain' | 'chat';

export function longRunWorkflow(workload: Workload, turns: number): Workflow {
  const common = {
    version: 1,
    maxSteps: 3 * turns + 10,
    variables: [{ name: 'filler', type: 'string', scope: 'thread', initial: FILLER }],
    profiles: { default: { provider: 'scripted', responses: [REPLY] } },
  };
  const raw =
    workload === 'chain'
      ? {
          ...common,
          id: `chain-${turns}`,
          nodes: [
            { id: 'start', type: 'START' },
            ...Array.from({ length: turns }, (_, i) => ({
              id: `n${i + 1}`,
              type: 'LLM',
              config: { prompt: `{{filler}} node ${i + 1}` },
            })),
            { id: 'end', type: 'END' },
          ],
          edges: ['start', ...Array.from({ length: turns }, (_, i) => `n${i + 1}`), 'end']
            .slice(1)
            .map((to, i, all) => ({ from: i === 0 ? 'start' : all[i - 1]!, to })),
        }
      : {
          ...common,
          id: `chat-${turns}`,
          nodes: [
            { id: 'start', type: 'START' },
            { id: 'turns', type: 'LOOP_START', config: { loopId: 'chat', maxIterations: turns } },
            { id: 'chat', type: 'LLM', config: { prompt: '{{filler}} turn {{index}}' } },
            { id: 'next', type: 'LOOP_END', config: { loopId: 'chat' } },
            { id: 'end', type: 'END' },
          ],
          edges: [
            { from: 'start', to: 'turns' },
            { from: 'turns', to: 'chat' },
            { from: 'chat', to: 'next' },
            { from: 'next', to: 'end' },
          ],
        };
  const result = validateWorkflow(raw);
  if (!result.workflow) throw new Error(`invalid ${workload} workflow: ${JSON.stringify(result.errors)}`);
  return result.workflow;
}

/** What one node step cost. */
export interface StepCost {
  /** 1-based, in execution order. */
  readonly step: number;
  readonly state: string;
  readonly dynamoWrites: number;
  /** Sum of the written items' sizes: what DynamoDB bills the step's writes by. */
  readonly dynamoWriteBytes: number;
  /** The largest single item written. */
  readonly largestItemBytes: number;
  readonly dynamoReads: number;
  readonly s3Puts: number;
  readonly s3PutBytes: number;
  /** Of those, the bytes of a page or tail page the step filled (stored gzipped), beside its segment. */
  readonly pagePutBytes: number;
  readonly s3Gets: number;
}

/** A cold read of the run's conversation at its end (no cached objects, as in a fresh Lambda). */
export interface ColdRead {
  readonly messages: number;
  /** Segments the log holds: the turn t of the bound ⌈t/32⌉ + 8. */
  readonly segments: number;
  readonly s3Gets: number;
  /** Rounds of GETs: a GET that starts while none is in flight begins one. */
  readonly rounds: number;
  readonly dynamoQueries: number;
}

export interface LongRun {
  readonly outcome: RunOutcome;
  readonly steps: StepCost[];
  readonly coldRead: ColdRead;
  /** Raw message text written by the run (prompts + replies). */
  readonly rawMessageBytes: number;
  readonly wallMs: number;
}

const READ_COMMANDS = ['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand'];

function count(meter: Meter, names: readonly string[]): number {
  return names.reduce((sum, name) => sum + meter.requests(name), 0);
}

/** Runs a workload on fresh in-memory services, metering every node step. */
export async function runLongRun(workload: Workload, turns: number): Promise<LongRun> {
  const names = { tableName: `long-${workload}`, bucketName: `long-${workload}` };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    const clients = createAwsClients(services.target, names);
    // A client of its own reads written items back for sizing, outside the meters.
    const reader = { dynamo: createDocumentClient(services.target), tableName: names.tableName };
    const dynamo = meterClient(clients.dynamo);
    const s3 = meterClient(clients.s3);
    const writes = meterItemWrites(clients.dynamo, reader);
    let pagePutBytes = 0;
    const segmentsWritten = new Set<string>();
    aroundCommands(clients.s3, ({ commandName, input }, next) => {
      const { Key, Body } = input as { Key?: string; Body?: string | Uint8Array };
      if (commandName === 'PutObjectCommand' && Key?.startsWith(PAGE_PREFIX)) {
        pagePutBytes += typeof Body === 'string' ? Buffer.byteLength(Body) : (Body?.byteLength ?? 0);
      } else if (commandName === 'PutObjectCommand' && Key?.startsWith(SEGMENT_PREFIX)) {
        segmentsWritten.add(Key);
      }
      return next();
    });
    // The Lambdas' stores: every step reads its thread's head, so the counts are what AWS bills.
    const runtime = createLocalRuntime({ clients, stores: createHandlerStores(clients) });
    // The chain repeats its scripted profile, 1 KB reply included, in each of its T nodes: 1.77 MB at
    // T=1,000, past Step Functions' 1 MiB, where a real provider's ~100-byte profile would fit. What a
    // step writes does not depend on the definition's size, so the measurement lifts the check.
    const prepared = runtime.prepare(longRunWorkflow(workload, turns), { maxDefinitionBytes: 8 * 1048576 });
    const steps: StepCost[] = [];
    const started = performance.now();
    const outcome = await prepared.run(
      {},
      {
        interceptTask: async (call, invoke) => {
          dynamo.reset();
          s3.reset();
          writes.take();
          pagePutBytes = 0;
          const result = await invoke();
          const written = writes.take();
          const sizes = await writes.sizes(written);
          steps.push({
            step: steps.length + 1,
            state: call.entry.stateName,
            dynamoWrites: written.length,
            dynamoWriteBytes: sizes.reduce((a, b) => a + b, 0),
            largestItemBytes: Math.max(0, ...sizes),
            dynamoReads: count(dynamo, READ_COMMANDS),
            s3Puts: s3.requests('PutObjectCommand'),
            s3PutBytes: s3.bytes('PutObjectCommand'),
            pagePutBytes,
            s3Gets: s3.requests('GetObjectCommand'),
          });
          return result;
        },
      },
    );
    const wallMs = performance.now() - started;
    const coldRead = await measureColdRead(services.target, names, outcome.threadId, segmentsWritten.size);
    const rawMessageBytes = turns * (FILLER.length + ` node ${turns}`.length + REPLY.length);
    return { outcome, steps, coldRead, rawMessageBytes, wallMs };
  } finally {
    await services.close();
  }
}

/** Reads the thread's conversation through fresh clients and an empty cache, counting requests. */
async function measureColdRead(
  target: AwsTarget,
  names: { tableName: string; bucketName: string },
  threadId: string,
  segments: number,
): Promise<ColdRead> {
  const s3 = new S3Client(clientConfig(target, 's3'));
  const dynamo = createDocumentClient(target);
  let rounds = 0;
  let inFlight = 0;
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'GetObjectCommand') return next(args);
      if (inFlight === 0) rounds += 1;
      inFlight += 1;
      try {
        return await next(args);
      } finally {
        inFlight -= 1;
      }
    },
    { step: 'initialize', name: 'coldReadRounds' },
  );
  const s3Meter = meterClient(s3);
  const dynamoMeter = meterClient(dynamo);
  const threads = createThreadStore({ dynamo, tableName: names.tableName });
  const { thread } = await threads.getThread(threadId);
  dynamoMeter.reset();
  const conversations = createConversationStore(
    { s3, bucketName: names.bucketName },
    { cache: new SegmentCache() },
  );
  const messages = await conversations.readLog(thread.conversation.log, {
    segmentHints: () => threads.segmentIds([threadId]),
  });
  return {
    messages: messages.length,
    segments,
    s3Gets: s3Meter.requests('GetObjectCommand'),
    rounds,
    dynamoQueries: dynamoMeter.requests('QueryCommand'),
  };
}

/** Total bytes a run wrote: DynamoDB item sizes plus S3 object bytes. */
export function totalBytes(run: LongRun): number {
  return run.steps.reduce((sum, step) => sum + step.dynamoWriteBytes + step.s3PutBytes, 0);
}

function parseTurns(): number[] {
  const index = process.argv.indexOf('--t');
  const list = index >= 0 ? (process.argv[index + 1] ?? '') : '10,100,320,1000';
  return list
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const rows = [];
  for (const workload of ['chain', 'chat'] as const) {
    for (const turns of parseTurns()) {
      const run = await runLongRun(workload, turns);
      if (run.outcome.status !== 'COMPLETED') throw new Error(`${workload} ${turns}: ${run.outcome.status}`);
      // The LLM steps: the ones whose cost could grow with the conversation.
      const llm = run.steps.filter((step) => step.state === 'chat' || /^n\d+$/.test(step.state));
      const at = (n: number) => llm[Math.min(n, llm.length) - 1]!;
      const last = at(turns);
      const total = totalBytes(run);
      rows.push({
        workload,
        turns,
        steps: run.steps.length,
        lastStepDynamoBytes: last.dynamoWriteBytes,
        lastStepDynamoWrites: last.dynamoWrites,
        lastStepS3PutBytes: last.s3PutBytes,
        lastStepPageBytes: last.pagePutBytes,
        lastStepReads: last.dynamoReads,
        totalBytes: total,
        rawMessageBytes: run.rawMessageBytes,
        bytesPerRaw: Math.round((total / run.rawMessageBytes) * 100) / 100,
        coldRead: run.coldRead,
        msPerStep: Math.round((run.wallMs / run.steps.length) * 100) / 100,
      });
    }
  }
  if (json) {
    console.log(JSON.stringify(rows, null, 2));
    return;
  }
  console.log(
    '| workload | T | node steps | DynamoDB bytes, last LLM step | writes | S3 PUT bytes (of which a page) | reads | total bytes | raw message bytes | total / raw | ms / step | cold read at T: S3 GETs (bound) / rounds / Queries |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const r of rows) {
    const bound = Math.ceil(r.coldRead.segments / 32) + 8;
    const cold = `${r.coldRead.s3Gets} (${bound}) / ${r.coldRead.rounds} / ${r.coldRead.dynamoQueries}`;
    const put = `${r.lastStepS3PutBytes}${r.lastStepPageBytes > 0 ? ` (${r.lastStepPageBytes})` : ''}`;
    console.log(
      `| ${r.workload} | ${r.turns} | ${r.steps} | ${r.lastStepDynamoBytes} | ${r.lastStepDynamoWrites} | ${put} | ${r.lastStepReads} | ${r.totalBytes.toLocaleString('en-US')} | ${r.rawMessageBytes.toLocaleString('en-US')} | ${r.bytesPerRaw} | ${r.msPerStep} | ${cold} |`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
