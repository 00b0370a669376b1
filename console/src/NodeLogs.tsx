/**
 * What a CODE node printed (`console.*`), in the node panel: each of its runs on the thread, from
 * their step records (the dev API's steps), with what the cap cut.
 */
import { useEffect, useState } from 'react';
import { api, type StepLogs, type StepRow } from './api.ts';

export function NodeLogs({
  threadId,
  nodeId,
  version,
}: {
  threadId: string;
  nodeId: string;
  version: number;
}) {
  const [rows, setRows] = useState<StepRow[]>();

  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` is the page's refresh signal
  useEffect(() => {
    // A read answering after the next one was asked is dropped.
    let current = true;
    // Every step (the API's default is the latest 100): the node may have printed early in a long run.
    api.steps(threadId, 1).then(
      (next) => current && setRows(next.steps),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [threadId, version]);

  const printed = (rows ?? []).filter((row) => row.nodeId === nodeId && row.logs !== undefined);
  if (printed.length === 0) return null;
  return (
    <div data-testid="node-logs" style={{ margin: '0.5rem 0' }}>
      {printed.map((row) => (
        <div key={row.step} data-testid={`node-logs-${row.step}`}>
          <p className="muted">What its code printed in step {row.step}:</p>
          <pre className="logs">{row.logs!.lines.join('\n')}</pre>
          {row.logs!.cut && <p className="muted">{cutNote(row.logs!.cut)}</p>}
        </div>
      ))}
    </div>
  );
}

function cutNote(cut: NonNullable<StepLogs['cut']>): string {
  const parts = [
    ...(cut.lines > 0 ? [`${cut.lines} more line${cut.lines === 1 ? '' : 's'} not kept`] : []),
    ...(cut.chars > 0 ? [`${cut.chars} characters cut from kept lines`] : []),
  ];
  return `… ${parts.join('; ')}`;
}
