/**
 * A run's cost and budget in `stepthread dev` (issue 27): `/api/executions/:id` gives the run's
 * tokens, dollars and tool calls with its budget spent, each node's usage over its runs and each
 * step's, and the estimate of its AWS side deployed (the run's and each node's, as inspect gives
 * it); the console shows them on the execution page, in Debian's `chromium` driven by
 * playwright-core. Without chromium the page part is skipped, saying so.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AwsCost } from '../../cli/aws-cost.ts';
import { buildConsoleIfMissing, chromiumOrSkip, openPage } from '../support/chromium.ts';
import { runCli } from '../support/cli.ts';
import { type DevProcess, runToEnd, startDevProcess } from '../support/dev-process.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** $1,000 and $2,000 per million tokens: a scripted run whose cost shows in the first digits. */
const PRICING = { inputPerMTok: 1000, outputPerMTok: 2000 };

/** Three turns of `chat` in a loop, on a priced scripted profile, within a budget of 10,000 tokens. */
const pricedLoop = {
  id: 'priced-loop',
  version: 1,
  budget: { maxTokens: 10_000 },
  profiles: { default: { provider: 'scripted', responses: ['Noted.', 'Done.'], pricing: PRICING } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: 3 } },
    { id: 'chat', type: 'LLM', config: { prompt: 'Say something short.' } },
    { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'loop' },
    { from: 'loop', to: 'chat' },
    { from: 'chat', to: 'next' },
    { from: 'next', to: 'end' },
  ],
};

interface Usage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd?: number;
}

const costOf = (u: { inputTokens: number; outputTokens: number }) =>
  (u.inputTokens * PRICING.inputPerMTok + u.outputTokens * PRICING.outputPerMTok) / 1e6;

describe('cost and budget in stepthread dev', () => {
  let dev: DevProcess;
  let dataDir = '';
  let workflowsDir = '';
  let executionId = '';

  beforeAll(async () => {
    await buildConsoleIfMissing();
    workflowsDir = mkdtempSync(join(tmpdir(), 'stepthread-cost-workflows-'));
    writeFileSync(join(workflowsDir, 'priced-loop.json'), JSON.stringify(pricedLoop));
    dataDir = mkdtempSync(join(tmpdir(), 'stepthread-cost-'));
    dev = await startDevProcess(dataDir, dataDir, workflowsDir);
    const run = await runToEnd(dev.url, 'priced-loop');
    expect(run.status).toBe('COMPLETED');
    executionId = run.executionId;
  }, 120_000);

  afterAll(async () => {
    if (dev) expect(await dev.interrupt()).toBe(0);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workflowsDir, { recursive: true, force: true });
  });

  const page = async () =>
    (await (await fetch(`${dev.url}/api/executions/${executionId}`)).json()) as {
      rootThreadId: string;
      cost: {
        tokens: number;
        inputTokens: number;
        outputTokens: number;
        costUsd: number;
        modelCalls: number;
      };
      nodeStatus: Record<string, { usage?: Usage; awsUsd?: number }>;
      awsCost: AwsCost;
    } & { cost: { spent: { maxTokens: { spent: number; limit: number } } } };

  it('/api/executions/:id: the run, each node and each step cost their tokens at the profile price', async () => {
    const { cost, nodeStatus, rootThreadId } = await page();
    const steps = (await (await fetch(`${dev.url}/api/threads/${rootThreadId}/steps`)).json()) as {
      steps: { nodeId: string; usage?: Usage }[];
    };
    const chatSteps = steps.steps.filter((step) => step.nodeId === 'chat');
    expect(chatSteps).toHaveLength(3);
    for (const step of chatSteps) {
      expect(step.usage?.modelCalls).toBe(1);
      expect(step.usage?.costUsd).toBeCloseTo(costOf(step.usage!), 9);
    }
    const input = chatSteps.reduce((sum, step) => sum + step.usage!.inputTokens, 0);
    const output = chatSteps.reduce((sum, step) => sum + step.usage!.outputTokens, 0);
    expect(cost).toMatchObject({
      modelCalls: 3,
      inputTokens: input,
      outputTokens: output,
      tokens: input + output,
    });
    expect(cost.costUsd).toBeCloseTo(costOf({ inputTokens: input, outputTokens: output }), 9);
    expect(cost.spent.maxTokens).toEqual({
      spent: input + output,
      limit: 10_000,
      fraction: (input + output) / 10_000,
    });
    expect(nodeStatus.chat?.usage).toMatchObject({ modelCalls: 3, inputTokens: input, outputTokens: output });
    expect(nodeStatus.chat?.usage?.costUsd).toBeCloseTo(cost.costUsd, 9);
    expect(nodeStatus.loop?.usage).toBeUndefined();
  });

  it("/api/executions/:id: the run's AWS side, deployed, as inspect estimates it, and each node's share", async () => {
    const { awsCost, nodeStatus } = await page();
    const inspected = await runCli(['inspect', executionId, '--json', '--data-dir', dataDir], {
      env: { STEPTHREAD_DATA_DIR: dataDir },
    });
    expect(inspected.code).toBe(0);
    expect(awsCost).toEqual((JSON.parse(inspected.stdout) as { awsCost: AwsCost }).awsCost);
    expect(awsCost.usd).toBeGreaterThan(0);
    for (const node of ['start', 'loop', 'chat', 'next', 'end']) {
      expect(nodeStatus[node]?.awsUsd).toBe(awsCost.byNode[node]);
    }
  });

  const executablePath = chromiumOrSkip('cost browser test');

  it.skipIf(executablePath === undefined)(
    'the execution page shows the run cost, the budget spent, each node cost and each step cost',
    async () => {
      const { cost, awsCost } = await page();
      const usd = `$${cost.costUsd.toFixed(6)}`;
      let browser: Browser | undefined;
      try {
        const opened = await openPage(executablePath!);
        browser = opened.browser;
        const tab = opened.page;
        await tab.goto(`${dev.url}/#/executions/${executionId}`);
        await expect.poll(() => tab.getByTestId('run-cost-usd').textContent()).toBe(usd);
        const line = (await tab.getByTestId('run-cost').textContent()) ?? '';
        expect(line).toContain(`${cost.tokens} tokens (${cost.inputTokens} in, ${cost.outputTokens} out)`);
        expect(line).toContain('3 model calls');
        expect(await tab.getByTestId('budget-maxTokens').textContent()).toContain(
          `budget maxTokens 10000: ${cost.tokens} spent`,
        );
        const node = (await tab.getByTestId('cost-of-node-chat').textContent()) ?? '';
        expect(node).toContain(`${cost.tokens} tokens`);
        expect(node).toContain(usd);
        // Beside the model cost: the AWS side deployed, for the run and the node.
        expect(await tab.getByTestId('run-aws-usd').textContent()).toBe(`≈ $${awsCost.usd.toFixed(6)}`);
        expect(await tab.getByTestId('aws-of-node-chat').textContent()).toBe(
          ` · aws ≈ $${awsCost.byNode.chat!.toFixed(6)}`,
        );
        await expect.poll(() => tab.getByTestId('step-cost').count()).toBe(3);
        const first = (await tab.getByTestId('step-cost').first().textContent()) ?? '';
        expect(first).toMatch(/^\d+ in · \d+ out · \$\d+\.\d{6}$/);
      } finally {
        await browser?.close();
      }
    },
    60_000,
  );
});
