/**
 * Fan-out cost: examples/map-reduce.json (an LLM per document on its own item thread → JOIN → an LLM
 * summary) over N documents on the embedded runtime, with metered SDK clients. Prints, per N, the
 * time and the requests, bytes and payload bytes per item; the per-item figures should not grow with N.
 *
 *   npx tsx bench/map.ts [--n 10,100,1000] [--distributed] [--json]
 *
 * test/e2e/map.test.ts asserts the same counts (never times).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Workflow } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { type Meter, meterClient } from '../functions/aws/meter.ts';
import { createHandlerStores } from '../functions/handlers/deps.ts';
import { createLocalRuntime, type RunOutcome } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';

const WRITE_COMMANDS = ['PutItemCommand', 'UpdateItemCommand', 'BatchWriteItemCommand', 'DeleteItemCommand'];
const READ_COMMANDS = ['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand'];

export function mapReduceWorkflow(): Workflow {
  const path = join(import.meta.dirname, '..', 'examples', 'map-reduce.json');
  const result = validateWorkflow(JSON.parse(readFileSync(path, 'utf8')));
  if (!result.workflow) throw new Error(`invalid map-reduce example: ${JSON.stringify(result.errors)}`);
  return result.workflow;
}

/** The same workflow with its FORK over a list in `distributed` mode (a Distributed Map). */
export function distributedVariant(workflow: Workflow): Workflow {
  return {
    ...workflow,
    nodes: workflow.nodes.map((node) =>
      node.type === 'FORK' && node.config.forEach !== undefined
        ? { ...node, config: { ...node.config, mode: 'distributed' as const } }
        : node,
    ),
  };
}

/** N documents of about 120 bytes each. */
export function documents(n: number): { id: string; text: string }[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `d${i}`,
    text: `Document ${i}: quarterly notes on service health, incidents and the plans for the next release.`,
  }));
}

export interface MapRun {
  readonly items: number;
  readonly outcome: RunOutcome;
  readonly wallMs: number;
  readonly dynamoWrites: number;
  /** Request bytes of the writes (what was sent; items are sized as billed by bench/long-runs.ts). */
  readonly dynamoWriteBytes: number;
  readonly dynamoReads: number;
  readonly s3Puts: number;
  readonly s3PutBytes: number;
  readonly s3Gets: number;
  /** Sum of every state input and output, as JSON bytes. */
  readonly payloadBytes: number;
  readonly largestPayloadBytes: number;
  /** The largest state input or output, leaving out the local stand-in of a Distributed Map. */
  readonly largestAwsPayloadBytes: number;
  /** The largest input or output of a state running on an item's thread. */
  readonly largestItemPayloadBytes: number;
  readonly taskInvocations: number;
  readonly stateTransitions: number;
}

function sum(meter: Meter, names: readonly string[], what: 'requests' | 'bytes'): number {
  return names.reduce((total, name) => total + meter[what](name), 0);
}

