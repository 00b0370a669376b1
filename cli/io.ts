/** What the CLI touches outside itself, injectable so tests run commands in-process. */
import { readFile } from 'node:fs/promises';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  readFile(path: string): Promise<string>;
  /** Environment and working directory; default process.env / process.cwd() (tests pass their own). */
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readFile: (path) => readFile(path, 'utf8'),
};

/** Exit codes shared by every command. */
export const EXIT = { ok: 0, invalid: 1, usage: 2 } as const;
