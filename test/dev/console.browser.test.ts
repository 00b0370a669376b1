/**
 * The web console in a real browser: Debian's `chromium` driven by playwright-core (nothing downloads
 * a browser). `stepthread dev` serves the examples; the page starts fork-join-research and sees every
 * node complete, opens each fork child's conversation, starts support-triage and approves it in the
 * page (after a reload), and copies a thread from a middle step and runs the copy. Screenshots go to a
 * temporary directory, or to docs/console/ (the README's) with STEPTHREAD_UPDATE_SCREENSHOTS=1, so a
 * test run leaves the working tree as it was. Without chromium the suite is skipped, saying so.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldBeforeLastWord } from '../functions/llm/servers/openai-replies.ts';
import { startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { buildConsoleIfMissing, chromiumOrSkip, openPage, screenshotsDir } from '../support/chromium.ts';
import { type DevInProcess, startDevInProcess } from '../support/dev-in-process.ts';
import { runToEnd, startDevProcess, startWaitingTriage } from '../support/dev-process.ts';
import { longLoop } from '../support/long-loop.ts';
import { manyForks, manyForksInput, manyForksPathOrder } from '../support/many-forks.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const SHOTS = screenshotsDir('console');

/** start → `review` (a SUBGRAPH whose child's CODE node throws) → end. */
function subgraphThatFails() {
  const chain = (id: string, nodes: Record<string, unknown>[]) => ({
    id,
    version: 1,
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  });
  const child = chain('child', [
    { id: 'begin', type: 'START' },
    { id: 'work', type: 'CODE', config: { code: "throw new Error('boom')" } },
    { id: 'finish', type: 'END' },
  ]);
  return chain('review-fails', [
    { id: 'start', type: 'START' },
    { id: 'review', type: 'SUBGRAPH', config: { workflow: child } },
    { id: 'end', type: 'END' },
  ]);
}

/** START, `count - 2` VARIABLE nodes in a row, END: a graph `count` nodes tall. */
function chainOf(id: string, count: number) {
  const nodes = [
    { id: 'start', type: 'START' },
    ...Array.from({ length: count - 2 }, (_, i) => ({
      id: `step-${i + 1}`,
      type: 'VARIABLE',
      config: { variableName: 'n', variableType: 'number', expression: `${i + 1}` },
    })),
    { id: 'end', type: 'END' },
  ];
  return {
    id,
    version: 1,
    variables: [{ name: 'n', type: 'number', scope: 'thread', initial: 0 }],
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}

/**
 * start → `agent` → `weigher` → end, two LLM nodes calling code tools (a scripted model). With
 * `failing`, both of the agent's calls fail (a tool that throws, and one that does not exist); else
 * its one call works. The weigher's call always works.
 */
function toolErrorsWorkflow(id: string, failing: boolean) {
  const tool = (code: string) => ({
    description: 'Checks',
    parameters: { type: 'object', properties: { kg: { type: 'number' } } },
    handler: { kind: 'code', code },
  });
  return {
    id,
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          agent: [
            {
              content: 'Checking the scale.',
              toolCalls: failing
                ? [
                    { name: 'check', arguments: { kg: 2 } },
                    { name: 'nope', arguments: {} },
                  ]
                : [{ name: 'check', arguments: { kg: 2 } }],
            },
            failing ? 'The scale is offline.' : 'The scale works.',
          ],
          weigher: [{ toolCalls: [{ name: 'weigh', arguments: { kg: 2 } }] }, 'Done.'],
        },
      },
    },
    tools: {
      check: tool(failing ? 'throw new Error("no scale")' : 'return { ok: true }'),
      weigh: tool('return { grams: input.kg * 1000 }'),
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'agent', type: 'LLM', config: { prompt: 'Check the scale', tools: ['check'] } },
      { id: 'weigher', type: 'LLM', config: { prompt: 'Weigh it', tools: ['weigh'] } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'weigher' },
      { from: 'weigher', to: 'end' },
    ],
  };
}

const executablePath = chromiumOrSkip('console browser test');

