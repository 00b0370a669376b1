/**
 * `inspect --bytes` (issue 29): each thread's stored bytes, in the text (a `stored …` line per thread)
 * and in `--json` (`storedBytes`); without the flag, none is read or shown. What it counts is
 * checked against the table and bucket in test/e2e/stored-bytes.test.ts.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type InspectReport, storedBytesLine } from '../../cli/commands/inspect.ts';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
let dataDir: string;
const cli = (args: string[]) => runCli([...args, '--data-dir', dataDir], { cwd: ROOT });

beforeAll(async () => {
  dataDir = join(await mkdtemp(join(tmpdir(), 'stepthread-inspect-bytes-')), 'data');
});

describe('inspect --bytes', () => {
  it("shows each thread's stored bytes: DynamoDB items and the S3 objects it owns", async () => {
    const run = await cli([
      'run',
      'examples/fork-join-research.json',
      '--input',
      '{"topic":"caching"}',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const { executionId } = JSON.parse(run.stdout) as { executionId: string };

    const json = await cli(['inspect', executionId, '--bytes', '--json', '--no-conversation']);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as InspectReport;
    expect(report.threads).toHaveLength(4);
    for (const thread of report.threads) {
      const stored = thread.storedBytes!;
      expect(stored.items).toBeGreaterThan(0);
      // Each item is billed at its size plus 100 bytes.
      expect(stored.itemBytes).toBeGreaterThan(100 * stored.items);
      expect(stored.bytes).toBe(stored.itemBytes + stored.objectBytes);
      // Every thread wrote a conversation segment of its own (the root its plan and report).
      expect(stored.objects).toBeGreaterThanOrEqual(1);
    }

    const text = await cli(['inspect', executionId, '--bytes', '--no-conversation']);
    const lines = text.stdout.split('\n').filter((line) => line.startsWith('  stored '));
    expect(lines).toEqual(report.threads.map((thread) => `  ${storedBytesLine(thread.storedBytes!)}`));
    expect(lines[0]).toMatch(
      /^ {2}stored \d+\.\d KB: \d+ items \(\d+\.\d KB\) in DynamoDB, \d+ objects? \(\d+(\.\d KB| B)\) in S3$/,
    );

    const plain = await cli(['inspect', executionId, '--json', '--no-conversation']);
    expect(
      (JSON.parse(plain.stdout) as InspectReport).threads.some((thread) => 'storedBytes' in thread),
    ).toBe(false);
    expect((await cli(['inspect', executionId])).stdout).not.toContain('  stored ');
  });
});
