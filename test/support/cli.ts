/** The CLI run in this process (`main` with a recording io), for tests that need its exit code and output. */
import { readFile } from 'node:fs/promises';
import type { DeployedServices } from '../../cli/commands/start.ts';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** The working directory the command sees (default this process's). */
  cwd?: string;
  /** The environment the command sees; empty unless given, so the caller's own settings do not leak in. */
  env?: Readonly<Record<string, string | undefined>>;
  /** How the command reads files (default from disk). */
  readFile?: CliIo['readFile'];
  /** Stand-ins for the deployed target's clients and settings. */
  services?: DeployedServices;
}

/** `stepthread ...args` in this process: its exit code and everything it printed. */
export async function runCli(args: readonly string[], options: CliOptions): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readFile: options.readFile ?? ((path) => readFile(path, 'utf8')),
    env: options.env ?? {},
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  };
  const code = await main(['node', 'stepthread', ...args], io, options.services);
  return { code, stdout, stderr };
}