describe.skipIf(executablePath === undefined)('stepthread dev console in chromium', () => {
  let browser: Browser;
  let page: Page;
  let url = '';
  let dev: DevInProcess | undefined;
  let dataDir = '';
  let workflowsDir = '';
  /** A run left waiting by an earlier `dev` over the same data, stopped with Ctrl-C. */
  let interruptedId = '';
  /** A run that failed under that earlier `dev`: this one never ran it. */
  let failedElsewhereId = '';

  beforeAll(async () => {
    await buildConsoleIfMissing();
    // The examples, and a copy of one under another file name: the same workflow id twice.
    workflowsDir = mkdtempSync(join(tmpdir(), 'stepthread-console-workflows-'));
    cpSync(join(ROOT, 'examples'), workflowsDir, { recursive: true });
    cpSync(join(ROOT, 'examples', 'route-loop.json'), join(workflowsDir, 'my-route-loop.json'));
    // Two SUBGRAPHs that complete (two-reviews), and one whose child fails.
    cpSync(join(ROOT, 'test', 'fixtures', 'valid', 'subgraph.json'), join(workflowsDir, 'two-reviews.json'));
    writeFileSync(join(workflowsDir, 'review-fails.json'), JSON.stringify(subgraphThatFails()));
    // The real command, in-process: `stepthread dev <folder> --port 0 --data-dir <tmp>`.
    dataDir = mkdtempSync(join(tmpdir(), 'stepthread-console-'));
    const earlier = await startDevProcess(dataDir, dataDir, workflowsDir);
    try {
      const failed = await runToEnd(earlier.url, 'review-fails');
      expect(failed.status).toBe('FAILED');
      failedElsewhereId = failed.executionId;
      interruptedId = await startWaitingTriage(earlier.url);
      expect(await earlier.interrupt()).toBe(130);
    } finally {
      earlier.kill();
    }
    dev = await startDevInProcess(workflowsDir, dataDir);
    url = dev.url;
    ({ browser, page } = await openPage(executablePath!));
    // STEPTHREAD_TEST_API_DELAY_MS=700 answers each API read up to that many ms late, in random
    // order, as a loaded machine can: the page and these tests must not depend on read timing.
    // (Live events are left alone: an intercepted event stream is held until it ends.)
    const delayMs = Number(process.env.STEPTHREAD_TEST_API_DELAY_MS ?? 0);
    if (delayMs > 0) {
      await page.route('**/api/**', async (route) => {
        if (new URL(route.request().url()).pathname === '/api/events') return route.continue();
        await new Promise((resolve) => setTimeout(resolve, Math.random() * delayMs));
        return route.fallback();
      });
    }
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dev) expect(await dev.stop()).toBe(0);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workflowsDir, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const executionStatus = (status: string) =>
    page.locator(`[data-testid="execution-status"][data-status="${status}"]`).waitFor();
  /** Whether the graph panel shows the whole node (not cut off above or below). */
  const inView = async (nodeId: string) => {
    const panel = (await page.getByTestId('graph').boundingBox())!;
    const node = (await page.getByTestId(`node-${nodeId}`).boundingBox())!;
    return node.y >= panel.y && node.y + node.height <= panel.y + panel.height;
  };
  /**
   * Turns the wheel over the graph a notch at a time until it shows `nodeId` (a notch scrolls 50 px,
   * less than the panel, so it cannot scroll past the node; a notch turned before the graph listens
   * is turned again).
   */
  const scrollGraphTo = (nodeId: string) =>
    expect
      .poll(async () => {
        await page.getByTestId('graph').hover();
        await page.mouse.wheel(0, 100);
        return inView(nodeId);
      })
      .toBe(true);

  let forkExecutionUrl = '';

  it('says the executions are loading until the list answers, and "No executions yet" only for an empty list', async () => {
    let answer: (body: string) => void = () => {};
    const answered = new Promise<string>((resolve) => {
      answer = resolve;
    });
    const isList = (target: URL) => target.pathname === '/api/executions';
    await page.route(isList, async (route) =>
      route.fulfill({ status: 200, contentType: 'application/json', body: await answered }),
    );
    await page.goto(`${url}/#/`);
    // The workflows answered; the executions have not: the page says so, not that there are none.
    await page.getByTestId('workflow-file-support-triage.json').waitFor();
    await page.getByTestId('executions-loading').waitFor();
    expect(await page.getByTestId('no-executions').count()).toBe(0);
    await shot('executions-loading');
    answer('[]');
    await page.getByTestId('no-executions').waitFor();
    expect(await page.getByTestId('executions-loading').count()).toBe(0);
    await page.unroute(isList);
    // The list as it is: the runs of the earlier `dev`.
    await page.reload();
    await page
      .getByTestId('executions')
      .locator('tr', { hasText: failedElsewhereId.slice(0, 8) })
      .waitFor();
    expect(await page.getByTestId('no-executions').count()).toBe(0);
  });

  it('says why a run failed under its title, for a run an earlier dev ran too', async () => {
    await page.goto(`${url}/#/executions/${encodeURIComponent(failedElsewhereId)}`);
    await executionStatus('FAILED');
    const reason = page.getByTestId('execution-error');
    await expect.poll(() => reason.innerText()).toBe('CODE_ERROR: node review.work: Error: boom (line 1)');
    // Right under the title and its status line, before the graph.
    expect(
      await reason.evaluate((element) => element.previousElementSibling?.getAttribute('data-testid')),
    ).toBe('execution-status');
    await page.locator('[data-testid="node-review.work"][data-status="FAILED"]').waitFor();
    // The failed step's error is in its row, once: not repeated as the thread's under the table.
    const rowErrors = page.locator('[data-testid="steps"] td.output .error');
    await rowErrors.first().waitFor();
    const threadErrors = (await page.getByTestId('thread-errors').allInnerTexts()).join('\n');
    for (const text of await rowErrors.allInnerTexts()) expect(threadErrors).not.toContain(text);
    await shot('failed-run');
  });

  it('starts fork-join-research and sees every node completed in the graph', async () => {
    await page.goto(`${url}/#/workflows/fork-join-research`);
    await page.getByTestId('node-merge').waitFor();
    await page.getByTestId('run-input').fill('{"topic": "the payments service"}');
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('COMPLETED');
    const nodes = page.locator('[data-testid^="node-"]');
    const statuses = () => nodes.evaluateAll((els) => els.map((el) => el.getAttribute('data-status')));
    await expect.poll(statuses).toEqual(Array((await statuses()).length).fill('COMPLETED'));
    expect((await statuses()).length).toBe(9);
    forkExecutionUrl = page.url();
    await shot('fork-join-completed');
  });

  it("opens each fork child's conversation", async () => {
    const replies: Record<string, string> = {
      'split/facts': 'Facts: the service handles 1,200 requests per second at peak.',
      'split/risks': 'Risks: a single region; no load shedding.',
      'split/summary': 'Summary: fast today, fragile under a regional outage.',
    };
    for (const [path, reply] of Object.entries(replies)) {
      await page.getByTestId(`thread-${path}`).click();
      await page.getByTestId('conversation').getByText(reply).waitFor();
      await expect.poll(() => page.getByTestId('conversation').innerText()).toContain('Plan: look at facts');
      // What the thread keeps stored: its items, and the reply's segment it wrote.
      await expect
        .poll(() => page.getByTestId('stored-bytes').innerText())
        .toMatch(/^stored [\d.]+ KB: \d+ items \([\d.]+ KB\) in DynamoDB, [1-9]\d* objects? \(.+\) in S3$/);
    }
    await shot('fork-child-conversation');
  });

  it('starts support-triage, answers its approval in the page after a reload, and sees the run complete', async () => {
    await page.goto(`${url}/#/workflows/support-triage`);
    await page
      .getByTestId('run-input')
      .fill(
        JSON.stringify({ ticket: { subject: 'Double billing in March', customer: 'Ana', monthlyFee: 30 } }),
      );
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await page.getByTestId('approve').waitFor();
    await page.locator('[data-testid="node-approve-credit"][data-status="WAITING"]').waitFor();
    // The run belongs to the server: a reload finds it still waiting.
    await page.reload();
    await page.getByTestId('approve').waitFor();
    await shot('support-triage-waiting');
    await page.getByTestId('approve').click();
    await executionStatus('COMPLETED');
    await page.locator('[data-testid="node-end"][data-status="COMPLETED"]').waitFor();
    await expect.poll(() => page.getByTestId('variables').innerText()).toContain('"approved": true');
    // A node of the graph opens its configuration and filters the steps to its own.
    await page.getByTestId('node-compute-credit').click();
    await page.getByTestId('node-panel').getByText('"outputVariable": "credit"').waitFor();
    // Its code as code: its own lines, not one escaped JSON string.
    const triage = JSON.parse(readFileSync(join(ROOT, 'examples', 'support-triage.json'), 'utf8')) as {
      nodes: { id: string; config?: { code?: string } }[];
    };
    const code = triage.nodes.find((node) => node.id === 'compute-credit')!.config!.code!;
    expect(code).toContain('\n');
    await expect.poll(() => page.getByTestId('node-code').innerText()).toBe(code);
    expect(await page.getByTestId('node-panel').innerText()).not.toContain('\\n');
    // What its code printed, in the node panel.
    await page.getByTestId('node-logs').getByText('monthly fee 30 approved true').waitFor();
    await expect.poll(() => page.locator('tr[data-node]').count()).toBe(1);
    // Its events too: the journal of the thread, filtered to the node.
    const events = page.getByTestId('events').getByTestId('event');
    await expect
      .poll(() => events.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-type'))))
      .toEqual(['NODE_STARTED', 'VARIABLE_CHANGED', 'NODE_COMPLETED']);
    expect(
      await events.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-event-node'))),
    ).toEqual(Array(3).fill('compute-credit'));
    await page.getByTestId('events').getByText('"name":"credit"').waitFor();
    await shot('support-triage-completed');
  });

  it('keeps a finished run finished when an older re-read of its page answers last', async () => {
    // Re-reads overlap (one after the answer, one per burst of live events): under load the one
    // asked while the run still ran can answer after the one asked once it ended. Here it always
    // does: the first re-read after the answer is held until the page shows the run completed.
    await page.goto(`${url}/#/workflows/support-triage`);
    await page
      .getByTestId('run-input')
      .fill(JSON.stringify({ ticket: { subject: 'Billing', monthlyFee: 10 } }));
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await page.getByTestId('approve').waitFor();
    const executionId = decodeURIComponent(/#\/executions\/([^/?]+)/.exec(page.url())![1]!);
    const pagePath = `/api/executions/${encodeURIComponent(executionId)}`;
    // What the server answers while the run waits: RUNNING.
    const running = await page.request.get(`${url}${pagePath}`);
    expect(((await running.json()) as { execution: { status: string } }).execution.status).toBe('RUNNING');
    const runningBody = await running.text();

    let releaseHeld: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      releaseHeld = resolve;
    });
    let markDelivered: () => void = () => {};
    const delivered = new Promise<void>((resolve) => {
      markDelivered = resolve;
    });
    let held = 0;
    const isPage = (target: URL) => target.pathname === pagePath;
    await page.route(isPage, async (route) => {
      if (held > 0) return route.continue();
      held += 1;
      await released;
      await route.fulfill({ status: 200, contentType: 'application/json', body: runningBody });
      markDelivered();
    });
    await page.getByTestId('approve').click();
    await executionStatus('COMPLETED');
    expect(held).toBe(1);
    releaseHeld();
    await delivered;
    // A few frames for the page to apply what it received.
    await page.evaluate(
      () =>
        new Promise<void>((resolve) => {
          const { requestAnimationFrame: frame } = globalThis as unknown as {
            requestAnimationFrame(callback: () => void): void;
          };
          let frames = 0;
          const next = () => (++frames >= 5 ? resolve() : frame(next));
          frame(next);
        }),
    );
    expect(await page.getByTestId('execution-status').getAttribute('data-status')).toBe('COMPLETED');
    await page.unroute(isPage);
  });

  it('shows a run whose dev was stopped as interrupted, with the command that resumes it with its answer', async () => {
    // With the answer to the question it stopped at, as `stepthread runs` gives it.
    const resume = `stepthread resume ${interruptedId} --answers '{"approve-credit":true}' --data-dir ${dataDir}`;
    await page.goto(`${url}/#/`);
    const row = page.getByTestId('executions').locator('tr', { hasText: interruptedId.slice(0, 8) });
    await row.locator('.badge.status-interrupted').waitFor();
    await row.getByRole('link').click();
    await executionStatus('INTERRUPTED');
    expect(await page.getByTestId('interrupted').innerText()).toContain(resume);
    // The command as the API gives it, nothing added after it (a second --answers).
    const toAnswer = (await page.getByTestId('resume-to-answer').innerText()).trim();
    expect(toAnswer.slice(toAnswer.indexOf('stepthread resume'))).toBe(resume);
    expect(await page.getByTestId('interaction-approve-credit').innerText()).not.toContain('respond');
    expect(await page.getByTestId('approve').isDisabled()).toBe(true);
    // Nothing runs or waits in it any more: its thread and the question's node say so too.
    await page.locator('[data-testid="node-approve-credit"][data-status="INTERRUPTED"]').waitFor();
    const rootItem = page.locator('.tree li', { has: page.getByTestId('thread-root') }).first();
    expect(await rootItem.locator('.badge').first().innerText()).toBe('interrupted');
    expect(await page.locator('[data-testid="thread-panel"] h2 .badge').first().innerText()).toBe(
      'interrupted',
    );
  });

  it("draws each SUBGRAPH as a box around its nodes, in its status's colour", async () => {
    const subgraphBox = (id: string) => page.getByTestId(`subgraph-${id}`);
    await page.goto(`${url}/#/workflows/two-reviews`);
    await subgraphBox('first').waitFor();
    // Too tall for the panel at a readable zoom: it shows its top, and the wheel scrolls to its end.
    await expect.poll(() => inView('start')).toBe(true);
    expect(await inView('end')).toBe(false);
    await scrollGraphTo('end');
    // Not run yet: the boxes are there, without a status, and the child's START is a START.
    expect(await subgraphBox('second').getAttribute('data-status')).toBe('PENDING');
    expect(await page.getByTestId('node-first.begin').innerText()).toContain('start');
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('COMPLETED');
    for (const id of ['first', 'second']) {
      await page.locator(`[data-testid="subgraph-${id}"][data-status="COMPLETED"]`).waitFor();
      expect(await subgraphBox(id).innerText()).toMatch(new RegExp(`^subgraph ${id} · completed`));
      // The box holds the nodes inlined for it, and no other.
      const box = (await subgraphBox(id).boundingBox())!;
      const inside = async (nodeId: string) => {
        const node = (await page.getByTestId(`node-${nodeId}`).boundingBox())!;
        return (
          node.x >= box.x &&
          node.y >= box.y &&
          node.x + node.width <= box.x + box.width &&
          node.y + node.height <= box.y + box.height
        );
      };
      expect(await inside(`${id}.begin`)).toBe(true);
      expect(await inside(`${id}.style`)).toBe(true);
      expect(await inside(`${id}.finish`)).toBe(true);
      expect(await inside('end')).toBe(false);
    }
    // One after the other, the two boxes keep apart.
    const first = (await subgraphBox('first').boundingBox())!;
    expect(first.y + first.height).toBeLessThan((await subgraphBox('second').boundingBox())!.y);
    // Its START and END steps are listed as such (their records say SUBGRAPH).
    const typeOfStep = (nodeId: string) =>
      page.locator(`tr[data-node="${nodeId}"]`).getByTestId('step-type').innerText();
    await expect.poll(() => typeOfStep('first.begin')).toBe('start');
    expect(await typeOfStep('first.finish')).toBe('end');
    await page.goto(`${url}/#/workflows/review-fails`);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('FAILED');
    await page.locator('[data-testid="subgraph-review"][data-status="FAILED"]').waitFor();
    expect(await subgraphBox('review').getAttribute('class')).toContain('status-failed');
  });

  it("lists a file whose workflow id another file has as an error row of its own, not a link to the other's", async () => {
    await page.goto(`${url}/#/`);
    const copy = page.getByTestId('workflow-file-my-route-loop.json');
    await copy.getByTestId('duplicate-id').waitFor();
    expect(await copy.getAttribute('class')).toContain('error-row');
    expect(await copy.getByRole('link').count()).toBe(0);
    expect(await copy.getByTestId('duplicate-id').innerText()).toContain('my-route-loop.json');
    expect(await copy.innerText()).toContain('DUPLICATE_WORKFLOW_ID');
    // The file named after the id serves it, and links to it.
    const original = page.getByTestId('workflow-file-route-loop.json');
    expect(await original.getByRole('link').getAttribute('href')).toBe('#/workflows/route-loop');
    expect((await original.getAttribute('class')) ?? '').not.toContain('error-row');
  });

  it('copies a thread from a middle step and runs the copy', async () => {
    // Until the thread's steps answer, the slider has no range to move over: it waits, disabled.
    let releaseSteps: () => void = () => {};
    const stepsReleased = new Promise<void>((resolve) => {
      releaseSteps = resolve;
    });
    const isSteps = (target: URL) => /^\/api\/threads\/[^/]+\/steps$/.test(target.pathname);
    await page.route(isSteps, async (route) => {
      await stepsReleased;
      return route.fallback();
    });
    await page.goto(forkExecutionUrl);
    await page.getByTestId('thread-root').click();
    expect(await page.getByTestId('step-slider').isDisabled()).toBe(true);
    releaseSteps();
    await page.unroute(isSteps);
    // The step slider shows the conversation as it was: after step 2 only the plan is there.
    await page.getByTestId('step-slider').fill('2');
    await page.getByTestId('conversation').getByText('Plan: look at facts').waitFor();
    await expect.poll(() => page.getByTestId('conversation').innerText()).not.toContain('Report:');
    // The output column has the width the narrow ones leave (it had ~30% of the table, its JSON
    // broken mid-id), and its JSON wraps at its own line ends and spaces only.
    const split = page.locator('tr[data-node="split"]');
    await split.locator('pre').waitFor();
    const layoutOfSplit = () =>
      split.evaluate((row) => {
        const pre = row.querySelector('pre')!;
        const table = row.closest('table')!;
        const text = pre.firstChild!;
        const data = text.textContent ?? '';
        const breaks: string[] = [];
        let top: number | undefined;
        for (let i = 0; i < data.length; i += 1) {
          const range = row.ownerDocument.createRange();
          range.setStart(text, i);
          range.setEnd(text, i + 1);
          const rect = range.getClientRects()[0];
          if (rect === undefined || data[i] === '\n') continue;
          // A character lower than the one before starts a line: where the text had no line end or
          // space before it, a word was cut.
          if (top !== undefined && rect.top > top + 2 && !/\s/.test(data[i - 1]!)) {
            breaks.push(data.slice(Math.max(0, i - 8), i + 8));
          }
          top = rect.top;
        }
        const share = pre.closest('td')!.getBoundingClientRect().width / table.getBoundingClientRect().width;
        return { wide: share > 0.5, breaks };
      });
    await expect.poll(layoutOfSplit).toEqual({ wide: true, breaks: [] });
    await shot('steps-output-column');
    const copyButton = page.locator('tr[data-node="report"] [data-testid^="copy-from-"]');
    // A JOIN step offers no copy (it merges branches a copy would not have); each step shows the
    // tokens it used, beside the thread's running total.
    expect(await page.locator('tr[data-node="merge"] [data-testid^="copy-from-"]').count()).toBe(0);
    expect(await page.locator('tr[data-node="report"]').getByTestId('step-tokens').innerText()).toMatch(
      /^\+\d+ tokens\n\d+ in all$/,
    );
    // "Copy from here" opens the copy's editor first; copied as it was, it is ready to run.
    await copyButton.click();
    await page.getByTestId('copy-confirm').click();
    await page.getByTestId('copied').waitFor();
    await shot('copy-from-step');
    await page.getByTestId('run-copy').click();
    await page.waitForURL((next) => next.toString() !== forkExecutionUrl);
    await executionStatus('COMPLETED');
    await page.locator('[data-testid="node-end"][data-status="COMPLETED"]').waitFor();
    await page.getByTestId('copied-from').waitFor();
    await shot('copy-run-completed');
    // The source execution lists the copy under its root thread.
    await page.goto(forkExecutionUrl);
    await page.locator('.tree').getByText('copy').first().waitFor();
  });

  it('answers an ask_for_input with plain text, as the terminal and respond --input read it', async () => {
    const askName = {
      id: 'ask-name',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'ask_for_input', showMessage: 'Your name?', outputVariable: 'name' },
        },
        { id: 'end', type: 'END', config: { output: { hello: '{{name}}' } } },
      ],
      edges: [
        { from: 'start', to: 'ask' },
        { from: 'ask', to: 'end' },
      ],
    };
    writeFileSync(join(workflowsDir, 'ask-name.json'), JSON.stringify(askName));
    await page.goto(`${url}/#/workflows/ask-name`);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    // Not JSON: the text itself is the answer (before, the page said "not JSON" and sent nothing).
    await page.getByTestId('answer-input').fill('Ada Lovelace');
    await page.getByRole('button', { name: 'Send' }).click();
    await executionStatus('COMPLETED');
    await page.getByTestId('thread-root').click();
    await page.locator('tr[data-node="end"]').getByText('"hello": "Ada Lovelace"').waitFor();
  });

  it('lists a long thread’s latest 100 steps, and earlier ones a hundred at a time on request', async () => {
    // Written now, so the screenshots above show the folder as the README does. A CODE node that
    // prints first (step 2): its node panel shows what it printed, however long ago.
    const printing = {
      ...longLoop,
      nodes: [
        ...longLoop.nodes,
        { id: 'hello', type: 'CODE', config: { code: "console.log('counting starts')\nreturn 0" } },
      ],
      edges: [
        { from: 'start', to: 'hello' },
        { from: 'hello', to: 'loop' },
        ...longLoop.edges.filter((edge) => edge.from !== 'start'),
      ],
    };
    writeFileSync(join(workflowsDir, 'long.json'), JSON.stringify(printing));
    await page.goto(`${url}/#/workflows/long`);
    await page.getByTestId('run-input').fill('{"count": 150}');
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('COMPLETED');
    await page.getByTestId('thread-root').click();
    const rows = page.locator('tr[data-node]');
    // 454 steps: the latest 100 (355-454), and the events of those steps only. The page can show
    // a read of the thread from while it ran until the read asked at its end answers.
    await expect.poll(() => rows.first().getAttribute('data-testid')).toBe('step-355');
    expect(await rows.count()).toBe(100);
    expect(await page.getByTestId('earlier-steps').innerText()).toContain('354 earlier steps not listed');
    const started = page.locator('[data-testid="event"][data-type="NODE_STARTED"]');
    expect(await started.count()).toBe(100);
    await page.getByTestId('show-earlier-steps').click();
    await expect.poll(() => rows.first().getAttribute('data-testid')).toBe('step-255');
    expect(await rows.count()).toBe(200);
    await expect.poll(() => started.count()).toBe(200);
    await page.getByTestId('node-hello').click();
    await page.getByTestId('node-logs-2').getByText('counting starts').waitFor();
  });

  it('draws a tall graph at a readable zoom from its top, scrolled to the rest, and a small one at its size', async () => {
    writeFileSync(join(workflowsDir, 'chain-11.json'), JSON.stringify(chainOf('chain-11', 11)));
    writeFileSync(join(workflowsDir, 'chain-3.json'), JSON.stringify(chainOf('chain-3', 3)));
    // A node is 180 px wide at zoom 1.
    const zoom = async () => (await page.getByTestId('node-start').boundingBox())!.width / 180;
    await page.goto(`${url}/#/workflows/chain-11`);
    await page.getByTestId('node-start').waitFor();
    // Fitting 11 nodes took a zoom near 0.45 (6 px labels): it stops at 0.75, from the top.
    await expect.poll(zoom).toBeGreaterThanOrEqual(0.74);
    expect(await inView('start')).toBe(true);
    expect(await inView('end')).toBe(false);
    await shot('tall-graph');
    // The wheel scrolls down to the rest.
    await scrollGraphTo('end');

    // Three nodes were drawn at twice their size: at most their own now, whole, in a panel their height.
    await page.goto(`${url}/#/workflows/chain-3`);
    await page.getByTestId('node-start').waitFor();
    await expect.poll(zoom).toBeLessThanOrEqual(1.01);
    expect(await zoom()).toBeGreaterThanOrEqual(0.74);
    for (const nodeId of ['start', 'step-1', 'end']) expect(await inView(nodeId)).toBe(true);
    expect((await page.getByTestId('graph').boundingBox())!.height).toBeLessThan(400);
    await shot('small-graph');
  });

  it('marks a step whose tool calls returned errors to the model, not as if all went well', async () => {
    const toolErrors = toolErrorsWorkflow('tool-errors', true);
    writeFileSync(join(workflowsDir, 'tool-errors.json'), JSON.stringify(toolErrors));
    await page.goto(`${url}/#/workflows/tool-errors`);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('COMPLETED');
    await page.getByTestId('thread-root').click();
    const marked = page.locator('tr[data-node="agent"]').getByTestId('step-tool-calls-failed');
    await expect.poll(() => marked.innerText()).toBe('⚠ 2 of 2 tool calls failed');
    // A step whose tool call worked has no mark.
    await page.locator('tr[data-node="weigher"]').waitFor();
    expect(await page.locator('tr[data-node="weigher"]').getByTestId('step-tool-calls-failed').count()).toBe(
      0,
    );
    // In the conversation, the two error results are marked failed; the weigher's answer is not.
    const failedResults = page.getByTestId('conversation').getByTestId('tool-result-failed');
    await expect
      .poll(() => failedResults.evaluateAll((rows) => rows.map((row) => row.textContent)))
      .toEqual([
        'tool · check · failedError: CODE_ERROR: tool "check": Error: no scale (line 1)',
        'tool · nope · failedError: there is no tool named "nope"; the tools are: check',
      ]);
    await page.getByTestId('conversation').getByText('{"grams":2000}').waitFor();
    await shot('tool-calls-failed');
  });

  it('draws an LLM node whose tool calls failed in the warning colour, with how many, and a clean one green', async () => {
    const runOf = async (id: string, failing: boolean) => {
      writeFileSync(join(workflowsDir, `${id}.json`), JSON.stringify(toolErrorsWorkflow(id, failing)));
      await page.goto(`${url}/#/workflows/${id}`);
      await page.getByTestId('start-run').click();
      await page.waitForURL(/#\/executions\//);
      await executionStatus('COMPLETED');
      await page.locator('[data-testid="node-weigher"][data-status="COMPLETED"]').waitFor();
    };
    const node = (nodeId: string) => page.getByTestId(`node-${nodeId}`);
    const borderOf = (nodeId: string) =>
      node(nodeId).evaluate((element) => {
        const { getComputedStyle } = globalThis as unknown as {
          getComputedStyle(element: unknown): { borderColor: string };
        };
        return getComputedStyle(element).borderColor;
      });
    const GREEN = 'rgb(47, 158, 68)';
    await runOf('graph-tool-errors', true);
    // The agent completed, but the model was shown two errors: marked as the steps table marks it.
    await page.locator('[data-testid="node-agent"][data-status="COMPLETED"]').waitFor();
    expect(await node('agent').getAttribute('data-tool-calls-failed')).toBe('2');
    expect(await node('agent').getAttribute('class')).toContain('warned');
    // Its tooltip says it first (its share of the AWS estimate after).
    expect((await node('agent').getAttribute('title'))?.split('\n')[0]).toBe('2 of 2 tool calls failed');
    expect(await page.getByTestId('tool-calls-failed-of-node-agent').innerText()).toBe('⚠ 2/2');
    expect(await borderOf('agent')).toBe('rgb(232, 89, 12)');
    // The weigher's one call worked: completed in green, unmarked.
    expect(await borderOf('weigher')).toBe(GREEN);
    expect(await node('weigher').getAttribute('data-tool-calls-failed')).toBeNull();
    expect(await page.getByTestId('tool-calls-failed-of-node-weigher').count()).toBe(0);
    await shot('graph-tool-calls-failed');
    // A run whose tool calls all worked: no node is marked.
    await runOf('graph-tool-calls-clean', false);
    await page.locator('[data-testid="node-agent"][data-status="COMPLETED"]').waitFor();
    expect(await page.locator('[data-tool-calls-failed]').count()).toBe(0);
    expect(await page.locator('.step-node.warned').count()).toBe(0);
    expect([await borderOf('agent'), await borderOf('weigher')]).toEqual([GREEN, GREEN]);
  });

  it("lists fork threads in their FORK's path order, a list's items by index", async () => {
    writeFileSync(join(workflowsDir, 'many-forks.json'), JSON.stringify(manyForks));
    await page.goto(`${url}/#/workflows/many-forks`);
    await page.getByTestId('run-input').fill(JSON.stringify(manyForksInput));
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('COMPLETED');
    const threads = page.locator('.tree [data-testid^="thread-"]');
    await expect
      .poll(() =>
        threads.evaluateAll((buttons) => buttons.map((button) => button.getAttribute('data-testid'))),
      )
      .toEqual(['thread-root', ...manyForksPathOrder.map((path) => `thread-${path}`)]);
    await shot('fork-threads-in-order');
  });
  it('shows a streaming reply growing, still there after a reload, then the committed message', async () => {
    // An OpenAI-compatible stand-in that holds the reply's last word back until the test lets it go.
    const model = await startScriptedServer();
    try {
      writeFileSync(
        join(workflowsDir, 'streaming-reply.json'),
        JSON.stringify({
          id: 'streaming-reply',
          version: 1,
          profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
          nodes: [
            { id: 'start', type: 'START' },
            { id: 'explain', type: 'LLM', config: { prompt: 'What is a stream?' } },
            { id: 'end', type: 'END', config: { output: '{{nodes.explain}}' } },
          ],
          edges: [
            { from: 'start', to: 'explain' },
            { from: 'explain', to: 'end' },
          ],
        }),
      );
      const reply = 'A stream is a list that arrives over time: you read each piece as it comes.';
      const held = heldBeforeLastWord(reply, { prompt: 9, completion: 17 });
      model.reply(held.reply);
      const sofar = 'A stream is a list that arrives over time: you read each piece as it';
      await page.goto(`${url}/#/workflows/streaming-reply`);
      await page.getByTestId('start-run').click();
      await page.waitForURL(/#\/executions\//);
      const streaming = page.getByTestId('streaming-reply');
      await expect.poll(() => streaming.innerText()).toContain(sofar);
      expect(await streaming.innerText()).not.toContain('comes.');
      await page.locator('[data-testid="node-explain"][data-status="RUNNING"]').waitFor();
      await shot('streaming-reply');
      // A reload mid-reply reads what came so far from the server.
      await page.reload();
      await expect.poll(() => streaming.innerText()).toContain(sofar);
      held.release();
      await executionStatus('COMPLETED');
      await page.getByTestId('conversation').locator('.msg-assistant', { hasText: reply }).waitFor();
      await expect.poll(() => streaming.count()).toBe(0);
    } finally {
      await model.close();
    }
  });
});
