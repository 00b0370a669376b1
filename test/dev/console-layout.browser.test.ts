/**
 * The execution page as a user meets it in a real browser (Debian's `chromium` through playwright-core;
 * skipped without it): in a window half a screen wide, and with a node inside a SUBGRAPH opened.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsoleIfMissing, chromiumOrSkip, openPage } from '../support/chromium.ts';
import { type DevInProcess, startDevInProcess } from '../support/dev-in-process.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** start → review (a SUBGRAPH: begin → think, an LLM → finish) → end, on the scripted model. */
const reviewed = {
  id: 'reviewed',
  version: 1,
  profiles: {
    default: { provider: 'scripted', responses: ['It reads well, and every figure in it is sourced.'] },
  },
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'review',
      type: 'SUBGRAPH',
      config: {
        workflow: {
          id: 'review',
          version: 1,
          nodes: [
            { id: 'begin', type: 'START' },
            { id: 'think', type: 'LLM', config: { prompt: 'Review the draft.' } },
            { id: 'finish', type: 'END', config: { output: '{{nodes.think}}' } },
          ],
          edges: [
            { from: 'begin', to: 'think' },
            { from: 'think', to: 'finish' },
          ],
        },
      },
    },
    { id: 'end', type: 'END', config: { output: '{{nodes.review}}' } },
  ],
  edges: [
    { from: 'start', to: 'review' },
    { from: 'review', to: 'end' },
  ],
};

const executablePath = chromiumOrSkip('console layout browser test');

describe.skipIf(executablePath === undefined)('the execution page in chromium', () => {
  let browser: Browser;
  let page: Page;
  let dev: DevInProcess | undefined;
  let dataDir = '';
  let workflowsDir = '';
  let executionUrl = '';

  beforeAll(async () => {
    await buildConsoleIfMissing();
    workflowsDir = mkdtempSync(join(tmpdir(), 'stepthread-layout-workflows-'));
    writeFileSync(join(workflowsDir, 'reviewed.json'), JSON.stringify(reviewed));
    writeFileSync(join(workflowsDir, 'unrun.json'), JSON.stringify({ ...reviewed, id: 'unrun' }));
    dataDir = mkdtempSync(join(tmpdir(), 'stepthread-layout-'));
    dev = await startDevInProcess(workflowsDir, dataDir);
    ({ browser, page } = await openPage(executablePath!));
    await page.goto(`${dev.url}/#/workflows/reviewed`);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await page.locator('[data-testid="execution-status"][data-status="COMPLETED"]').waitFor();
    executionUrl = page.url();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dev) expect(await dev.stop()).toBe(0);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workflowsDir, { recursive: true, force: true });
  });

  it('shows the configuration of a node inside a SUBGRAPH in its panel, as the file writes it', async () => {
    await page.getByTestId('node-review.think').click();
    const panel = page.getByTestId('node-panel');
    await expect.poll(() => panel.innerText()).toContain('"prompt": "Review the draft."');
    expect(await panel.innerText()).toContain('"type": "LLM"');
  });

  it('says on a workflow’s page with no runs that Start runs one, not to start one from a workflow', async () => {
    await page.goto(executionUrl.replace(/#.*/, '#/workflows/unrun'));
    await expect
      .poll(() => page.getByTestId('no-executions').innerText())
      .toBe('No executions of this workflow yet: Start runs one.');
    await page.goto(executionUrl);
  });

  it('draws an LLM node with its cost line on one line, in the room the layout left it', async () => {
    await page.goto(executionUrl);
    const cost = page.getByTestId('cost-of-node-review.think');
    await cost.waitFor();
    const line = (await page
      .locator('[data-testid="node-review.think"] .step-node-meta')
      .first()
      .boundingBox())!;
    // One line, as the line above it, however long the cost; the whole of it in its tooltip.
    expect((await cost.boundingBox())!.height).toBeLessThan(line.height * 1.5);
    expect(await cost.getAttribute('title')).toMatch(/^model calls over all its runs: \d+ tokens, \$\d/);
    // Every node's box is inside a region's box or clear of it, and clear of every other node.
    type Box = { left: number; top: number; right: number; bottom: number };
    const boxes = (selector: string) =>
      page.locator(selector).evaluateAll((elements) =>
        elements.map((element) => {
          const { left, top, right, bottom } = element.getBoundingClientRect();
          return { left, top, right, bottom };
        }),
      );
    const nodes: Box[] = await boxes('.react-flow__node-step');
    const regions: Box[] = await boxes('.react-flow__node-region');
    expect(nodes.length).toBeGreaterThan(3);
    const meet = (a: Box, b: Box) =>
      a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const inside = (a: Box, b: Box) =>
      a.left >= b.left && a.right <= b.right && a.top >= b.top && a.bottom <= b.bottom;
    for (const node of nodes) {
      for (const region of regions) expect(!meet(node, region) || inside(node, region)).toBe(true);
      for (const other of nodes) if (other !== node) expect(meet(node, other)).toBe(false);
    }
  });

  it('counts the run’s one model call in the singular', async () => {
    const line = page.getByTestId('run-cost');
    await expect.poll(() => line.innerText()).toContain('· 1 model call · 0 tool calls');
  });

  it('stacks the thread under the graph in a window half a screen wide: a step’s output has the width', async () => {
    await page.setViewportSize({ width: 760, height: 900 });
    await page.goto('about:blank');
    await page.goto(executionUrl);
    const output = page.locator('[data-testid="step-2"] td.output');
    await output.waitFor();
    const graph = (await page.getByTestId('graph').boundingBox())!;
    const thread = (await page.getByTestId('thread-panel').boundingBox())!;
    // One column: the thread panel starts where the graph does, below it.
    expect(Math.abs(thread.x - graph.x)).toBeLessThan(2);
    expect(thread.y).toBeGreaterThan(graph.y + graph.height);
    // Nothing runs off the side of the window, and the output is not a column of a few letters.
    const pageWidth = () =>
      (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
        .documentElement.scrollWidth;
    expect(await page.evaluate(pageWidth)).toBeLessThanOrEqual(760);
    expect((await output.boundingBox())!.width).toBeGreaterThan(300);
  });
});
