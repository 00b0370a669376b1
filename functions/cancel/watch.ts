/**
 * Waiting with an eye on the run's cancel mark (marks.ts): a model call, a tool call or a question
 * runs with a signal that also aborts once the mark appears, looked for every `intervalMs` while the
 * work lasts (one GetItem a poll; nothing when the work ends before the first). Aborted so, the work
 * ends with RunCancelled, a plain error: the step is abandoned uncommitted (pipeline.ts), never a
 * node failure, so a cancelled run leaves no half-written step.
 */
import type { NodeType } from '../../engine/model/schema.ts';
import type { CancelMark, CancelMarks } from './marks.ts';

/** How a handler watches for a cancel (HandlerDeps.cancelWatch). */
export interface CancelWatch {
  readonly marks: Pick<CancelMarks, 'get'>;
  /** Between looks at the mark: 2 s in a Lambda (bounded cost), less locally. */
  readonly intervalMs: number;
  /** Told once the mark is seen (the local runtime then stops the whole run). */
  readonly onCancelled?: (mark: CancelMark) => void;
}

/** The abort reason of work stopped because its run was cancelled. */
export class RunCancelled extends Error {
  readonly mark: CancelMark;

  constructor(mark: CancelMark) {
    super(`the run was cancelled${mark.reason ? `: ${mark.reason}` : ''}`);
    this.name = 'RunCancelled';
    this.mark = mark;
  }
}

/** Node types whose steps wait on something outside (a model, a tool): those watch while they wait. */
const WAITING_NODE_TYPES: ReadonlySet<NodeType> = new Set<NodeType>(['LLM', 'TOOL']);

export function waitsOutside(nodeType: NodeType | undefined): boolean {
  return nodeType !== undefined && WAITING_NODE_TYPES.has(nodeType);
}

/** The root thread a Task input's envelope names, if any. */
export function rootThreadIdOf(event: unknown): string | undefined {
  const id = (event as { envelope?: { rootThreadId?: unknown } } | undefined)?.envelope?.rootThreadId;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Runs `work` with a signal that aborts when `signal` does or when the run's cancel mark appears.
 * Without a watch or a root thread, `work` gets `signal` as is.
 */
export async function withCancelWatch<T>(
  watch: CancelWatch | undefined,
  rootThreadId: string | undefined,
  signal: AbortSignal | undefined,
  work: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  if (watch === undefined || rootThreadId === undefined) return work(signal);
  const cancelled = new AbortController();
  const linked = signal ? AbortSignal.any([signal, cancelled.signal]) : cancelled.signal;
  let done = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const look = async () => {
    // A failed look is a missed poll: the work goes on, and the next look may see the mark.
    const mark = await watch.marks.get(rootThreadId).catch(() => undefined);
    if (done) return;
    if (mark === undefined) {
      schedule();
      return;
    }
    cancelled.abort(new RunCancelled(mark));
    watch.onCancelled?.(mark);
  };
  const schedule = () => {
    timer = setTimeout(() => void look(), watch.intervalMs);
    timer.unref?.();
  };
  schedule();
  try {
    return await work(linked);
  } finally {
    done = true;
    clearTimeout(timer);
  }
}
