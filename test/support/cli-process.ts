/** The CLI as a child process (bin/stepthread.js under this Node), for tests that need a real process. */
import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'stepthread.js');

/** A progress line on stderr (`  → node`, `  ✓ node`, ...): how tests tell how far a run got. */
export const PROGRESS_LINE = /^ {2}[→✓⚠✗↻↪⇥]/gmu;

/** How many lines of `text` match `pattern` (a /gm pattern). */
export function countLines(text: string, pattern: RegExp = PROGRESS_LINE): number {
  return (text.match(pattern) ?? []).length;
}

export interface ProcessOptions {
  cwd: string;
  /** Set on top of this process's environment. */
  env?: Readonly<Record<string, string>>;
  /** Node options before the script (`--import hook.mjs`). */
  nodeArgs?: readonly string[];
}

/** Without the variables that would point a command at another target or data directory. */
export function envWithoutTarget(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.AWS_ENDPOINT_URL;
  delete env.STEPTHREAD_TARGET;
  delete env.STEPTHREAD_DATA_DIR;
  return env;
}

function start(args: readonly string[], options: ProcessOptions): ChildProcess {
  return spawn(process.execPath, [...(options.nodeArgs ?? []), BIN, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface ProcessResult {
  /** null when a signal ended the process. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `stepthread ...args` in a child process, to its end: exit code and everything it printed. */
export function cliProcess(args: readonly string[], options: ProcessOptions): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = start(args, options);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `stepthread ...args` in a child process, waited for synchronously (a hung one fails at `timeout`). */
export function cliProcessSync(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {},
): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, ...args], { ...options, encoding: 'utf8' });
}

/** A CLI process to watch and kill part-way. */
export interface RunningCli {
  child: ChildProcess;
  /** Progress lines seen so far. */
  lines(): number;
  stderr(): string;
  /** Once the process ended and its output was read. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once `n` stderr lines matched `pattern` (progress lines by default), or the process ended. */
  after(n: number, pattern?: RegExp): Promise<void>;
}

/** Starts `stepthread ...args`; stdout is read and dropped, or closed at once with `closeStdout`. */
export function runningCli(
  args: readonly string[],
  options: ProcessOptions & { closeStdout?: boolean },
): RunningCli {
  const child = start(args, options);
  let stderr = '';
  const waiters: { n: number; pattern: RegExp; resolve: () => void }[] = [];
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
    for (const waiter of [...waiters]) {
      if (countLines(stderr, waiter.pattern) < waiter.n) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  if (options.closeStdout) child.stdout!.destroy();
  else child.stdout!.resume();
  let ended = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      ended = true;
      for (const waiter of waiters.splice(0)) waiter.resolve();
      resolve({ code, signal });
    });
  });
  return {
    child,
    lines: () => countLines(stderr),
    stderr: () => stderr,
    exited,
    after: (n, pattern = PROGRESS_LINE) =>
      new Promise((resolve) => {
        if (ended || countLines(stderr, pattern) >= n) resolve();
        else waiters.push({ n, pattern, resolve });
      }),
  };
}
