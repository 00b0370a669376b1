/**
 * `stepthread prune [--older-than <duration>] [--dry-run] [--json] [--data-dir <dir>]`: removes the
 * local runs that ended longer ago than the duration (default STEPTHREAD_RETENTION_DAYS), with their
 * DynamoDB items and the S3 objects no remaining thread reads, and says what it removed. Runs in
 * progress are skipped whatever their age. The rules are functions/local/prune.ts's.
 */
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import { resolveAwsTarget } from '../../functions/aws/target.ts';
import type { PruneReport } from '../../functions/local/prune.ts';
import { type CliIo, EXIT } from '../io.ts';
import { type DataDirOption, withStores } from '../local-session.ts';
import { parseDuration, RETENTION_DAYS_VARIABLE, retentionFromEnv } from '../retention.ts';

export interface PruneOptions extends DataDirOption {
  olderThan?: string;
  dryRun?: boolean;
  json?: boolean;
}

export async function runPrune(options: PruneOptions, io: CliIo, now: Date = new Date()): Promise<number> {
  const env = io.env ?? process.env;
  let keepMs: number | undefined;
  try {
    if (resolveAwsTarget(env, { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' }).kind !== 'embedded') {
      throw new StepthreadError(
        'PRUNE_NOT_LOCAL',
        'prune removes runs from a local data directory; a deployed stack expires ended runs itself (its retentionDays, docs/deploy.md)',
      );
    }
    keepMs = options.olderThan === undefined ? retentionFromEnv(env) : parseDuration(options.olderThan);
    if (keepMs === undefined) {
      throw new StepthreadError(
        'INVALID_DURATION',
        `say how old an ended run must be to go: --older-than <duration> (30d, 12h, …), or set ${RETENTION_DAYS_VARIABLE}; without either, runs are kept forever`,
      );
    }
  } catch (error) {
    const { code, message } = error as StepthreadError;
    io.stderr(`stepthread: ${code}: ${message}\n`);
    return EXIT.usage;
  }
  const endedBefore = new Date(now.getTime() - keepMs);
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot prune ${session.location}` : 'cannot open the stores'),
    async (session) => {
      const { pruneEndedRuns } = await import('../../functions/local/prune.ts');
      const report = await pruneEndedRuns(session.clients, {
        endedBefore,
        now,
        ...(options.dryRun ? { dryRun: true } : {}),
      });
      if (options.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
      else printPrune(report, io);
      return EXIT.ok;
    },
  );
}

/** 1.5 KB, 2.0 MB: bytes as the report prints them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

export function printPrune(report: PruneReport, io: CliIo): void {
  const { removed } = report;
  const verb = report.dryRun ? 'would remove' : 'removed';
  for (const run of report.pruned) {
    io.stdout(
      `${report.dryRun ? 'would prune' : 'pruned'} ${run.executionIds.at(-1)}  ${run.workflowId}  ${run.status}  ended ${run.endTime}  (${plural(run.threads, 'thread')})\n`,
    );
  }
  io.stdout(
    `${verb} ${plural(removed.runs, 'run')} (${plural(removed.threads, 'thread')}) ended before ${report.endedBefore}: ${plural(removed.items, 'item')} (${formatBytes(removed.itemBytes)}) and ${plural(removed.objects, 'object')} (${formatBytes(removed.objectBytes)}), ${formatBytes(removed.bytes)} in all\n`,
  );
  for (const run of report.skipped) {
    const why =
      run.status === 'INTERRUPTED'
        ? 'interrupted: `stepthread resume` continues it'
        : 'in progress (running, or waiting at a question)';
    io.stdout(`skipped ${run.executionId}  ${run.workflowId}  ${run.status}: ${why}\n`);
  }
  for (const pin of report.pinned) {
    io.stdout(
      `kept steps 1-${pin.steps} of ${pin.threadId}: ${plural(pin.readBy.length, 'copy', 'copies')} read them (${pin.readBy.join(', ')})\n`,
    );
  }
  const { shared, recent } = report.objectsKept;
  if (shared > 0) io.stdout(`kept ${plural(shared, 'object')} that remaining threads share\n`);
  if (recent > 0) io.stdout(`kept ${plural(recent, 'object')} written since a run in progress started\n`);
}

export function registerPrune(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('prune')
    .description(
      'remove local runs that ended before a time, and reclaim their storage (runs in progress stay)',
    )
    .option(
      '--older-than <duration>',
      `remove runs that ended longer ago than this: 30d, 12h, 90m, 45s, 2w (default: $${RETENTION_DAYS_VARIABLE} days)`,
    )
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--json', 'print the report as JSON')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .action(async (options: PruneOptions) => {
      setExit(await runPrune(options, io));
    });
}
