/**
 * `copy --set` / `--input` (issue 28, counterfactual runs): a copy edited before its first step runs
 * with the edits, records them (inspect shows them), and an edit the workflow refuses is a coded usage
 * error at copy time that writes nothing. On support-triage: a billing ticket whose credit was
 * refused, copied from compute-credit with `approved` set to true.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { createAwsClients, releaseAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TRIAGE = join(ROOT, 'examples', 'support-triage.json');
const TICKET = { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 };

let dir: string;
let source: RunJsonResult;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-copy-edits-'));
  const run = await cli(
    'run',
    TRIAGE,
    '--input',
    JSON.stringify({ ticket: TICKET }),
    '--answers',
    '{"approve-credit": false}',
    '--json',
  );
  expect(run.code).toBe(0);
  source = JSON.parse(run.stdout);
  expect(source.output).toMatchObject({ approved: false, credit: { amount: 0 } });
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli([...args, '--data-dir', join(dir, 'data')], { cwd: dir });

async function runCopy(copyId: string): Promise<RunJsonResult> {
  const run = await cli('run', TRIAGE, '--thread', copyId, '--json');
  expect(run.stderr).not.toMatch(/error/i);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}

/** How many items the data directory's table holds. */
async function storedItems(): Promise<number> {
  const services = await openDataDir(join(dir, 'data'), { create: false });
  try {
    const clients = createAwsClients(services.target, services.names);
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await clients.dynamo.send(
        new ScanCommand({
          TableName: services.names.tableName,
          Select: 'COUNT',
          ExclusiveStartKey: startKey,
        }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    releaseAwsClients(services.target);
    return count;
  } finally {
    await services.close();
  }
}

describe('copy with edits', () => {
  it('--set: the copy runs with the edited variable; its source stays as it was', async () => {
    const copied = await cli('copy', source.threadId, '--from', 'compute-credit', '--set', 'approved=true');
    expect(copied.stderr).toBe('');
    expect(copied.code).toBe(0);
    const rerun = await runCopy(copied.stdout.trim());
    expect(rerun.output).toEqual({
      category: 'billing',
      approved: true,
      credit: { amount: 6, currency: 'EUR' },
      reply:
        'Sorry for the double charge. We have refunded it and added a goodwill credit of 6 EUR to your account.',
    });
    const before = JSON.parse((await cli('inspect', source.threadId, '--json')).stdout);
    expect(before.threads[0].output).toMatchObject({ approved: false, credit: { amount: 0 } });
  });

  it('--input replaces the input the copy runs with (beside a --set)', async () => {
    const input = JSON.stringify({ ticket: { ...TICKET, monthlyFee: 50 } });
    const copied = await cli(
      'copy',
      source.threadId,
      '--from',
      'compute-credit',
      '--input',
      input,
      '--set',
      'approved=true',
    );
    expect(copied.code).toBe(0);
    const rerun = await runCopy(copied.stdout.trim());
    expect(rerun.output).toMatchObject({ approved: true, credit: { amount: 10, currency: 'EUR' } });
  });

  it('inspect shows the edits, in text and in --json', async () => {
    const copyId = (
      await cli('copy', source.threadId, '--from', 'compute-credit', '--set', 'approved=true')
    ).stdout.trim();
    const report = JSON.parse((await cli('inspect', copyId, '--json')).stdout);
    expect(report.threads[0].edits).toEqual([
      { kind: 'variable', name: 'approved', scope: 'thread', value: true, at: expect.any(String) },
    ]);
    const text = (await cli('inspect', copyId)).stdout;
    expect(text).toMatch(/\n {2}edited before its first step: thread variable approved = true \(\S+\)\n/);
    // Run, then copied from its first step (time travel over the copy's records), it still has the
    // edit's effect, which is in none of its step records; the new copy has no edits of its own.
    await runCopy(copyId);
    const again = await cli('copy', copyId, '--from', '1');
    expect(again.code).toBe(0);
    const againId = again.stdout.trim();
    expect(JSON.parse((await cli('inspect', againId, '--json')).stdout).threads[0].edits).toBeUndefined();
    expect((await runCopy(againId)).output).toMatchObject({ approved: true, credit: { amount: 6 } });
  });

  it.each([
    [
      ['--set', 'aproved=true'],
      'UNKNOWN_VARIABLE_REFERENCE',
      /no thread or global variable "aproved" \(it has approved, category, credit\)/,
    ],
    [
      ['--set', 'approved="yes"'],
      'INVALID_VARIABLE',
      /"approved" \(thread\) is declared boolean but was given string/,
    ],
    [['--set', 'approved=yes'], 'INVALID_COPY_EDIT', /--set approved: the value is not JSON/],
    [['--set', 'approved'], 'INVALID_COPY_EDIT', /give <variable>=<json>/],
    [['--input', '[1]'], 'INPUT_INVALID', /must be a JSON object/],
    [['--input', '{"ticket": '], 'INPUT_INVALID', /not valid JSON/],
  ])('refuses %j with %s, exit 2, writing nothing', async (args, code, message) => {
    const items = await storedItems();
    const refused = await cli('copy', source.threadId, '--from', 'compute-credit', ...args);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`${code}: `);
    expect(refused.stderr).toMatch(message);
    expect(await storedItems()).toBe(items);
  });
});
