/**
 * `stepthread prune` as the user runs it: a duration it cannot read is INVALID_DURATION (exit 2),
 * nothing is pruned without a duration or STEPTHREAD_RETENTION_DAYS, a run younger than the duration
 * stays, and a pruned run's thread is not found by `inspect`.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PruneReport } from '../../functions/local/prune.ts';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
let dataDir: string;
const cli = (args: string[], env: Record<string, string> = {}) =>
  runCli([...args, '--data-dir', dataDir], { cwd: ROOT, env });

beforeAll(async () => {
  dataDir = join(await mkdtemp(join(tmpdir(), 'stepthread-prune-')), 'data');
});

describe('stepthread prune', () => {
  it('refuses a duration it cannot read, or none, before opening the data', async () => {
    for (const bad of ['30', 'soon', '-1d', '1y']) {
      const result = await cli(['prune', '--older-than', bad]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('INVALID_DURATION');
    }
    const none = await cli(['prune']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/INVALID_DURATION: .*--older-than.*STEPTHREAD_RETENTION_DAYS/);
    expect((await cli(['prune'], { STEPTHREAD_RETENTION_DAYS: 'week' })).stderr).toContain(
      'INVALID_DURATION',
    );
  });

  it('keeps runs younger than the duration, removes older ones, and inspect then says not found', async () => {
    const run = await cli(['run', 'examples/route-loop.json', '--json']);
    expect(run.code).toBe(0);
    const { threadId, executionId } = JSON.parse(run.stdout) as { threadId: string; executionId: string };

    const young = await cli(['prune', '--json'], { STEPTHREAD_RETENTION_DAYS: '30' });
    expect(young.code).toBe(0);
    expect((JSON.parse(young.stdout) as PruneReport).removed.runs).toBe(0);

    const dry = await cli(['prune', '--older-than', '0s', '--dry-run']);
    expect(dry.stdout).toMatch(/^would prune .* route-loop {2}COMPLETED/m);
    expect(dry.stdout).toMatch(/^would remove 1 run \(1 thread\) ended before .*: \d+ items \(/m);
    expect((await cli(['inspect', threadId, '--json'])).code).toBe(0);

    const pruned = await cli(['prune', '--older-than', '0s', '--json']);
    expect(pruned.code).toBe(0);
    const report = JSON.parse(pruned.stdout) as PruneReport;
    expect(report.pruned).toMatchObject([{ rootThreadId: threadId, executionIds: [executionId] }]);
    expect(report.removed.items).toBeGreaterThan(0);
    expect(report.removed.bytes).toBeGreaterThan(0);

    for (const id of [threadId, executionId]) {
      const inspect = await cli(['inspect', id]);
      expect(inspect.code).toBe(1);
      expect(inspect.stderr).toContain(`EXECUTION_NOT_FOUND: execution or thread ${id} not found`);
    }
    expect((await cli(['runs', '--json'])).stdout.trim()).toBe('[]');
  });
});
