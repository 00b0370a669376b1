/**
 * A process can die between any two of its store requests. For every request of a fault-free run in
 * turn, the run dies there — the request never sent, or sent and landed with its answer never read —
 * and a fresh runtime resumes the run; the final state must equal the fault-free run's. Exhaustive
 * where resume.test.ts samples (real processes killed at random moments): that test found a window
 * (a FORK child's head written, its listing not) that only this one names every time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileAnswers } from '../../cli/answers.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { createWireDocumentClient, createWireS3Client } from '../../functions/aws/wire-clients.ts';
import { createLocalRuntime, type RunOptions } from '../../functions/local/runtime.ts';
import { type LocalServices, startLocalServices } from '../../functions/local/services.ts';
import { executionChainOf } from '../../functions/stores/execution-chain.ts';
import { example, runState, valid } from './helpers.ts';
import { counterWorkflow, countingLoop, twoSubgraphs } from './workflows.ts';

const names = { tableName: 'e2e-die-at', bucketName: 'e2e-die-at' };
let services: LocalServices;
let shared: AwsClients;
beforeAll(async () => {
  services = await startLocalServices({ ephemeral: true, names });
  shared = createAwsClients(services.target, names);
});
afterAll(() => services.close());

/** Clients of their own (the shared ones are cached), so one run's death does not reach another's. */
function ownClients(): AwsClients {
  return {
    ...shared,
    dynamo: createWireDocumentClient(services.target.dynamoEndpoint),
    s3: createWireS3Client(services.target.s3Endpoint),
  };
}

/** How the process dies at its `at`-th request. */
type Death = 'unsent' | 'landed';

/** Clients of their own whose every request, DynamoDB and S3 alike, goes through `around`. */
function clientsAround(around: (next: () => Promise<unknown>) => Promise<unknown>): AwsClients {
  const clients = ownClients();
  for (const client of [clients.dynamo, clients.s3]) aroundCommands(client, (_call, next) => around(next));
  return clients;
}

/**
 * Clients whose process dies at request `at` (counted over DynamoDB and S3 together): that request and
 * every later one never answers, nor does any answer still on its way. `died` settles at the death.
 */
function dyingClients(at: number, death: Death) {
  let sent = 0;
  let dead = false;
  let die!: () => void;
  const died = new Promise<'died'>((resolve) => {
    die = () => resolve('died');
  });
  const never = new Promise<never>(() => {});
  const clients = clientsAround(async (next) => {
    sent += 1;
    if (dead) return never;
    if (sent === at) {
      if (death === 'landed') await next();
      dead = true;
      die();
      return never;
    }
    const answer = await next();
    return dead ? never : answer;
  });
  return { clients, died };
}

/** Counts the requests of a fault-free run. */
function countingClients() {
  const count = { requests: 0 };
  const clients = clientsAround((next) => {
    count.requests += 1;
    return next();
  });
  return { clients, count };
}

interface Case {
  name: string;
  workflow: Workflow;
  input: Record<string, unknown>;
  answers?: unknown;
  /** A run that continues in new executions (continue-as-new) past this many history events. */
  continueAfterEvents?: number;
}

const CASES: Case[] = [
  {
    name: 'fork-join-research',
    workflow: example('fork-join-research'),
    input: { topic: 'our payments API' },
  },
  {
    name: 'route-loop',
    workflow: example('route-loop'),
    input: { tickets: ['Printer jams', 'Site down', 'Typo on pricing page'] },
  },
  {
    name: 'support-triage',
    workflow: example('support-triage'),
    input: { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } },
    answers: { 'approve-credit': true },
  },
  { name: 'context-pipeline', workflow: example('context-pipeline'), input: {} },
  {
    name: 'map-reduce',
    workflow: example('map-reduce'),
    input: { documents: ['Revenue up.', 'Costs flat.'].map((text, i) => ({ id: `q${i}`, text })) },
  },
  { name: 'counting loop', workflow: valid(countingLoop('counter + 1')), input: { items: [1, 2, 3] } },
  {
    name: 'counting loop that continues as new',
    workflow: valid(countingLoop('counter + 1')),
    input: { items: Array.from({ length: 8 }, (_, i) => i) },
    continueAfterEvents: 100,
  },
  { name: 'subgraphs', workflow: twoSubgraphs(), input: { value: 5 } },
  // Each branch's global write lands on the root before its own commit: a death between the two.
  { name: 'fork writing globals', workflow: counterWorkflow(2, 'serial'), input: {} },
];

const prepareOptionsOf = (c: Case) =>
  c.continueAfterEvents === undefined ? {} : { continueAfterEvents: c.continueAfterEvents };

/** Fresh answers per process: a file's answers are handed out in order, per visit. */
const runOptionsOf = (c: Case): RunOptions => ({
  noRetryWaits: true,
  ...(c.answers === undefined ? {} : { answerInteraction: fileAnswers(c.answers) }),
});

describe('a run that dies at any one of its requests, resumed, ends as a fault-free run', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const counted = countingClients();
      const cleanRuntime = createLocalRuntime({ clients: counted.clients });
      const clean = await cleanRuntime.prepare(c.workflow, prepareOptionsOf(c)).run(c.input, runOptionsOf(c));
      expect(clean.status, JSON.stringify(clean.error)).toBe('COMPLETED');
      if (c.continueAfterEvents !== undefined) expect(clean.executions.length).toBeGreaterThanOrEqual(2);
      const expected = await runState(cleanRuntime, clean.executionId);
      const total = counted.count.requests;
      // A run whose end is recorded has nothing to resume.
      await expect(cleanRuntime.resumePlanOf(clean.executionId)).rejects.toMatchObject({
        code: 'RUN_NOT_RESUMABLE',
      });

      const failures: string[] = [];
      for (const death of ['unsent', 'landed'] as const) {
        for (let at = 1; at <= total; at += 1) {
          const executionId = `die-${c.name.replaceAll(' ', '-')}-${death}-${at}`;
          const dying = dyingClients(at, death);
          const first = createLocalRuntime({ clients: dying.clients });
          const ended = await Promise.race([
            first.prepare(c.workflow, prepareOptionsOf(c)).run(c.input, { ...runOptionsOf(c), executionId }),
            dying.died,
          ]);
          const runtime = createLocalRuntime({ clients: ownClients() });
          // Dead after the run's end was recorded (reading the outcome back): nothing to resume.
          const chain =
            ended === 'died' ? await executionChainOf(runtime.stores.executions, executionId) : [];
          if (ended === 'died' && chain.at(-1)?.status !== 'COMPLETED') {
            const plan = await runtime.resumePlanOf(executionId, { workflowId: c.workflow.id });
            const prepared = runtime.prepare(c.workflow, {
              ...prepareOptionsOf(c),
              ...(plan.startNodeId === undefined ? {} : { startNodeId: plan.startNodeId }),
            });
            const resumed = await prepared.resume(
              plan.executionId,
              runOptionsOf(c),
              plan.started ? undefined : c.input,
            );
            if (resumed.status !== 'COMPLETED') {
              failures.push(`${death} ${at}: resumed ${resumed.status} ${JSON.stringify(resumed.error)}`);
              continue;
            }
          }
          try {
            expect(await runState(runtime, executionId)).toEqual(expected);
          } catch (error) {
            failures.push(`${death} ${at}: ${(error as Error).message.slice(0, 2_000)}`);
          }
        }
      }
      expect(failures, `${failures.length} of ${2 * total} deaths`).toEqual([]);
    }, 300_000);
  }
});
