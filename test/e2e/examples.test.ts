/** Every example in examples/ runs end to end on the embedded runtime: outputs and conversations exact. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InteractionReply } from '../../functions/nodes/user-interaction.ts';
import {
  assistant,
  type E2e,
  example,
  PAYLOAD_LIMIT_BYTES,
  plain,
  ROOT,
  startE2e,
  system,
  user,
} from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('examples');
});
afterAll(() => e2e.close());

const CREDIT_REPLY =
  'Sorry for the double charge. We have refunded it and added a goodwill credit of 6 EUR to your account.';

const expected: Record<
  string,
  { input: Record<string, unknown>; output: unknown; conversation: unknown[]; answers?: InteractionReply[] }
> = {
  'context-pipeline': {
    input: {},
    output: {
      summary: 'Paris: capital of France, about 2.1 million people in the city proper, on the Seine.',
    },
    conversation: [
      system('You answer geography questions briefly.'),
      assistant('Paris.'),
      assistant('About 2.1 million people (city proper).'),
      assistant('It is on the Seine.'),
      user('Summarise what we established.'),
      assistant('Paris: capital of France, about 2.1 million people in the city proper, on the Seine.'),
    ],
  },
  'fork-join-research': {
    input: { topic: 'caching' },
    output: {
      report: 'Report: ship it after adding a second region.',
      branches: {
        facts: 'Facts: the service handles 1,200 requests per second at peak.',
        risks: 'Risks: a single region; no load shedding.',
        summary: 'Summary: fast today, fragile under a regional outage.',
      },
    },
    // The main path (summary) replaced the parent's conversation at the join.
    conversation: [
      user('Make a research plan for: caching'),
      assistant('Plan: look at facts, risks, and a one-line summary.'),
      user('Summarise caching in one line.'),
      assistant('Summary: fast today, fragile under a regional outage.'),
      user(
        'Write the report. Facts: Facts: the service handles 1,200 requests per second at peak. Risks: Risks: a single region; no load shedding.',
      ),
      assistant('Report: ship it after adding a second region.'),
    ],
  },
  'support-triage': {
    input: { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } },
    answers: [{ kind: 'approve' }],
    output: {
      category: 'billing',
      approved: true,
      credit: { amount: 6, currency: 'EUR' },
      reply: CREDIT_REPLY,
    },
    conversation: [
      user('Classify this ticket as billing or technical: Charged twice this month'),
      assistant('Checking how long this customer has been with us.'),
      { role: 'tool', content: '{"years":6}' },
      assistant('billing'),
      user('Approved.'),
      user('Write the reply to Ada. Credit granted: 6 EUR.'),
      assistant(CREDIT_REPLY),
    ],
  },
  'map-reduce': {
    input: {
      documents: [
        { id: 'q1', text: 'Revenue up.' },
        { id: 'q2', text: 'Costs flat.' },
        { id: 'q3', text: 'Churn down.' },
      ],
    },
    output: {
      summary: 'Overall: the documents agree.',
      documents: 3,
      first: 'q1: A short summary of the document.',
      last: 'q3: A short summary of the document.',
    },
    // The parent keeps its own conversation (no mainItem): only the summary's turn.
    conversation: [
      user(
        'Combine these 3 summaries into one: ["q1: A short summary of the document.","q2: A short summary of the document.","q3: A short summary of the document."]',
      ),
      assistant('Overall: the documents agree.'),
    ],
  },
  'vendor-review': {
    input: { vendor: 'Acme Analytics', monthlyFee: 1200 },
    answers: [{ kind: 'approve' }],
    output: {
      approved: true,
      reviews: {
        security: 'Security: SOC 2 Type II report on file; data stays in the EU.',
        cost: "Cost: 14400 EUR a year, within the team's budget.",
      },
    },
    // The agent's tool call, then the main path (security) restored at the join, then the answer.
    conversation: [
      user('What does Acme Analytics cost a year at 1200 EUR a month?'),
      assistant('Working out the yearly cost.'),
      { role: 'tool', content: '{"yearly":14400}' },
      assistant('Acme Analytics costs 14400 EUR a year.'),
      user('Review the security of Acme Analytics.'),
      assistant('Security: SOC 2 Type II report on file; data stays in the EU.'),
      user('Approved.'),
    ],
  },
  'refund-approval': {
    input: { customer: 'Ada', order: 'A-17' },
    // The refund of 80 EUR is over the rule's 50: approved, it runs once.
    answers: [{ kind: 'approve' }],
    output: {
      reply: 'I have dealt with the double charge on order A-17; the tool result above says what was done.',
    },
    conversation: [
      system('You handle billing complaints. Refund duplicate charges.'),
      user('Customer Ada says order A-17 was charged twice.'),
      assistant('Looking up order A-17.'),
      // lookup_order is the example's MCP server (examples/mcp/orders-server.mjs), started over stdio.
      {
        role: 'tool',
        content: '{"order":"A-17","customer":"Ada","status":"paid","charges":[80,80],"currency":"EUR"}',
      },
      assistant('Order A-17 was charged twice: refunding the duplicate 80 EUR.'),
      { role: 'tool', content: '{"refunded":80,"order":"A-17","currency":"EUR"}' },
      assistant(
        'I have dealt with the double charge on order A-17; the tool result above says what was done.',
      ),
    ],
  },
  'route-loop': {
    input: {},
    output: { escalated: 2, routine: [0, 2] },
    conversation: [0, 1, 2, 3].flatMap((i) => [
      user(`Is this ticket urgent or routine? ${i}`),
      assistant(i % 2 === 0 ? 'routine' : 'urgent'),
    ]),
  },
};

describe('examples/', () => {
  it('has an expectation for every example file', () => {
    const files = readdirSync(join(ROOT, 'examples'))
      .filter((file) => /\.(json|ya?ml)$/.test(file))
      .map((file) => file.replace(/\.(json|ya?ml)$/, ''));
    expect(files.sort()).toEqual(Object.keys(expected).sort());
  });

  for (const [name, want] of Object.entries(expected)) {
    it(`${name} completes with its output and conversation`, async () => {
      const answers = [...(want.answers ?? [])];
      const outcome = await e2e.runtime
        .prepare(example(name))
        // A stdio MCP server's command starts from the workflow file's folder, as `run` does it.
        .run(want.input, {
          answerInteraction: async () => answers.shift(),
          workflowDir: join(ROOT, 'examples'),
        });
      expect(answers).toEqual([]);
      expect(outcome.execution.status).toBe('SUCCEEDED');
      expect(outcome.status).toBe('COMPLETED');
      expect(outcome.output).toEqual(want.output);
      expect(plain(await e2e.conversation(outcome.threadId))).toEqual(want.conversation);
      expect(outcome.largestPayloadBytes).toBeGreaterThan(0);
      expect(outcome.largestPayloadBytes).toBeLessThan(PAYLOAD_LIMIT_BYTES);
      const execution = await e2e.runtime.stores.executions.getExecution(outcome.executionId);
      expect(execution).toMatchObject({ rootThreadId: outcome.threadId, status: 'COMPLETED' });
    });
  }
});
