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

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readFile: (path) => readFile(path, 'utf8'),
  ...(process.stdin.isTTY ? { prompt: promptTerminal } : {}),
};

/** Exit codes shared by every command. */
export const EXIT = { ok: 0, invalid: 1, usage: 2 } as const;
