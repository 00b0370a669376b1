/** A CODE node's console output in a terminal: `run`'s progress and `inspect`'s node runs. */
import type { NodeLogs } from '../engine/thread/types.ts';
import type { NodeLogsEntry } from '../functions/handlers/deps.ts';
import { logsCutNote } from '../functions/nodes/code-logs.ts';
import type { CliIo } from './io.ts';

/** One terminal line per printed line (an entry may hold several), then what the cap cut. */
export function terminalLogLines(logs: NodeLogs): string[] {
  const note = logsCutNote(logs);
  return [...logs.lines.flatMap((line) => line.split(/\r?\n/)), ...(note ? [note] : [])];
}

/**
 * `run`'s progress: a node's output on stderr under its `→` line, each line led by the node id, as
 * parallel branches print between each other's lines.
 */
export function nodeLogsPrinter(io: CliIo): (entry: NodeLogsEntry) => void {
  return ({ nodeId, logs }) => {
    for (const line of terminalLogLines(logs)) io.stderr(`    ${nodeId} │ ${line}\n`);
  };
}
