/**
 * Worker threads that run sandbox jobs: lazily started, one job per worker at a time, a watchdog
 * per job, and replacement after a kill or a broken engine. Idle workers are unref'd so they never
 * keep a CLI process alive.
 */

import { totalmem } from 'node:os';
import { Worker } from 'node:worker_threads';
import { wasmCapBytes } from './quickjs-module.ts';
import type {
  FromWorkerMessage,
  JobOutcome,
  SandboxError,
  SandboxJob,
  SandboxOptions,
  SandboxResult,
  ToWorkerMessage,
} from './types.ts';
import { defaultWorkerLaunch, type WorkerLaunch } from './worker-location.ts';

const DEFAULT_GRACE_MS = 500;
const DEFAULT_RECYCLE_ABOVE_MB = 256;
const DEFAULT_START_TIMEOUT_MS = 15_000;

interface QueuedJob {
  id: number;
  job: SandboxJob;
  resolve: (result: SandboxResult) => void;
}

interface PoolSettings {
  maxWorkers: number;
  memoryBudgetBytes: number;
  graceMs: number;
  recycleAboveBytes: number;
  startTimeoutMs: number;
  launch: WorkerLaunch;
}

export class WorkerPool {
  private readonly settings: PoolSettings;
  private readonly queue: QueuedJob[] = [];
  private readonly slots = new Set<WorkerSlot>();
  private nextId = 1;
  private closed = false;

  constructor(options: SandboxOptions = {}) {
    const maxWorkers = options.workers ?? 1;
    if (!Number.isInteger(maxWorkers) || maxWorkers < 1)
      throw new RangeError('workers must be an integer ≥ 1');
    this.settings = {
      maxWorkers,
      memoryBudgetBytes: (options.memoryBudgetMb ?? defaultMemoryBudgetMb()) * 1048576,
      graceMs: options.graceMs ?? DEFAULT_GRACE_MS,
      recycleAboveBytes: (options.recycleAboveMb ?? DEFAULT_RECYCLE_ABOVE_MB) * 1048576,
      startTimeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
      launch: options.workerUrl ? { url: options.workerUrl } : defaultWorkerLaunch(),
    };
  }

  submit(job: SandboxJob): Promise<SandboxResult> {
    if (this.closed) return Promise.resolve(failed('CODE_SANDBOX_CRASHED', 'the sandbox is closed', 0));
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, job, resolve });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const queued of this.queue.splice(0)) {
      queued.resolve(failed('CODE_SANDBOX_CRASHED', 'the sandbox was closed before the code ran', 0));
    }
    await Promise.all([...this.slots].map((slot) => slot.kill('the sandbox was closed while the code ran')));
    this.slots.clear();
  }

  /** Number of live worker threads (for tests and the bench). */
  get workerCount(): number {
    return this.slots.size;
  }

  /** Memory the live workers may hold: each its job's limit plus the engine's overhead. */
  private reserved(): number {
    let total = 0;
    for (const slot of this.slots) total += slot.capBytes;
    return total;
  }

  /**
   * Gives queued jobs to idle workers and starts workers for the rest, within maxWorkers and the
   * memory budget (a job that fits nowhere waits for a worker to finish; one always runs).
   */
  private pump(): void {
    if (this.closed) return;
    const budget = this.settings.memoryBudgetBytes;
    for (const slot of this.slots) {
      const next = this.queue[0];
      if (!next || !slot.isIdle) continue;
      const cap = wasmCapBytes(next.job.memoryLimitBytes);
      if (this.reserved() - slot.capBytes + cap > budget) {
        const others = [...this.slots].filter((other) => other !== slot);
        if (others.some((other) => !other.isIdle)) continue;
        // Only idle workers stand in its way: stop them to make room.
        for (const other of others) {
          this.slots.delete(other);
          void other.kill('stopped to make room for a larger job');
        }
      }
      this.queue.shift();
      slot.assign(next, cap);
    }
    let starting = [...this.slots].filter((slot) => slot.isStarting).length;
    while (this.queue.length > starting && this.slots.size < this.settings.maxWorkers) {
      const cap = wasmCapBytes(this.queue[starting]!.job.memoryLimitBytes);
      if (this.slots.size > 0 && this.reserved() + cap > budget) break;
      this.slots.add(new WorkerSlot(this.settings, this, cap));
      starting++;
    }
  }

  /** Workers holding memory now (for tests): at most maxWorkers, within the memory budget. */
  get reservedBytes(): number {
    return this.reserved();
  }

  /** Called by a slot: it became idle, or it died and has left the pool. */
  slotChanged(slot: WorkerSlot): void {
    if (slot.isDead) this.slots.delete(slot);
    this.pump();
  }

  /**
   * A worker died before it was ready. The cause (a missing worker file, a broken install) would
   * hit every retry, so fail what is waiting rather than loop.
   */
  startFailed(slot: WorkerSlot, reason: string): void {
    this.slots.delete(slot);
    if ([...this.slots].some((other) => !other.isStarting)) {
      this.pump();
      return;
    }
    for (const queued of this.queue.splice(0)) {
      queued.resolve(failed('CODE_SANDBOX_CRASHED', `the sandbox worker failed to start: ${reason}`, 0));
    }
  }
}

type SlotState =
  | { kind: 'starting'; timer: NodeJS.Timeout }
  | { kind: 'idle' }
  | { kind: 'busy'; queued: QueuedJob; startedAt: number; watchdog: NodeJS.Timeout }
  | { kind: 'dead' };

class WorkerSlot {
  private state: SlotState;
  private readonly worker: Worker;

