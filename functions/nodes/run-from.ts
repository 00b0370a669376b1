/**
 * Where a thread's run started when it did not start at START (a copy run from its node): kept in the
 * thread's metadata by whoever starts it (the local runtime's `runThread`, or `stepthread:resume` for a
 * copy started through a definition's entry), so a second start is refused and a resume knows where
 * the run began.
 */
export const RUN_FROM_KEY = 'runFrom';

export interface RunFrom {
  readonly executionId: string;
  readonly nodeId: string;
  readonly step: number;
  /** When the execution claimed the thread (a retried claim returns it unchanged). */
  readonly at?: string;
}
