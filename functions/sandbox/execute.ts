/**
 * Runs one job in a fresh QuickJS runtime: limits in, JSON string in, JSON string out. Called in
 * the sandbox worker; it never lets guest values or host objects cross except as strings.
 */

import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import {
  GUEST_HARNESS_SOURCE,
  HARNESS_FILENAME,
  MAX_DESCRIPTION_CHARS,
  USER_CODE_FILENAME,
  USER_CODE_LINE_OFFSET,
} from './guest-harness.ts';
import { failedHeapResizes, quickjsLimitBytes } from './quickjs-module.ts';
import type { JobOutcome, LogsCut, SandboxError, SandboxErrorCode, SandboxJob } from './types.ts';

/** QuickJS's own stack limit; kept well under the WebAssembly stack so overflow is an exception. */
export const MAX_STACK_BYTES = 256 * 1024;

export interface ExecutionReport {
  outcome: JobOutcome;
  /** The WebAssembly instance threw from the host API (abort, trap): do not reuse it. */
  broken: boolean;
}

interface RunState {
  interrupted: boolean;
  /** Whether the WebAssembly heap ran out during this job (an allocation failed at the cap). */
  heapRanOut: () => boolean;
}

type Phase = 'setup' | 'input' | 'compile' | 'run' | 'output';

/** A failure found while running; thrown through the phases and turned into an outcome once. */
class JobFailure {
  constructor(readonly error: SandboxError) {}
}

export function executeJob(quickjs: QuickJSWASMModule, job: SandboxJob): ExecutionReport {
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 1000) / 1000;
  const deadline = started + job.timeoutMs;
  const resizesFailedBefore = failedHeapResizes(quickjs);
  const state: RunState = {
    interrupted: false,
    heapRanOut: () => failedHeapResizes(quickjs) > resizesFailedBefore,
  };

  let runtime: QuickJSRuntime | undefined;
  let context: QuickJSContext | undefined;
  const owned: QuickJSHandle[] = [];
  let logs: string[] = [];
  let report: ExecutionReport;
  const logsOf = (run: GuestRun) => {
    const read = run.readLogs();
    logs = read.lines;
    return { logs, ...(read.cut ? { logsCut: read.cut } : {}) };
  };

  try {
    runtime = quickjs.newRuntime();
    runtime.setMemoryLimit(quickjsLimitBytes(job.memoryLimitBytes));
    runtime.setMaxStackSize(MAX_STACK_BYTES);
    runtime.setInterruptHandler(() => {
      if (performance.now() <= deadline) return false;
      state.interrupted = true;
      return true;
    });
    context = runtime.newContext();
    const run = new GuestRun(runtime, context, job, state, deadline, owned);
    try {
      const outputJson = run.execute();
      report = { outcome: { ok: true, outputJson, durationMs: elapsed(), ...logsOf(run) }, broken: false };
    } catch (caught) {
      if (!(caught instanceof JobFailure)) throw caught;
      const outcome = { ok: false, error: caught.error, durationMs: elapsed(), ...logsOf(run) } as const;
      report = { outcome, broken: false };
    }
  } catch (hostError) {
    report = { outcome: crashOutcome(hostError, elapsed(), logs, state.heapRanOut()), broken: true };
  }

  try {
    for (const handle of owned) if (handle.alive) handle.dispose();
    context?.dispose();
    runtime?.dispose();
  } catch {
    // A runtime that cannot be freed cleanly may have corrupted the heap: retire the worker.
    report = { ...report, broken: true };
  }
  return report;
}

function crashOutcome(
  hostError: unknown,
  durationMs: number,
  logs: string[],
  heapRanOut: boolean,
): JobOutcome {
  const text = hostError instanceof Error ? `${hostError.name}: ${hostError.message}` : String(hostError);
  // Emscripten reports exhausting the WebAssembly heap as an abort mentioning OOM; the host API
  // fails in other ways when its own allocations find the heap exhausted.
  const code: SandboxErrorCode =
    heapRanOut || /\bOOM\b|out of memory/i.test(text) ? 'CODE_MEMORY_LIMIT' : 'CODE_SANDBOX_CRASHED';
  return {
    ok: false,
    error: { code, message: `the sandbox engine failed: ${truncate(text)}` },
    durationMs,
    logs,
  };
}

