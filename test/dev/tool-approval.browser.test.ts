/**
 * A tool call that requires approval, answered in the web console in a real browser (Debian's
 * `chromium` driven by playwright-core): the page shows the tool, its arguments and the model's
 * message; Approve runs the call once, Reject with a reason never calls the tool and the model reads
 * the reason. The tool is an http server on loopback that counts its requests. Without chromium the
 * suite is skipped, saying so.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { buildConsoleIfMissing, chromiumOrSkip, openPage, screenshotsDir } from '../support/chromium.ts';
import { type DevInProcess, startDevInProcess } from '../support/dev-in-process.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const SHOTS = screenshotsDir('approval');

/** start → agent (scripted: asks to refund A-1, then answers by what the tool result said) → end. */
function refundWorkflow(shopUrl: string) {
  return {
    id: 'console-refund',
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          agent: [
            {
              content: 'Refunding the duplicate 80 EUR of A-1.',
              toolCalls: [{ name: 'refund', arguments: { order: 'A-1', amount: 80 } }],
            },
            'Done.',
          ],
        },
      },
    },
    tools: {
      refund: {
        description: 'Refunds an order',
        parameters: {
          type: 'object',
          properties: { order: { type: 'string' }, amount: { type: 'number' } },
          required: ['order', 'amount'],
        },
        handler: { kind: 'http', url: `${shopUrl}/refund`, method: 'POST', allowPrivateNetwork: true },
        requiresApproval: true,
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'agent', type: 'LLM', config: { prompt: 'Refund A-1.', tools: ['refund'] } },
      { id: 'end', type: 'END', config: { output: '{{nodes.agent}}' } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
  };
}

const executablePath = chromiumOrSkip('tool approval browser test');

describe.skipIf(executablePath === undefined)('a tool call’s approval in the console (chromium)', () => {
  let browser: Browser;
  let page: Page;
  let shop: ScriptedServer;
  let url = '';
  let dev: DevInProcess | undefined;
  let dataDir = '';
  let workflowsDir = '';

  beforeAll(async () => {
    await buildConsoleIfMissing();
    shop = await startScriptedServer();
    workflowsDir = mkdtempSync(join(tmpdir(), 'stepthread-approval-workflows-'));
    writeFileSync(join(workflowsDir, 'console-refund.json'), JSON.stringify(refundWorkflow(shop.url)));
    dataDir = mkdtempSync(join(tmpdir(), 'stepthread-approval-console-'));
    dev = await startDevInProcess(workflowsDir, dataDir);
    url = dev.url;
    ({ browser, page } = await openPage(executablePath!));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dev) expect(await dev.stop()).toBe(0);
    await shop?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workflowsDir, { recursive: true, force: true });
  });

  /** Starts the workflow in the page and waits until its tool call asks for approval. */
  async function startAndWait(): Promise<void> {
    await page.goto(`${url}/#/workflows/console-refund`);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await page.getByTestId('tool-call').waitFor();
    await page.locator('[data-testid="node-agent"][data-status="WAITING"]').waitFor();
  }

  const executionStatus = (status: string) =>
    page.locator(`[data-testid="execution-status"][data-status="${status}"]`).waitFor();

  it('shows the tool, its arguments and the model’s message; Approve runs the call once', async () => {
    shop.requests.length = 0;
    shop.reply({ body: { refunded: 80 } });
    await startAndWait();
    const question = page.getByTestId('interaction-agent');
    expect(await question.getByTestId('tool-name').innerText()).toBe('refund');
    expect(JSON.parse(await question.getByTestId('tool-arguments').innerText())).toEqual({
      order: 'A-1',
      amount: 80,
    });
    expect(await question.getByTestId('tool-message').innerText()).toBe(
      'Refunding the duplicate 80 EUR of A-1.',
    );
    expect(shop.requests).toHaveLength(0);
    await page.screenshot({ path: join(SHOTS, 'tool-approval.png'), fullPage: true });
    await question.getByTestId('approve').click();
    await executionStatus('COMPLETED');
    expect(shop.requests.map((request) => request.body)).toEqual([{ order: 'A-1', amount: 80 }]);
  });

  it('Reject with a reason never calls the tool; the model reads the reason', async () => {
    shop.requests.length = 0;
    await startAndWait();
    const question = page.getByTestId('interaction-agent');
    await question.getByTestId('reason').fill('refunds go through finance');
    await question.getByTestId('reject').click();
    await executionStatus('COMPLETED');
    expect(shop.requests).toHaveLength(0);
    // The refusal, with the reason, is the tool's result in the conversation.
    await expect.poll(() => page.locator('body').innerText()).toContain('Reason: refunds go through finance');
  });
});
