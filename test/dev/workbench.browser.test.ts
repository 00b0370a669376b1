/**
 * The console as a workbench, in a real browser (Debian's `chromium` through playwright-core; skipped
 * without it): Resume of a run whose `dev` was stopped, Retry of a failed run from its failed node, a
 * node's input as it ran, "copy from here" with an edited variable and with an edited node config,
 * Compare of the copy with its source, the executions list's filters and search, and the timeline of
 * node runs. Screenshots go to
 * a temporary directory, or to docs/console/ with STEPTHREAD_UPDATE_SCREENSHOTS=1.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { buildConsoleIfMissing, chromiumOrSkip, openPage, screenshotsDir } from '../support/chromium.ts';
import { type DevInProcess, startDevInProcess } from '../support/dev-in-process.ts';
import { startDevProcess, startWaitingTriage } from '../support/dev-process.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = join(import.meta.dirname, '..', '..');
const SHOTS = screenshotsDir('workbench');
const TICKET = { ticket: { subject: 'Double billing in March', customer: 'Ana', monthlyFee: 30 } };

/** start → topic (a VARIABLE) → summarize (an LLM on the stand-in) → end. */
function summaryWorkflow(baseUrl: string) {
  return {
    id: 'summary',
    version: 1,
    variables: [{ name: 'topic', type: 'string', scope: 'thread' }],
    profiles: { default: { provider: 'openai', model: 'test-model', baseUrl } },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'topic',
        type: 'VARIABLE',
        config: { variableName: 'topic', variableType: 'string', expression: "'the payments service'" },
      },
      { id: 'summarize', type: 'LLM', config: { prompt: 'Summarize {{topic}}.' } },
      { id: 'end', type: 'END', config: { output: '{{nodes.summarize}}' } },
    ],
    edges: [
      { from: 'start', to: 'topic' },
      { from: 'topic', to: 'summarize' },
      { from: 'summarize', to: 'end' },
    ],
  };
}

const executablePath = chromiumOrSkip('workbench browser test');