/** One job's walk through the phases inside one context. Every handle it makes goes to `owned`. */
class GuestRun {
  private harness: QuickJSHandle | undefined;

  constructor(
    private readonly runtime: QuickJSRuntime,
    private readonly vm: QuickJSContext,
    private readonly job: SandboxJob,
    private readonly state: RunState,
    private readonly deadline: number,
    private readonly owned: QuickJSHandle[],
  ) {}

  execute(): string {
    const vm = this.vm;
    this.harness = this.own(this.unwrap(vm.evalCode(GUEST_HARNESS_SOURCE, HARNESS_FILENAME), 'setup'));

    const inputJson =
      this.job.inputJson === undefined ? vm.undefined : this.own(vm.newString(this.job.inputJson));
    const input = this.callHarness('parseInput', inputJson, 'input');
    const userFunction = this.callHarness('compile', this.own(vm.newString(this.job.code)), 'compile');
    if (this.job.compileOnly) return 'null';
    const promise = this.own(this.unwrap(vm.callFunction(userFunction, vm.undefined, input), 'run'));

    this.drainJobs();

    const settled = vm.getPromiseState(promise);
    if (settled.type === 'pending') {
      // Running out of memory in a promise job can leave the chain the result waits on broken.
      if (this.state.heapRanOut()) throw new JobFailure(this.memoryLimit());
      throw new JobFailure({
        code: 'CODE_ERROR',
        message: 'the returned promise never settled (the sandbox has no timers or I/O to settle it)',
      });
    }
    if (settled.type === 'rejected') throw this.failure(this.own(settled.error), 'run');
    const value = this.own(settled.value);

    const json = this.callHarness('serialise', value, 'output');
    return this.readOutput(json);
  }

  /**
   * Runs queued promise jobs one at a time, checking the deadline between jobs: a promise job
   * turns an interrupt into a rejection, so an endless chain of short jobs is stopped here (the
   * interrupt handler still stops a long single job). No timers or I/O exist, so once the queue is
   * empty the promise is settled or never will be.
   */
  private drainJobs(): void {
    for (;;) {
      if (performance.now() > this.deadline) this.state.interrupted = true;
      if (this.state.interrupted) throw new JobFailure(this.timeout());
      const ran = this.runtime.executePendingJobs(1);
      if (ran.error) throw this.failure(this.own(ran.error), 'run');
      if (ran.value === 0) return;
    }
  }

  /**
   * Reads the bounded log array and what its bounds cut directly, so no guest code runs after the
   * deadline.
   */
  readLogs(): { lines: string[]; cut?: LogsCut } {
    if (!this.harness) return { lines: [] };
    try {
      const vm = this.vm;
      const array = this.own(vm.getProp(this.harness, 'logs'));
      const length = vm.getLength(array) ?? 0;
      const lines: string[] = [];
      for (let i = 0; i < length; i++) {
        const line = this.own(vm.getProp(array, i));
        if (vm.typeof(line) === 'string') lines.push(vm.getString(line));
      }
      const cutHandle = this.own(vm.getProp(this.harness, 'logCut'));
      const count = (key: 'lines' | 'chars') => {
        const value = this.own(vm.getProp(cutHandle, key));
        return vm.typeof(value) === 'number' ? vm.getNumber(value) : 0;
      };
      const cut = { lines: count('lines'), chars: count('chars') };
      return cut.lines > 0 || cut.chars > 0 ? { lines, cut } : { lines };
    } catch {
      return { lines: [] };
    }
  }

