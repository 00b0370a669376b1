/**
 * What one run of each example costs (the README's "Cost and limits"): its model calls' tokens, as the
 * scripted provider counts them (about four characters a token), priced at a real model's list price
 * by giving every profile that model's `pricing`; and the AWS side of a deployed run from the counts
 * bench/runtime.ts measures (state transitions, Lambda, DynamoDB, S3), at us-east-1 list prices.
 *
 *   npx tsx bench/example-costs.ts [--model gpt-4o-mini]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Workflow } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { listPriceOf } from '../functions/llm/prices.ts';
import { createLocalRuntime } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';
import { benchRuntime, EXAMPLE_INPUTS, PRICES, type RunFigures } from './runtime.ts';

const ROOT = join(import.meta.dirname, '..');
const MAP_REDUCE_INPUT = {
  documents: [
    { id: 'q1', text: 'Revenue up.' },
    { id: 'q2', text: 'Costs flat.' },
    { id: 'q3', text: 'Churn down.' },
  ],
};

export interface ExampleCost {
  example: string;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  modelUsd: number;
  /** A deployed run's AWS side (absent for map-reduce, which bench/map.ts measures per item). */
  awsUsd?: number;
  /** The counts it is priced from, as bench/runtime.ts measured them. */
  aws?: RunFigures;
}

function priced(workflow: Workflow, pricing: { inputPerMTok: number; outputPerMTok: number }): Workflow {
  const profiles = Object.fromEntries(
    Object.entries(workflow.profiles ?? {}).map(([name, profile]) => [name, { ...profile, pricing }]),
  );
  return { ...workflow, profiles };
}

export async function exampleCosts(model: string, lambdaMs = 100, lambdaMb = 256): Promise<ExampleCost[]> {
  const pricing = listPriceOf(model);
  if (pricing === undefined) throw new Error(`no list price for ${model} (functions/llm/prices.ts)`);
  const figures = await benchRuntime(1);
  const aws = new Map(
    figures.map((f) => {
      const reads = f.dynamoRequests - f.dynamoWriteRequests;
      const usd =
        f.stateTransitions * PRICES.transition +
        f.lambdaInvocations *
          (PRICES.lambdaRequest + (lambdaMs / 1000) * (lambdaMb / 1024) * PRICES.lambdaGbSecond) +
        reads * PRICES.dynamoRead +
        f.dynamoWriteUnits * PRICES.dynamoWrite +
        f.s3PutRequests * PRICES.s3Put;
      return [f.example, usd];
    }),
  );
  const names = { tableName: 'example-costs', bucketName: 'example-costs' };
  const services = await startLocalServices({ ephemeral: true, names });
  const costs: ExampleCost[] = [];
  try {
    const runtime = createLocalRuntime({ clients: createAwsClients(services.target, names) });
    const files = readdirSync(join(ROOT, 'examples'))
      .filter((file) => file.endsWith('.json'))
      .sort();
    for (const file of files) {
      const example = file.replace(/\.json$/, '');
      const result = validateWorkflow(JSON.parse(readFileSync(join(ROOT, 'examples', file), 'utf8')));
      if (!result.workflow) throw new Error(`${file} is invalid`);
      const input = example === 'map-reduce' ? MAP_REDUCE_INPUT : (EXAMPLE_INPUTS[example] ?? {});
      const outcome = await runtime.prepare(priced(result.workflow, pricing)).run(input, {
        answerInteraction: async () => ({ kind: 'approve' }),
        // refund-approval's MCP server starts from the examples' folder, as `run` starts it.
        workflowDir: join(ROOT, 'examples'),
      });
      const spend = await runtime.stores.spend!.get(outcome.threadId);
      costs.push({
        example,
        modelCalls: spend?.modelCalls ?? 0,
        inputTokens: spend?.inputTokens ?? 0,
        outputTokens: spend?.outputTokens ?? 0,
        toolCalls: spend?.toolCalls ?? 0,
        modelUsd: (spend?.costNanoUsd ?? 0) / 1e9,
        ...(aws.has(example)
          ? { awsUsd: aws.get(example)!, aws: figures.find((f) => f.example === example)! }
          : {}),
      });
    }
  } finally {
    await services.close();
  }
  return costs;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--model');
  const model = at >= 0 ? process.argv[at + 1]! : 'gpt-4o-mini';
  const costs = await exampleCosts(model);
  console.log(
    `| example | model calls | tokens (in / out) | tool calls | model, at ${model} | AWS, deployed |`,
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const c of costs) {
    const awsUsd = c.awsUsd === undefined ? '—' : `$${c.awsUsd.toFixed(5)}`;
    console.log(
      `| ${c.example} | ${c.modelCalls} | ${c.inputTokens + c.outputTokens} (${c.inputTokens} / ${c.outputTokens}) | ${c.toolCalls} | $${c.modelUsd.toFixed(6)} | ${awsUsd} |`,
    );
  }
}