describe.skipIf(executablePath === undefined)('the console as a workbench, in chromium', () => {
  let browser: Browser;
  let page: Page;
  let url = '';
  let dev: DevInProcess | undefined;
  let dataDir = '';
  let workflowsDir = '';
  let model: ScriptedServer;
  /** support-triage left waiting for its approval by an earlier `dev`, stopped with Ctrl-C. */
  let interruptedId = '';

  beforeAll(async () => {
    await buildConsoleIfMissing();
    model = await startScriptedServer();
    workflowsDir = mkdtempSync(join(tmpdir(), 'stepthread-workbench-workflows-'));
    cpSync(join(ROOT, 'examples'), workflowsDir, { recursive: true });
    writeFileSync(join(workflowsDir, 'summary.json'), JSON.stringify(summaryWorkflow(`${model.url}/v1`)));
    dataDir = mkdtempSync(join(tmpdir(), 'stepthread-workbench-'));
    const earlier = await startDevProcess(dataDir, dataDir, workflowsDir);
    try {
      interruptedId = await startWaitingTriage(earlier.url);
      expect(await earlier.interrupt()).toBe(130);
    } finally {
      earlier.kill();
    }
    dev = await startDevInProcess(workflowsDir, dataDir);
    url = dev.url;
    ({ browser, page } = await openPage(executablePath!));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dev) expect(await dev.stop()).toBe(0);
    await model?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workflowsDir, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const executionStatus = (status: string) =>
    page.locator(`[data-testid="execution-status"][data-status="${status}"]`).waitFor();
  const executionIdOfPage = () => decodeURIComponent(/#\/executions\/([^/?]+)/.exec(page.url())![1]!);
  const rootThreadOf = async (executionId: string) =>
    (
      (await (await page.request.get(`${url}/api/executions/${encodeURIComponent(executionId)}`)).json()) as {
        rootThreadId: string;
      }
    ).rootThreadId;

  /** support-triage started in the page and approved there, to its end; its execution id. */
  const approvedTriage = async () => {
    await page.goto(`${url}/#/workflows/support-triage`);
    await page.getByTestId('run-input').fill(JSON.stringify(TICKET));
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await page.getByTestId('approve').click();
    await executionStatus('COMPLETED');
    return executionIdOfPage();
  };

  let triageId = '';
  let copyExecutionId = '';

  it('resumes a run whose dev was stopped: it asks its question again in the page and completes', async () => {
    await page.goto(`${url}/#/executions/${encodeURIComponent(interruptedId)}`);
    await executionStatus('INTERRUPTED');
    expect(await page.getByTestId('approve').isDisabled()).toBe(true);
    await page.getByTestId('resume-execution').click();
    // Running in this server now: the question it stopped at can be answered here.
    await executionStatus('RUNNING');
    await expect.poll(() => page.getByTestId('approve').isDisabled()).toBe(false);
    expect(await page.getByTestId('resume-execution').count()).toBe(0);
    expect(await page.getByTestId('interrupted').count()).toBe(0);
    await shot('resumed-run');
    await page.getByTestId('approve').click();
    await executionStatus('COMPLETED');
    // The same execution, to its end: the approval went into the credit.
    await page.getByTestId('thread-root').click();
    await expect.poll(() => page.getByTestId('variables').innerText()).toContain('"amount": 6');
    expect(executionIdOfPage()).toBe(interruptedId);
  });

  it('retries a failed run from the node it failed at: a copy from there runs and completes', async () => {
    // The model refuses the first request, and answers the retry's.
    model.reply({ status: 400, body: { error: { message: 'model overloaded' } } });
    model.reply(textReply('The payments service is fast but has a single region.'));
    await page.goto(`${url}/#/workflows/summary`);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('FAILED');
    const failedUrl = page.url();
    const retry = page.getByTestId('retry-execution');
    await expect.poll(() => retry.innerText()).toBe('Retry from summarize');
    await shot('retry-failed-run');
    await retry.click();
    await page.waitForURL((next) => next.toString() !== failedUrl);
    await executionStatus('COMPLETED');
    await page.getByTestId('copied-from').waitFor();
    await page
      .getByTestId('conversation')
      .getByText('The payments service is fast but has a single region.')
      .waitFor();
    // It ran from summarize: topic's step is its source's, not run again.
    await expect
      .poll(() =>
        page.locator('tr[data-node]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-node'))),
      )
      .toEqual(['summarize', 'end']);
    expect(model.requests.at(-1)?.body).toMatchObject({
      messages: [expect.objectContaining({ role: 'user', content: 'Summarize the payments service.' })],
    });
  });

  it('shows what a node read as it ran: the rendered prompt, its tool calls, the variables it read', async () => {
    triageId = await approvedTriage();
    await page.getByTestId('node-classify').click();
    const input = page.getByTestId('node-input');
    await expect
      .poll(() => input.getByTestId('node-input-prompt').innerText())
      .toContain('Classify this ticket as billing or technical: Double billing in March');
    await input.locator('[data-testid="node-input-tool-call"][data-tool="tenure"]').waitFor();
    expect(await input.getByTestId('node-input-tool-call').innerText()).toBe(
      'tenure({"since":2019,"now":2025}) → {"years":6}',
    );
    await page.getByTestId('node-reply').click();
    await expect
      .poll(() => input.getByTestId('node-input-prompt').innerText())
      .toContain('Write the reply to Ana. Credit granted: 6 EUR.');
    expect(await input.getByTestId('node-input-read-credit').innerText()).toContain('"amount": 6');
    await shot('node-input');
  });

  it('copies from a step with an edited variable, and the copy runs with it', async () => {
    await page.goto(`${url}/#/executions/${encodeURIComponent(triageId)}`);
    await page.getByTestId('thread-root').click();
    await page.locator('tr[data-node="compute-credit"] [data-testid^="copy-from-"]').click();
    const editor = page.getByTestId('copy-editor');
    // The variables as the step found them, the input, and the node's configuration: a text as it
    // is, any other value as JSON.
    await expect.poll(() => editor.getByTestId('copy-var-approved').inputValue()).toBe('true');
    expect(JSON.parse(await editor.getByTestId('copy-input').inputValue())).toEqual(TICKET);
    expect(await editor.getByTestId('copy-config-outputVariable').inputValue()).toBe('credit');
    expect(JSON.parse(await editor.getByTestId('copy-config-inputs').inputValue())).toEqual({
      fee: 'input.ticket.monthlyFee',
    });
    // A value its declared type refuses is refused with its code, and nothing is copied.
    await editor.getByTestId('copy-var-approved').fill('"no"');
    await editor.getByTestId('copy-confirm').click();
    await expect.poll(() => editor.getByTestId('copy-error').innerText()).toContain('INVALID_VARIABLE');
    expect(await page.getByTestId('copied').count()).toBe(0);
    await editor.getByTestId('copy-var-approved').fill('false');
    await shot('copy-editor');
    const sourceUrl = page.url();
    await editor.getByTestId('copy-and-run').click();
    await page.waitForURL((next) => next.toString() !== sourceUrl);
    await executionStatus('COMPLETED');
    copyExecutionId = executionIdOfPage();
    await page.getByTestId('thread-root').click();
    // It ran with approved false: no credit, and the reply says so.
    await expect.poll(() => page.getByTestId('variables').innerText()).toContain('"approved": false');
    expect(await page.getByTestId('variables').innerText()).toContain('"amount": 0');
    const lastReply = page.getByTestId('conversation').locator('.msg-assistant').last();
    await expect
      .poll(() => lastReply.innerText())
      .toMatch(/Sorry for the double charge\. We have refunded it\.$/);
  });

  it('compares the copy with its source: where they part and each differing step marked', async () => {
    await page.goto(`${url}/#/executions/${encodeURIComponent(triageId)}`);
    await page.getByTestId('compare-copy').click();
    await page.waitForURL(/#\/compare\//);
    const rows = page.getByTestId('compare-step');
    await rows.first().waitFor();
    const marks = () =>
      rows.evaluateAll((all) =>
        all.map((row) => [
          row.getAttribute('data-node'),
          row.getAttribute('data-differs'),
          row.getAttribute('data-parting'),
        ]),
      );
    // Compared from the copy point: compute-credit parts them, reply and end differ after it.
    expect(await marks()).toEqual([
      ['compute-credit', 'true', 'true'],
      ['reply', 'true', 'false'],
      ['end', 'true', 'false'],
    ]);
    expect(await page.getByTestId('compare-parts').innerText()).toMatch(
      /^They part at step \d+: compute-credit gave another output\.$/,
    );
    const variables = await page.getByTestId('compare-variables').innerText();
    expect(variables).toContain('approved');
    expect(variables).toContain('credit');
    expect(await page.getByTestId('compare-final').getAttribute('data-same')).toBe('false');
    // The conversations side by side, message by message.
    const messages = page.getByTestId('compare-message');
    const differing = await messages.evaluateAll((all) => all.map((row) => row.getAttribute('data-differs')));
    // The same up to the reply's prompt (another credit granted) and the reply itself.
    expect(differing.slice(-2)).toEqual(['true', 'true']);
    expect(differing.slice(0, -2).every((value) => value === 'false')).toBe(true);
    const lastPair = await messages.last().innerText();
    expect(lastPair).toContain('We have refunded it and added a goodwill credit of 6 EUR');
    expect(lastPair).toContain('Sorry for the double charge. We have refunded it.');
    await shot('compare');
  });

  it('filters the executions by workflow, status and time, searches them by id, and compares two ticked', async () => {
    await page.goto(`${url}/#/`);
    const rows = page.getByTestId('execution-row');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(5);
    const shown = () => rows.evaluateAll((all) => all.map((row) => row.getAttribute('data-execution')));
    const all = await shown();
    await page.getByTestId('filter-workflow').selectOption('summary');
    await expect.poll(async () => (await shown()).length).toBe(2);
    await page.getByTestId('filter-status').selectOption('FAILED');
    await expect.poll(shown).toHaveLength(1);
    expect(await rows.first().innerText()).toContain('summary');
    await page.getByTestId('filter-status').selectOption('');
    await page.getByTestId('filter-workflow').selectOption('');
    // Search: any part of an execution id.
    await page.getByTestId('filter-search').fill(triageId.slice(4, 14));
    await expect.poll(shown).toEqual([triageId]);
    await page.getByTestId('filter-search').fill('');
    await page.getByTestId('filter-time').selectOption(String(3_600_000));
    // Every run here started in the last hour.
    await expect.poll(shown).toEqual(all);
    await page.getByTestId('filter-workflow').selectOption('support-triage');
    await expect.poll(async () => (await shown()).length).toBe(3);
    expect(await page.getByTestId('filter-count').innerText()).toBe(`3 of ${all.length} executions`);
    await shot('executions-filtered');
    // Two ticked: compared side by side.
    for (const id of [triageId, copyExecutionId]) {
      await page
        .locator(`[data-testid="execution-row"][data-execution="${id}"] [data-testid="compare-tick"]`)
        .check();
    }
    await page.getByTestId('compare-ticked').click();
    await page.waitForURL(/#\/compare\//);
    await page.getByTestId('comparison').waitFor();
    expect(await page.getByTestId('compare-side-a').innerText()).toContain(await rootThreadOf(triageId));
  });

  it("copies from a step with the node's prompt edited: a refused edit shows its code, the copy runs with the new prompt", async () => {
    await page.goto(`${url}/#/executions/${encodeURIComponent(triageId)}`);
    await page.getByTestId('thread-root').click();
    await page.locator('tr[data-node="reply"] [data-testid^="copy-from-"]').click();
    const editor = page.getByTestId('copy-editor');
    const prompt = editor.getByTestId('copy-config-prompt');
    // A prompt is edited as its text.
    await expect
      .poll(() => prompt.inputValue())
      .toBe(
        'Write the reply to {{input.ticket.customer}}. Credit granted: {{credit.amount}} {{credit.currency}}.',
      );
    /** Copy is clicked; the copy API's answer's status and the codes the editor shows. */
    const refusedCopy = async () => {
      const answered = page.waitForResponse(
        (response) => response.request().method() === 'POST' && response.url().endsWith('/copy'),
      );
      await editor.getByTestId('copy-confirm').click();
      const status = (await answered).status();
      await editor.getByTestId('copy-error').waitFor();
      const codes = await editor
        .getByTestId('copy-error')
        .locator('[data-code]')
        .evaluateAll((all) => all.map((item) => item.getAttribute('data-code')));
      return { status, codes, text: await editor.getByTestId('copy-error').innerText() };
    };
    // A key the node's type does not take: refused with its code, and nothing is copied.
    await editor.getByTestId('copy-config-new-key').fill('promt');
    await editor.getByTestId('copy-config-new-value').fill('"Say hi."');
    expect(await refusedCopy()).toMatchObject({
      status: 400,
      codes: ['UNKNOWN_KEY'],
      text: expect.stringContaining('did you mean "prompt"?'),
    });
    await editor.getByTestId('copy-config-new-key').fill('');
    await editor.getByTestId('copy-config-new-value').fill('');
    // A prompt that reads a variable the workflow does not have: refused too.
    await prompt.fill('Write the reply to {{nosuch}}.');
    expect(await refusedCopy()).toMatchObject({ status: 400, codes: ['UNKNOWN_VARIABLE_REFERENCE'] });
    expect(await page.getByTestId('copied').count()).toBe(0);
    await prompt.fill(
      'Write a short reply to {{input.ticket.customer}}, with us since 2019. Credit granted: {{credit.amount}} {{credit.currency}}.',
    );
    expect(await editor.getByTestId('copy-error').count()).toBe(0);
    await shot('copy-editor-node-config');
    const sourceUrl = page.url();
    await editor.getByTestId('copy-and-run').click();
    await page.waitForURL((next) => next.toString() !== sourceUrl);
    await executionStatus('COMPLETED');
    await page.getByTestId('thread-root').click();
    // The copy ran reply with the new prompt: the conversation has it, and the step's input too.
    const newPrompt = 'Write a short reply to Ana, with us since 2019. Credit granted: 6 EUR.';
    await page.getByTestId('conversation').getByText(newPrompt).waitFor();
    expect(await page.getByTestId('conversation').innerText()).not.toContain('Write the reply to Ana.');
    await page.getByTestId('node-reply').click();
    await expect.poll(() => page.getByTestId('node-input-prompt').innerText()).toContain(newPrompt);
    // The copy's page lists the edit it was made with, and its source's threads are untouched.
    const edits = page.getByTestId('copy-edit');
    await expect
      .poll(() => edits.evaluateAll((all) => all.map((item) => item.getAttribute('data-kind'))))
      .toEqual(['nodeConfig']);
    expect(await edits.first().innerText()).toContain('node reply config prompt');
    expect(await edits.first().innerText()).toContain('with us since 2019');
    await shot('copy-node-config-run');
  });

  it('draws a timeline of the node runs, each fork branch on its own row', async () => {
    await page.goto(`${url}/#/workflows/fork-join-research`);
    await page.getByTestId('run-input').fill('{"topic": "the payments service"}');
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/executions\//);
    await executionStatus('COMPLETED');
    const timeline = page.getByTestId('timeline');
    const rowsOf = () =>
      timeline
        .locator('[data-testid^="timeline-row-"]')
        .evaluateAll((all) => all.map((row) => row.getAttribute('data-testid')));
    await expect
      .poll(rowsOf)
      .toEqual([
        'timeline-row-root',
        'timeline-row-split/facts',
        'timeline-row-split/risks',
        'timeline-row-split/summary',
      ]);
    const barsOf = (row: string) =>
      timeline
        .getByTestId(`timeline-row-${row}`)
        .getByTestId('timeline-bar')
        .evaluateAll((all) => all.map((bar) => bar.getAttribute('data-node')));
    expect(await barsOf('root')).toEqual(['start', 'plan', 'split', 'merge', 'report', 'end']);
    expect(await barsOf('split/facts')).toEqual(['facts']);
    // Each bar starts no earlier than the one before it on its row, and the branches after the FORK.
    const lefts = async (row: string) =>
      timeline
        .getByTestId(`timeline-row-${row}`)
        .getByTestId('timeline-bar')
        .evaluateAll((all) => all.map((bar) => bar.getBoundingClientRect().left));
    const root = await lefts('root');
    expect([...root].sort((x, y) => x - y)).toEqual(root);
    expect((await lefts('split/facts'))[0]).toBeGreaterThanOrEqual(root[2]!);
    // A bar opens its node, on its thread.
    await timeline.getByTestId('timeline-row-split/risks').getByTestId('timeline-bar').click();
    await page.getByTestId('node-panel').getByText('Node risks').waitFor();
    // Its input as it ran on its branch: the prompt over the state the FORK left.
    await expect
      .poll(() => page.getByTestId('node-input-prompt').innerText())
      .toContain('List the main risks of the payments service.');
    await shot('timeline');
  });
});
