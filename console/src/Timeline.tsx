/**
 * A Gantt chart of an execution's node runs: one row per thread (the root first, each fork branch or
 * list item on its own row, in the page's thread order), each run a bar from its start to its end
 * on one time axis, coloured by status. A run still going reaches the latest time seen.
 */
import { formatDuration, type ThreadReport } from './api.ts';

interface Bar {
  nodeId: string;
  status: string;
  start: number;
  end: number;
}

/** The threads in tree order: each parent, then its children, as the thread tree lists them. */
function inTreeOrder(threads: readonly ThreadReport[], rootThreadId: string | undefined): ThreadReport[] {
  const byId = new Map(threads.map((thread) => [thread.threadId, thread]));
  const ordered: ThreadReport[] = [];
  const visit = (thread: ThreadReport | undefined) => {
    if (thread === undefined || ordered.includes(thread)) return;
    ordered.push(thread);
    for (const child of thread.children) visit(byId.get(child));
  };
  visit(rootThreadId ? byId.get(rootThreadId) : undefined);
  for (const thread of threads) visit(thread);
  return ordered;
}

export function Timeline({
  threads,
  rootThreadId,
  onSelect,
}: {
  threads: readonly ThreadReport[];
  rootThreadId: string | undefined;
  onSelect?: (nodeId: string, threadId: string) => void;
}) {
  const rows = inTreeOrder(threads, rootThreadId).map((thread) => ({
    thread,
    bars: thread.nodes.map(
      (run): Bar => ({
        nodeId: run.nodeId,
        status: run.status,
        start: Date.parse(run.startedAt),
        end: run.endedAt ? Date.parse(run.endedAt) : Number.NaN,
      }),
    ),
  }));
  const times = rows
    .flatMap((row) => row.bars.flatMap((bar) => [bar.start, bar.end]))
    .filter(Number.isFinite);
  if (times.length === 0) return <p className="muted">No node has run yet.</p>;
  const first = Math.min(...times);
  const last = Math.max(...times);
  // At least 1 ms across, so a run of instant steps still spreads its bars.
  const span = Math.max(last - first, 1);
  const percent = (time: number) => ((time - first) / span) * 100;
  return (
    <div data-testid="timeline" className="timeline">
      <div className="timeline-axis muted">
        <span>0</span>
        <span>{formatDuration(last - first)}</span>
      </div>
      {rows.map(({ thread, bars }) => (
        <div
          key={thread.threadId}
          className="timeline-row"
          data-testid={`timeline-row-${thread.forkPathId ?? 'root'}`}
          data-thread={thread.threadId}
        >
          <div className="timeline-label" title={thread.threadId}>
            {thread.forkPathId ? `path ${thread.forkPathId}` : 'root thread'}
          </div>
          <div className="timeline-track">
            {bars.map((bar, index) => {
              const end = Number.isFinite(bar.end) ? bar.end : last;
              const left = percent(bar.start);
              // A bar is at least a sliver wide, so an instant step can still be seen and clicked.
              const width = Math.max(percent(end) - left, 0.6);
              return (
                <button
                  type="button"
                  // biome-ignore lint/suspicious/noArrayIndexKey: a node may run many times; order is its identity
                  key={index}
                  className={`timeline-bar status-${bar.status.toLowerCase()}`}
                  data-testid="timeline-bar"
                  data-node={bar.nodeId}
                  data-status={bar.status}
                  style={{ left: `${Math.min(left, 99.4)}%`, width: `${width}%` }}
                  title={`${bar.nodeId} · ${bar.status.toLowerCase()} · ${formatDuration(Number.isFinite(bar.end) ? bar.end - bar.start : undefined)}`}
                  onClick={() => onSelect?.(bar.nodeId, thread.threadId)}
                >
                  <span>{bar.nodeId}</span>
                </button>
              );
            })}
          </div>
        </div>
      ))}
    </div>
  );
}
