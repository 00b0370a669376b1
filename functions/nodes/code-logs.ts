/** What a node's kept console output (a CODE node's, its code tools') says about what its caps cut. */
import type { NodeLogs } from '../../engine/thread/types.ts';
import { MAX_LOG_ENTRIES, MAX_LOG_TOTAL_CHARS } from '../sandbox/guest-harness.ts';

/** The note under kept lines that says what the cap cut, or undefined when it cut nothing. */
export function logsCutNote(logs: NodeLogs): string | undefined {
  const cut = logs.cut;
  if (cut === undefined) return undefined;
  const parts = [
    ...(cut.lines > 0
      ? [`${cut.lines.toLocaleString('en-US')} more line${cut.lines === 1 ? '' : 's'} not kept`]
      : []),
    ...(cut.chars > 0 ? [`${cut.chars.toLocaleString('en-US')} characters cut from kept lines`] : []),
  ];
  const kept = `${MAX_LOG_ENTRIES.toLocaleString('en-US')} lines, ${MAX_LOG_TOTAL_CHARS / 1024} KB`;
  return parts.length === 0 ? undefined : `… ${parts.join('; ')} (output is kept up to ${kept})`;
}
