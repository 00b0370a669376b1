/**
 * `stepthread runs [--status S] [--workflow ID] [--limit N] [--json] [--data-dir <dir>]`: the
 * executions in the stores, newest first, with an interrupted one (its local process gone) shown as
 * INTERRUPTED with the command that resumes it.
 */
import type { Command } from 'commander';
import { listRuns, type RunListing } from '../../functions/local/run-registry.ts';
import { type CliIo, EXIT } from '../io.ts';
import { type DataDirOption, withStores } from '../local-session.ts';

export interface RunsOptions extends DataDirOption {
  status?: string;
  workflow?: string;
  limit?: string;
  json?: boolean;
}

export interface RunsJsonEntry extends RunListing {
  /** End − start, or now − start for a run still going; milliseconds. */
  durationMs: number;
}

function durationOf(run: RunListing, now: number): number {
  const end = run.endTime === undefined ? now : Date.parse(run.endTime);
  return Math.max(0, end - Date.parse(run.startTime));
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

export async function runRuns(options: RunsOptions, io: CliIo): Promise<number> {
  const limit = options.limit === undefined ? undefined : Number(options.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    io.stderr(`stepthread: --limit must be a positive integer, got ${options.limit}\n`);
    return EXIT.usage;
  }
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot list runs (${session.location})` : 'cannot open the stores'),
    async (session) => {
      const now = Date.now();
      const wanted = options.status?.toUpperCase();
      const runs = (await listRuns(session.clients))
        .filter((run) => wanted === undefined || run.status === wanted)
        .filter((run) => options.workflow === undefined || run.workflowId === options.workflow)
        .slice(0, limit);
      const entries: RunsJsonEntry[] = runs.map((run) => ({ ...run, durationMs: durationOf(run, now) }));
      if (options.json) {
        io.stdout(`${JSON.stringify(entries, null, 2)}\n`);
        return EXIT.ok;
      }
      if (entries.length === 0) {
        io.stdout('no runs\n');
        return EXIT.ok;
      }
      const rows = entries.map((run) => [
        run.executionId,
        run.workflowId,
        run.status,
        run.startTime,
        formatDuration(run.durationMs),
        run.rootThreadId ?? '-',
      ]);
      const header = ['EXECUTION', 'WORKFLOW', 'STATUS', 'STARTED', 'DURATION', 'ROOT THREAD'];
      const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
      const line = (cells: string[]) =>
        `${cells
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd()}\n`;
      io.stdout(line(header));
      for (const [i, row] of rows.entries()) {
        io.stdout(line(row));
        const resume = entries[i]!.resume;
        if (resume) io.stdout(`  ↳ resume with: ${resume}\n`);
      }
      return EXIT.ok;
    },
  );
}

export function registerRuns(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('runs')
    .description('list executions, newest first (INTERRUPTED: its process is gone; resume it)')
    .option('--status <status>', 'only runs with this status (RUNNING, COMPLETED, FAILED, INTERRUPTED, ...)')
    .option('--workflow <id>', 'only runs of this workflow id')
    .option('--limit <n>', 'at most this many')
    .option('--json', 'print the list as JSON')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .action(async (options: RunsOptions) => {
      setExit(await runRuns(options, io));
    });
}
