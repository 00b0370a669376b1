/** What the CLI touches outside itself, injectable so tests run commands in-process. */
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  readFile(path: string): Promise<string>;
  /** Environment and working directory; default process.env / process.cwd() (tests pass their own). */
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /** Asks one question on the terminal; present only when stdin is a TTY (run answers interactions with it). */
  prompt?: (question: string, signal?: AbortSignal) => Promise<string>;
  /** Says `message()` and exits when the process is interrupted (SIGINT, SIGTERM); returns the undo. */
  onInterrupt?: (message: () => string) => () => void;
  /** Ends the process now, with `code` (what is left running is left as it is); absent in tests. */
  exit?: (code: number) => never;
}

/** One line from the terminal (questions go to stderr, so stdout stays the result). */
async function promptTerminal(question: string, signal?: AbortSignal): Promise<string> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await terminal.question(question, signal ? { signal } : {});
  } finally {
    terminal.close();
  }
}

/**
 * A stream the reader may close (`stepthread run … | head -2`): once it reports EPIPE (or any
 * error), further output to it is dropped, and the command goes on — a run is never stopped, and no
 * stack trace printed, because nobody reads its output any more.
 */
function tolerantWriter(stream: NodeJS.WriteStream): (text: string) => void {
  let closed = false;
  stream.on('error', () => {
    closed = true;
  });
  return (text) => {
    if (closed || stream.destroyed) return;
    stream.write(text);
  };
}

let stdoutWriter: ((text: string) => void) | undefined;
let stderrWriter: ((text: string) => void) | undefined;

/** SIGINT / SIGTERM during `work`: `message()` on stderr, then exit 130 (the run can be resumed). */
function onInterrupt(message: () => string): () => void {
  const handler = (signal: NodeJS.Signals) => {
    processIo.stderr(message());
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

export const processIo: CliIo = {
  stdout: (text) => {
    stdoutWriter ??= tolerantWriter(process.stdout);
    stdoutWriter(text);
  },
  stderr: (text) => {
    stderrWriter ??= tolerantWriter(process.stderr);
    stderrWriter(text);
  },
  readFile: (path) => readFile(path, 'utf8'),
  onInterrupt,
  exit: (code) => process.exit(code),
  ...(process.stdin.isTTY ? { prompt: promptTerminal } : {}),
};

/** `text` without the byte order mark some editors write first in a file: it is no part of JSON or YAML. */
export function withoutByteOrderMark(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/** Exit codes shared by every command. */
export const EXIT = { ok: 0, invalid: 1, usage: 2 } as const;
