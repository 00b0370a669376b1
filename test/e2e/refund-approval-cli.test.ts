/**
 * examples/refund-approval.json through the CLI (bin/stepthread.js in its own process): the example that
 * streams its replies, looks the order up with a tool of its MCP server (examples/mcp/orders-server.mjs,
 * started over stdio from the workflow file's folder, whatever the current directory) and asks before
 * the refund. A copy whose server also logs its calls (the handler's `env`, the one change) shows the
 * server saw exactly one lookup, across the stop at the question and the resume.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliProcess } from '../support/cli-process.ts';
import { ROOT } from './helpers.ts';

const EXAMPLE = join(ROOT, 'examples', 'refund-approval.json');
const INPUT = '{"customer": "Ada", "order": "A-17"}';
const LOOKUP = '{"order":"A-17","customer":"Ada","status":"paid","charges":[80,80],"currency":"EUR"}';
const FINAL = 'I have dealt with the double charge on order A-17; the tool result above says what was done.';

let dir: string;
/** Neither the examples' folder nor the copy's: a relative command must not depend on it. */
let elsewhere: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'stepthread-refund-example-'));
  elsewhere = join(dir, 'elsewhere');
  mkdirSync(elsewhere);
  cpSync(join(ROOT, 'examples', 'mcp'), join(dir, 'copy', 'mcp'), { recursive: true });
  // The server imports the SDK, as it would from a project with stepthread installed.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface RunJson {
  executionId: string;
  status: string;
  output: unknown;
  conversation: { role: string; name?: string; content: string }[];
}

const cli = (args: string[], dataDir: string) =>
  cliProcess([...args, '--data-dir', join(dir, dataDir)], { cwd: elsewhere });

/** The example with its server logging each call to `calls` (nothing else differs). */
function loggingCopy(name: string, calls: string): string {
  const workflow = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as {
    tools: { lookup_order: { handler: Record<string, unknown> } };
  };
  workflow.tools.lookup_order.handler.env = { ORDERS_CALLS_FILE: calls };
  const file = join(dir, 'copy', `${name}.json`);
  writeFileSync(file, JSON.stringify(workflow));
  return file;
}

/** The calls the server saw, as it logged them. */
function callsSeen(calls: string): unknown[] {
  if (!existsSync(calls)) return [];
  return readFileSync(calls, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

const toolMessages = (result: RunJson) =>
  result.conversation.filter((m) => m.role === 'tool').map((m) => [m.name, m.content]);

describe('examples/refund-approval.json through the CLI', () => {
  it('streams its replies and reads the order from its MCP server, started from the file’s folder', async () => {
    const text = await cli(['run', EXAMPLE, '--input', INPUT, '--answers', '{"agent": true}'], 'text');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toContain('    agent │ Looking up order A-17.\n');
    expect(text.stderr).toContain(`    agent │ ${FINAL}\n`);
    expect(text.stdout).toMatch(/^status {4}COMPLETED$/m);

    const json = await cli(
      ['run', EXAMPLE, '--input', INPUT, '--answers', '{"agent": true}', '--json'],
      'json',
    );
    expect(json.code, json.stderr).toBe(0);
    const result = JSON.parse(json.stdout) as RunJson;
    expect(result).toMatchObject({ status: 'COMPLETED', output: { reply: FINAL } });
    expect(toolMessages(result)).toEqual([
      ['lookup_order', LOOKUP],
      ['refund', '{"refunded":80,"order":"A-17","currency":"EUR"}'],
    ]);
  }, 120_000);

  it('stops at the refund for approval; resumed with true, refunds once, the server having seen one lookup', async () => {
    const calls = join(dir, 'approve-calls.jsonl');
    const file = loggingCopy('approve', calls);
    const stopped = await cli(['run', file, '--input', INPUT], 'approve');
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(stopped.stderr).toContain(
      'node agent (ask_for_approval) "Approve the call of tool refund with {"order":"A-17","amount":80}?" needs an answer',
    );
    expect(callsSeen(calls)).toEqual([{ tool: 'lookup_order', args: { order: 'A-17' } }]);
    const executionId = /started execution (\S+)/.exec(stopped.stderr)?.[1];

    const resumed = await cli(['resume', executionId!, '--answers', '{"agent": true}', '--json'], 'approve');
    expect(resumed.code, resumed.stderr).toBe(0);
    const result = JSON.parse(resumed.stdout) as RunJson;
    expect(result).toMatchObject({ executionId, status: 'COMPLETED', output: { reply: FINAL } });
    expect(toolMessages(result)).toEqual([
      ['lookup_order', LOOKUP],
      ['refund', '{"refunded":80,"order":"A-17","currency":"EUR"}'],
    ]);
    // The resume went on from the held call: the lookup was not made again.
    expect(callsSeen(calls)).toEqual([{ tool: 'lookup_order', args: { order: 'A-17' } }]);
  }, 120_000);

  it('rejected, never refunds and hands the model the reason, the server having seen one lookup', async () => {
    const calls = join(dir, 'reject-calls.jsonl');
    const file = loggingCopy('reject', calls);
    const answers = '{"agent": {"reject": true, "reason": "refunds over 50 EUR go through finance"}}';
    const rejected = await cli(['run', file, '--input', INPUT, '--answers', answers, '--json'], 'reject');
    expect(rejected.code, rejected.stderr).toBe(0);
    const result = JSON.parse(rejected.stdout) as RunJson;
    expect(result.status).toBe('COMPLETED');
    expect(toolMessages(result)).toEqual([
      ['lookup_order', LOOKUP],
      [
        'refund',
        'Rejected: a person did not approve this call of refund, so the tool did not run. Reason: refunds over 50 EUR go through finance',
      ],
    ]);
    expect(callsSeen(calls)).toEqual([{ tool: 'lookup_order', args: { order: 'A-17' } }]);
  }, 120_000);
});