  constructor(
    private readonly settings: PoolSettings,
    private readonly pool: WorkerPool,
    /** The WebAssembly memory cap of the job it runs or will run (worker.ts loads QuickJS for it). */
    public capBytes: number,
  ) {
    const { url, workerData } = settings.launch;
    this.worker = new Worker(url, { workerData, stdout: false, stderr: false });
    this.state = {
      kind: 'starting',
      timer: setTimeout(
        () => this.die(`it did not load within ${settings.startTimeoutMs} ms`),
        settings.startTimeoutMs,
      ),
    };
    this.worker.on('message', (message: FromWorkerMessage) => this.onMessage(message));
    this.worker.on('error', (error) => this.die(`${error.name}: ${error.message}`));
    this.worker.on('exit', (exitCode) => this.die(`the worker exited with code ${exitCode}`));
  }

  get isIdle(): boolean {
    return this.state.kind === 'idle';
  }
  get isStarting(): boolean {
    return this.state.kind === 'starting';
  }
  get isDead(): boolean {
    return this.state.kind === 'dead';
  }

  assign(queued: QueuedJob, capBytes: number): void {
    const { job } = queued;
    this.capBytes = capBytes;
    const watchdog = setTimeout(() => this.onOverrun(), job.timeoutMs + this.settings.graceMs);
    this.state = { kind: 'busy', queued, startedAt: performance.now(), watchdog };
    this.worker.ref();
    const message: ToWorkerMessage = { kind: 'run', id: queued.id, job };
    this.worker.postMessage(message);
  }

  /** Terminates the worker; a job in flight ends with CODE_SANDBOX_CRASHED and `reason`. */
  async kill(reason: string): Promise<void> {
    const state = this.state;
    this.leave(state);
    if (state.kind === 'busy') state.queued.resolve(this.failedSince(state, 'CODE_SANDBOX_CRASHED', reason));
    await this.worker.terminate();
  }

  private onMessage(message: FromWorkerMessage): void {
    const state = this.state;
    if (message.kind === 'ready') {
      if (state.kind !== 'starting') return;
      clearTimeout(state.timer);
      this.becomeIdle();
      return;
    }
    if (state.kind !== 'busy' || message.id !== state.queued.id) return;
    clearTimeout(state.watchdog);
    state.queued.resolve(toResult(message.outcome));
    if (message.broken || message.wasmMemoryBytes > this.settings.recycleAboveBytes) {
      this.leave(state);
      void this.worker.terminate();
      this.pool.slotChanged(this);
      return;
    }
    this.becomeIdle();
  }

  /** The in-guest deadline did not stop the job (or the engine hung): kill the thread outright. */
  private onOverrun(): void {
    const state = this.state;
    if (state.kind !== 'busy') return;
    this.leave(state);
    state.queued.resolve(
      this.failedSince(
        state,
        'CODE_TIMEOUT',
        `the code did not finish within ${state.queued.job.timeoutMs} ms and its worker was terminated`,
      ),
    );
    void this.worker.terminate();
    this.pool.slotChanged(this);
  }

  private die(reason: string): void {
    const state = this.state;
    if (state.kind === 'dead') return;
    this.leave(state);
    if (state.kind === 'starting') {
      this.pool.startFailed(this, reason);
      return;
    }
    if (state.kind === 'busy') {
      state.queued.resolve(
        this.failedSince(state, 'CODE_SANDBOX_CRASHED', `the sandbox worker failed: ${reason}`),
      );
    }
    this.pool.slotChanged(this);
  }

  private becomeIdle(): void {
    this.state = { kind: 'idle' };
    this.worker.unref();
    this.pool.slotChanged(this);
  }

  /** Marks the slot dead and stops its timers; the caller tells the pool. */
  private leave(state: SlotState): void {
    if (state.kind === 'starting') clearTimeout(state.timer);
    if (state.kind === 'busy') clearTimeout(state.watchdog);
    this.state = { kind: 'dead' };
  }

  private failedSince(
    state: Extract<SlotState, { kind: 'busy' }>,
    code: SandboxError['code'],
    message: string,
  ): SandboxResult {
    return failed(code, message, performance.now() - state.startedAt);
  }
}

/** Half the Lambda function's memory on Lambda; else a quarter of this machine's, at most 4 GB. */
export function defaultMemoryBudgetMb(
  env: Readonly<Record<string, string | undefined>> = process.env,
): number {
  const lambda = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  if (Number.isFinite(lambda) && lambda > 0) return Math.floor(lambda / 2);
  return Math.min(4096, Math.floor(totalmem() / 1048576 / 4));
}

function toResult(outcome: JobOutcome): SandboxResult {
  if (!outcome.ok) return outcome;
  try {
    // JSON.parse defines keys such as "__proto__" as own data properties: nothing reaches a prototype.
    const output: unknown = JSON.parse(outcome.outputJson);
    const logs = { logs: outcome.logs, ...(outcome.logsCut ? { logsCut: outcome.logsCut } : {}) };
    return { ok: true, output, durationMs: outcome.durationMs, ...logs };
  } catch {
    return {
      ...failed('CODE_INVALID_OUTPUT', 'the output is not valid JSON', outcome.durationMs),
      logs: outcome.logs,
      ...(outcome.logsCut ? { logsCut: outcome.logsCut } : {}),
    };
  }
}

export function failed(code: SandboxError['code'], message: string, durationMs: number): SandboxResult {
  return { ok: false, error: { code, message }, durationMs: Math.round(durationMs * 1000) / 1000, logs: [] };
}
