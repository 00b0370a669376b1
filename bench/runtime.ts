/**
 * Runtime bench: runs each example N times on the embedded runtime (dynalite + s3rver, in-memory)
 * and prints, per run, wall time, state transitions, Lambda (handler) invocations, and DynamoDB /
 * S3 requests and bytes, plus those counts per node execution — the figures the deploy docs turn
 * into an AWS cost per run.
 *
 *   npx tsx bench/runtime.ts [--runs 5] [--json] [--lambda-ms 100] [--lambda-mb 256]
 *
 * Counts are exact (metered SDK clients); wall time is this machine's, local services included.
 * The conversation store's segment cache is process-wide, as in a warm Lambda container, so S3
 * reads after the first run of a workflow are mostly cache hits.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { AWS_PRICES } from '../cli/aws-cost.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createDocumentClient } from '../functions/aws/dynamo-client.ts';
import { meterClient } from '../functions/aws/meter.ts';
import { meterItemWrites } from '../functions/aws/write-meter.ts';
import { createHandlerStores } from '../functions/handlers/deps.ts';
import { createLocalRuntime } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import { itemKeys } from '../functions/stores/table.ts';

export interface RunFigures {
  example: string;
  run: number;
  status: string;
  wallMs: number;
  /** StateEntered events: what Step Functions Standard bills. */
  stateTransitions: number;
  lambdaInvocations: number;
  /** Handler invocations that executed a node (bookkeeping and failure tasks excluded). */
  nodeExecutions: number;
  dynamoRequests: number;
  dynamoWriteRequests: number;
  /** Size of the root thread's item at the end (JSON bytes): DynamoDB bills an UpdateItem by item size. */
  threadItemBytes: number;
  /** Write units billed: per write, 1 per started KB of the item written (an UpdateItem: the item after it). */
  dynamoWriteUnits: number;
  s3Requests: number;
  s3PutRequests: number;
  s3PutBytes: number;
  largestPayloadBytes: number;
}

/** The inputs the docs run the examples with (docs/cli.md, README.md). */
export const EXAMPLE_INPUTS: Record<string, Record<string, unknown>> = {
  'fork-join-research': { topic: 'our payments API' },
  'route-loop': { tickets: ['Printer jams', 'Site down', 'Typo on pricing page', 'Card payments failing'] },
  'support-triage': { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } },
  'vendor-review': { vendor: 'Acme Analytics', monthlyFee: 1200 },
  'refund-approval': { customer: 'Ada', order: 'A-17' },
};

const WRITE_COMMANDS = ['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand'];

