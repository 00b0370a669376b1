/**
 * When a run ends (its root thread's END, or the failure that ends it) and the stack keeps runs for
 * `retentionDays`: the TTL of the run's items, `retentionDays` after its end (functions/stores/retention.ts).
 * The run is this execution and those it continued from (same root thread), and the threads listed
 * under them, less copies that have not run (they keep their source's execution id, but are runs of
 * their own). Objects in S3 get no expiry here (functions/stores/README.md, "Retention").
 */
import type { HandlerDeps } from '../handlers/deps.ts';
import type { ExecutionRecord } from '../stores/execution-index.ts';
import { expiryAfter } from '../stores/retention.ts';

export async function expireEndedRun(
  deps: HandlerDeps,
  run: { executionId: string; rootThreadId: string; endTime: string | undefined },
): Promise<void> {
  const days = deps.retentionDays;
  if (days === undefined || run.endTime === undefined) return;
  const expiresAt = expiryAfter(run.endTime, days);
  const chain: ExecutionRecord[] = [];
  const seen = new Set<string>();
  for (let id: string | undefined = run.executionId; id !== undefined && !seen.has(id); ) {
    seen.add(id);
    const record: ExecutionRecord | undefined = await deps.executions.getExecution(id).catch(() => undefined);
    if (record === undefined || record.rootThreadId !== run.rootThreadId) break;
    chain.push(record);
    id = record.continuedFrom;
  }
  const threadIds = new Set([run.rootThreadId]);
  for (const execution of chain) {
    for (const { thread } of await deps.threads.listThreadsOfExecution(execution.executionId)) {
      if (thread.metadata.copiedFrom === undefined) threadIds.add(thread.id);
    }
  }
  for (const threadId of threadIds) await deps.threads.expireThread(threadId, expiresAt);
  for (const execution of chain) await deps.executions.expireExecution(execution.executionId, expiresAt);
}