function jsonBytes(value: unknown): number {
  return value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/**
 * A payload as Step Functions would carry it: the local stand-in of a Distributed Map's ItemReader
 * puts the item list at `fork.localItems`, which then rides along to the states after the Map.
 */
function awsBytes(value: unknown): number {
  const fork = (value as { fork?: { localItems?: unknown } } | undefined)?.fork;
  if (fork?.localItems === undefined) return jsonBytes(value);
  const { localItems: _items, ...rest } = fork;
  return jsonBytes({ ...(value as object), fork: rest });
}

/** Runs map-reduce over `n` documents on fresh in-memory services. */
export async function runMapReduce(n: number, workflow: Workflow = mapReduceWorkflow()): Promise<MapRun> {
  const names = { tableName: `map-${n}`, bucketName: `map-${n}` };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    const clients = createAwsClients(services.target, names);
    const dynamo = meterClient(clients.dynamo);
    const s3 = meterClient(clients.s3);
    // The Lambdas' stores: every step reads its thread's head, so the counts are what AWS bills.
    const runtime = createLocalRuntime({
      clients,
      stores: createHandlerStores(clients),
      continueAfterEvents: false,
    });
    const prepared = runtime.prepare(workflow);
    dynamo.reset();
    s3.reset();
    const started = performance.now();
    const outcome = await prepared.run({ documents: documents(n) });
    const wallMs = performance.now() - started;
    let payloadBytes = 0;
    let stateTransitions = 0;
    let largestItemPayloadBytes = 0;
    let largestAwsPayloadBytes = 0;
    // The local stand-in of a Distributed Map (an S3 read into the state, then `<name> (local)`) holds
    // the item list in its payload; on AWS the ItemReader reads it inside the Map.
    const localOnly = new Set(
      outcome.events.flatMap((event) =>
        event.stateName?.endsWith(' (local)')
          ? [event.stateName, event.stateName.slice(0, -' (local)'.length)]
          : [],
      ),
    );
    for (const event of outcome.events) {
      // Iteration and branch events carry their Map's or Parallel's input locally; Step Functions'
      // history does not, and they are no state's payload.
      if (event.type.startsWith('MapIteration') || event.type.startsWith('ParallelBranch')) continue;
      payloadBytes += jsonBytes(event.input) + jsonBytes(event.output);
      if (!localOnly.has(event.stateName ?? '')) {
        largestAwsPayloadBytes = Math.max(
          largestAwsPayloadBytes,
          awsBytes(event.input),
          awsBytes(event.output),
        );
      }
      const thread = (event.input as { threadId?: unknown } | undefined)?.threadId;
      if (typeof thread === 'string' && thread !== outcome.threadId) {
        largestItemPayloadBytes = Math.max(
          largestItemPayloadBytes,
          jsonBytes(event.input),
          jsonBytes(event.output),
        );
      }
      if (event.type === 'StateEntered') stateTransitions += 1;
    }
    return {
      items: n,
      outcome,
      wallMs,
      dynamoWrites: sum(dynamo, WRITE_COMMANDS, 'requests'),
      dynamoWriteBytes: sum(dynamo, WRITE_COMMANDS, 'bytes'),
      dynamoReads: sum(dynamo, READ_COMMANDS, 'requests'),
      s3Puts: s3.requests('PutObjectCommand'),
      s3PutBytes: s3.bytes('PutObjectCommand'),
      s3Gets: s3.requests('GetObjectCommand'),
      payloadBytes,
      largestPayloadBytes: outcome.largestPayloadBytes,
      largestItemPayloadBytes,
      largestAwsPayloadBytes,
      taskInvocations: outcome.taskInvocations,
      stateTransitions,
    };
  } finally {
    await services.close();
  }
}

/** Cost of one more item: the difference between two runs, per item of difference. */
export function perItem(small: MapRun, large: MapRun, key: keyof Omit<MapRun, 'outcome'>): number {
  return ((large[key] as number) - (small[key] as number)) / (large.items - small.items);
}

function parseSizes(): number[] {
  const index = process.argv.indexOf('--n');
  const list = index >= 0 ? (process.argv[index + 1] ?? '') : '10,100,1000';
  return list
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

async function main(): Promise<void> {
  const rows = [];
  for (const n of parseSizes()) {
    const workflow = process.argv.includes('--distributed')
      ? distributedVariant(mapReduceWorkflow())
      : mapReduceWorkflow();
    const run = await runMapReduce(n, workflow);
    if (run.outcome.status !== 'COMPLETED') throw new Error(`${n} items: ${run.outcome.status}`);
    const per = (value: number) => Math.round((value / n) * 100) / 100;
    rows.push({
      items: n,
      ms: Math.round(run.wallMs),
      msPerItem: per(run.wallMs),
      taskInvocationsPerItem: per(run.taskInvocations),
      stateTransitionsPerItem: per(run.stateTransitions),
      dynamoWritesPerItem: per(run.dynamoWrites),
      dynamoWriteBytesPerItem: per(run.dynamoWriteBytes),
      dynamoReadsPerItem: per(run.dynamoReads),
      s3PutsPerItem: per(run.s3Puts),
      s3PutBytesPerItem: per(run.s3PutBytes),
      s3GetsPerItem: per(run.s3Gets),
      payloadBytesPerItem: per(run.payloadBytes),
      largestPayloadBytes: run.largestPayloadBytes,
    });
  }
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(rows, null, 2));
    return;
  }
  console.log(
    '| items | time | ms / item | Lambda invocations / item | state transitions / item | DynamoDB writes / item | write request bytes / item | DynamoDB reads / item | S3 PUTs / item | S3 PUT bytes / item | S3 GETs / item | payload bytes / item | largest payload |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.items} | ${(r.ms / 1000).toFixed(1)} s | ${r.msPerItem} | ${r.taskInvocationsPerItem} | ${r.stateTransitionsPerItem} | ${r.dynamoWritesPerItem} | ${r.dynamoWriteBytesPerItem} | ${r.dynamoReadsPerItem} | ${r.s3PutsPerItem} | ${r.s3PutBytesPerItem} | ${r.s3GetsPerItem} | ${r.payloadBytesPerItem} | ${r.largestPayloadBytes.toLocaleString('en-US')} B |`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