function argument(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  const value = index >= 0 ? Number(process.argv[index + 1]) : fallback;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

export async function benchRuntime(runs: number): Promise<RunFigures[]> {
  const root = join(import.meta.dirname, '..');
  // map-reduce fans out over its input list: bench/map.ts measures it per item at 10, 100 and 1,000.
  const files = readdirSync(join(root, 'examples'))
    .filter((file) => file.endsWith('.json') && file !== 'map-reduce.json')
    .sort();
  const names = { tableName: 'bench', bucketName: 'bench' };
  const services = await startLocalServices({ ephemeral: true, names });
  const figures: RunFigures[] = [];
  try {
    const clients = createAwsClients(services.target, names);
    const dynamo = meterClient(clients.dynamo);
    const s3 = meterClient(clients.s3);
    // A client of its own reads written items back for sizing, outside the meters.
    const reader = { dynamo: createDocumentClient(services.target), tableName: names.tableName };
    const itemWrites = meterItemWrites(clients.dynamo, reader);
    // The Lambdas' stores: every step reads its thread's head, so the counts are what AWS bills.
    const runtime = createLocalRuntime({ clients, stores: createHandlerStores(clients) });
    const threadItemBytes = async (threadId: string | undefined) => {
      if (threadId === undefined) return 0;
      const { Item } = await clients.dynamo.send(
        new GetCommand({ TableName: names.tableName, Key: itemKeys.thread(threadId) }),
      );
      return JSON.stringify(Item ?? {}).length;
    };
    for (const file of files) {
      const result = validateWorkflow(JSON.parse(readFileSync(join(root, 'examples', file), 'utf8')));
      if (!result.workflow) throw new Error(`${file} is invalid`);
      const prepared = runtime.prepare(result.workflow);
      for (let run = 1; run <= runs; run += 1) {
        dynamo.reset();
        s3.reset();
        let nodeExecutions = 0;
        let dynamoWriteUnits = 0;
        itemWrites.take();
        const started = performance.now();
        const example = file.replace(/\.json$/, '');
        const outcome = await prepared.run(EXAMPLE_INPUTS[example] ?? {}, {
          // The human-in-the-loop example is approved at once, as `--answers` would.
          answerInteraction: async () => ({ kind: 'approve' }),
          // refund-approval's MCP server starts from the examples' folder, as `run` starts it.
          workflowDir: join(root, 'examples'),
          interceptTask: async (call, invoke) => {
            if (call.entry.action === 'execute' && call.attempt === 1) nodeExecutions += 1;
            const result = await invoke();
            const sizes = await itemWrites.sizes(itemWrites.take());
            dynamoWriteUnits += sizes.reduce(
              (units, bytes) => units + Math.max(1, Math.ceil(bytes / 1024)),
              0,
            );
            return result;
          },
        });
        const wallMs = performance.now() - started;
        figures.push({
          example: file.replace(/\.json$/, ''),
          run,
          status: outcome.status,
          wallMs: Math.round(wallMs * 10) / 10,
          stateTransitions: outcome.events.filter((event) => event.type === 'StateEntered').length,
          lambdaInvocations: outcome.taskInvocations,
          nodeExecutions,
          dynamoRequests: dynamo.requests(),
          dynamoWriteRequests: WRITE_COMMANDS.reduce((sum, name) => sum + dynamo.requests(name), 0),
          s3Requests: s3.requests(),
          s3PutRequests: s3.requests('PutObjectCommand'),
          s3PutBytes: s3.bytes('PutObjectCommand'),
          largestPayloadBytes: outcome.largestPayloadBytes,
          threadItemBytes: await threadItemBytes(outcome.threadId),
          dynamoWriteUnits,
        });
      }
    }
  } finally {
    await services.close();
  }
  return figures;
}

function perNode(value: number, nodes: number): string {
  return nodes === 0 ? '-' : (value / nodes).toFixed(2);
}

function printTable(figures: readonly RunFigures[]): void {
  const header = [
    'example',
    'run',
    'status',
    'wall ms',
    'transitions',
    'lambda',
    'nodes',
    'ddb req',
    'ddb/node',
    's3 req',
    's3 put',
    's3 put B',
    's3 B/node',
    'max payload B',
    'thread item B',
  ];
  const rows = figures.map((f) => [
    f.example,
    String(f.run),
    f.status,
    f.wallMs.toFixed(1),
    String(f.stateTransitions),
    String(f.lambdaInvocations),
    String(f.nodeExecutions),
    String(f.dynamoRequests),
    perNode(f.dynamoRequests, f.nodeExecutions),
    String(f.s3Requests),
    String(f.s3PutRequests),
    String(f.s3PutBytes),
    perNode(f.s3PutBytes, f.nodeExecutions),
    String(f.largestPayloadBytes),
    String(f.threadItemBytes),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padStart(widths[i]!)).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

/** us-east-1 list prices (USD) used for the cost estimate: the ones `inspect` estimates with (cli/aws-cost.ts). */
export const PRICES = AWS_PRICES;

/**
 * Cost of 1,000 node executions from the measured counts of each example's last (warm) run. Lambda
 * duration and memory are assumptions (not measurable offline), printed as such; DynamoDB write units
 * are measured from the size of every item written (reads of items under 4 KB cost one unit).
 */
function printCost(figures: readonly RunFigures[], lambdaMs: number, lambdaMb: number): void {
  const last = [...new Map(figures.map((f) => [f.example, f])).values()];
  const sum = (pick: (f: RunFigures) => number) => last.reduce((total, f) => total + pick(f), 0);
  const nodes = sum((f) => f.nodeExecutions);
  const per1000 = (value: number) => (value / nodes) * 1000;
  const transitions = per1000(sum((f) => f.stateTransitions));
  const lambdas = per1000(sum((f) => f.lambdaInvocations));
  const writes = per1000(sum((f) => f.dynamoWriteRequests));
  // Measured: every item written, read back after its Task and sized (1 unit per started KB).
  const writeUnits = per1000(sum((f) => f.dynamoWriteUnits));
  const reads = per1000(sum((f) => f.dynamoRequests - f.dynamoWriteRequests));
  const puts = per1000(sum((f) => f.s3PutRequests));
  const gets = per1000(sum((f) => f.s3Requests - f.s3PutRequests));
  const items: [string, number, number][] = [
    ['state transitions', transitions, PRICES.transition],
    ['Lambda requests', lambdas, PRICES.lambdaRequest],
    [
      `Lambda GB-s (assumed ${lambdaMs} ms at ${lambdaMb} MB)`,
      (lambdas * lambdaMs * lambdaMb) / 1024 / 1000,
      PRICES.lambdaGbSecond,
    ],
    ['DynamoDB reads', reads, PRICES.dynamoRead],
    [
      `DynamoDB write units (${writes.toFixed(0)} writes, billed by item size)`,
      writeUnits,
      PRICES.dynamoWrite,
    ],
    ['S3 PUTs', puts, PRICES.s3Put],
    ['S3 GETs (warm cache)', gets, PRICES.s3Get],
  ];
  console.log(
    `\nCost of 1,000 node executions (mix of ${last.map((f) => f.example).join(', ')}; ${nodes} nodes):`,
  );
  let total = 0;
  for (const [what, count, price] of items) {
    total += count * price;
    console.log(`  ${what.padEnd(44)} ${count.toFixed(1).padStart(8)}  $${(count * price).toFixed(5)}`);
  }
  console.log(`  ${'total'.padEnd(44)} ${''.padStart(8)}  $${total.toFixed(4)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await benchRuntime(argument('--runs', 5));
  if (process.argv.includes('--json')) console.log(JSON.stringify(figures, null, 2));
  else {
    printTable(figures);
    printCost(figures, argument('--lambda-ms', 100), argument('--lambda-mb', 256));
  }
}