  private readOutput(json: QuickJSHandle): string {
    const vm = this.vm;
    const max = this.job.maxOutputBytes;
    if (vm.typeof(json) !== 'string') {
      throw new JobFailure({ code: 'CODE_INVALID_OUTPUT', message: 'the output is not JSON-serialisable' });
    }
    // Check the length inside QuickJS first: a huge string is never copied out. UTF-16 length is a
    // lower bound on UTF-8 bytes.
    const length = vm.getNumber(this.own(vm.getProp(json, 'length')));
    if (length > max) throw this.tooLarge(`at least ${length} bytes`);
    const text = vm.getString(json);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > max) throw this.tooLarge(`${bytes} bytes`);
    return text;
  }

  private tooLarge(size: string): JobFailure {
    return new JobFailure({
      code: 'CODE_OUTPUT_TOO_LARGE',
      message: `the output is ${size} of JSON, over the limit of ${this.job.maxOutputBytes} bytes`,
    });
  }

  private callHarness(name: 'parseInput' | 'compile' | 'serialise', arg: QuickJSHandle, phase: Phase) {
    const vm = this.vm;
    const fn = this.own(vm.getProp(this.harness!, name));
    return this.own(this.unwrap(vm.callFunction(fn, vm.undefined, arg), phase));
  }

  private unwrap(
    result: { error: QuickJSHandle; value?: undefined } | { value: QuickJSHandle; error?: undefined },
    phase: Phase,
  ): QuickJSHandle {
    if (result.error) throw this.failure(this.own(result.error), phase);
    return result.value;
  }

  private own(handle: QuickJSHandle): QuickJSHandle {
    this.owned.push(handle);
    return handle;
  }

  private failure(thrown: QuickJSHandle, phase: Phase): JobFailure {
    return new JobFailure(this.classify(thrown, phase));
  }

  private memoryLimit(): SandboxError {
    const limitMb = Math.round((this.job.memoryLimitBytes / 1048576) * 100) / 100;
    return { code: 'CODE_MEMORY_LIMIT', message: `the code exceeded the memory limit of ${limitMb} MB` };
  }

  private timeout(): SandboxError {
    return { code: 'CODE_TIMEOUT', message: `the code did not finish within ${this.job.timeoutMs} ms` };
  }

  private classify(thrown: QuickJSHandle, phase: Phase): SandboxError {
    const job = this.job;
    if (this.state.interrupted) return this.timeout();
    const fields = this.readErrorFields(thrown);
    if (this.isOutOfMemory(thrown, fields)) {
      const limitMb = Math.round((job.memoryLimitBytes / 1048576) * 100) / 100;
      return phase === 'output'
        ? {
            code: 'CODE_OUTPUT_TOO_LARGE',
            message: `the output could not be serialised within the memory limit of ${limitMb} MB`,
          }
        : this.memoryLimit();
    }
    if (fields.name === 'InternalError' && fields.message === 'string too long') {
      return { code: 'CODE_MEMORY_LIMIT', message: 'the code built a string longer than QuickJS allows' };
    }
    if (
      (fields.name === 'InternalError' && fields.message === 'stack overflow') ||
      (fields.name === 'RangeError' && /call stack size/i.test(fields.message ?? ''))
    ) {
      return { code: 'CODE_STACK_OVERFLOW', message: 'the code exceeded the maximum call stack size' };
    }

    const description =
      fields.message === undefined
        ? `uncaught ${this.describe(thrown)}`
        : fields.name
          ? `${fields.name}: ${fields.message}`
          : fields.message;
    if (phase === 'output') return { code: 'CODE_INVALID_OUTPUT', message: description };
    if (phase === 'input') return { code: 'CODE_INVALID_INPUT', message: description };
    if (phase === 'setup') return { code: 'CODE_SANDBOX_CRASHED', message: description };
    const line = this.userLine(fields, phase);
    if (line === undefined) return { code: 'CODE_ERROR', message: description };
    // An unclosed block is reported on the wrapper's closing line, after the user's last one.
    const lastLine = this.job.code.split('\n').length;
    if (line > lastLine)
      return { code: 'CODE_ERROR', message: `${description} (at the end of the code)`, line: lastLine };
    return { code: 'CODE_ERROR', message: `${description} (line ${line})`, line };
  }

  /**
   * QuickJS reports a failed allocation as InternalError "out of memory" (…"in regexp execution" from
   * a regular expression's backtracking). When it cannot allocate
   * even that error it throws null instead (or, short of room for the message, an InternalError
   * without one), which promise jobs then pass on like any rejection. Those count as running out of
   * memory only if the heap did run out during this job, so code's own `throw null` or
   * `Promise.reject(null)` stays a CODE_ERROR (unless the same job ran out of memory first and caught
   * that: then it is taken for the out-of-memory null).
   */
  private isOutOfMemory(thrown: QuickJSHandle, fields: ErrorFields): boolean {
    // The regexp engine says "out of memory in regexp execution" when its backtracking stack is full.
    if (fields.name === 'InternalError' && /^out of memory\b/.test(fields.message ?? '')) return true;
    if (!this.state.heapRanOut()) return false;
    const vm = this.vm;
    if (vm.typeof(thrown) === 'undefined' || vm.sameValue(thrown, vm.null)) return true;
    return fields.name === 'InternalError' && !fields.message;
  }

  /** Line in the user's code: from the syntax error position, else the innermost user stack frame. */
  private userLine(fields: ErrorFields, phase: Phase): number | undefined {
    let reported: number | undefined;
    if (phase === 'compile' && fields.fileName === USER_CODE_FILENAME) reported = fields.lineNumber;
    if (reported === undefined && fields.stack) {
      const frame = new RegExp(`${escapeRegExp(USER_CODE_FILENAME)}:(\\d+)`).exec(fields.stack);
      if (frame) reported = Number(frame[1]);
    }
    if (reported === undefined) return undefined;
    const line = reported - USER_CODE_LINE_OFFSET;
    return line >= 1 ? line : undefined;
  }

  /** Reads an Error's fields as strings; getters run in the guest, still under the deadline. */
  private readErrorFields(thrown: QuickJSHandle): ErrorFields {
    const vm = this.vm;
    const fields: ErrorFields = {};
    try {
      if (vm.typeof(thrown) !== 'object' || vm.sameValue(thrown, vm.null)) return fields;
      const read = (key: string) => {
        const prop = this.own(vm.getProp(thrown, key));
        const type = vm.typeof(prop);
        if (type === 'string') return truncate(vm.getString(prop));
        if (type === 'number') return vm.getNumber(prop);
        return undefined;
      };
      const message = read('message');
      if (typeof message !== 'string') return fields;
      fields.message = message;
      const name = read('name');
      if (typeof name === 'string') fields.name = name;
      const stack = read('stack');
      if (typeof stack === 'string') fields.stack = stack;
      const fileName = read('fileName');
      if (typeof fileName === 'string') fields.fileName = fileName;
      const lineNumber = read('lineNumber');
      if (typeof lineNumber === 'number') fields.lineNumber = lineNumber;
    } catch {
      // A hostile getter: describe what was read so far.
    }
    return fields;
  }

  private describe(thrown: QuickJSHandle): string {
    const vm = this.vm;
    try {
      const fn = this.own(vm.getProp(this.harness!, 'describe'));
      const result = vm.callFunction(fn, vm.undefined, thrown);
      if (result.error) {
        this.own(result.error);
        return 'value that could not be described';
      }
      const text = this.own(result.value);
      return vm.typeof(text) === 'string' ? truncate(vm.getString(text)) : 'value';
    } catch {
      return 'value that could not be described';
    }
  }
}

interface ErrorFields {
  name?: string;
  message?: string;
  stack?: string;
  fileName?: string;
  lineNumber?: number;
}

function truncate(text: string): string {
  return text.length > MAX_DESCRIPTION_CHARS ? `${text.slice(0, MAX_DESCRIPTION_CHARS)}…` : text;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
