/** `stepthread dev` run in the test's own process (runDev), for tests that drive its console. */
import { join } from 'node:path';
import type { CliIo } from '../../cli/io.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface DevInProcess {
  readonly url: string;
  /** Ends it as Ctrl-C does; resolves with its exit code. */
  stop(): Promise<number>;
}

/**
 * `stepthread dev <workflowsDir> --port 0 --data-dir <dataDir>` in this process, once it serves
 * (what it printed is the error when it fails to start).
 */
export async function startDevInProcess(workflowsDir: string, dataDir: string): Promise<DevInProcess> {
  let output = '';
  const io: CliIo = {
    env: { ...process.env, STEPTHREAD_DATA_DIR: dataDir },
    cwd: ROOT,
    stdout: (text) => {
      output += text;
    },
    stderr: (text) => {
      output += text;
    },
    readFile: async () => '',
  };
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  // Loaded here, as the CLI loads it: only a test that runs dev pays for its modules.
  const { runDev } = await import('../../cli/commands/dev.ts');
  const exited = runDev(workflowsDir, { port: '0', dataDir }, io, stopped);
  while (!/console at (\S+)/.test(output)) {
    if (output.includes('stepthread:')) throw new Error(output);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    url: /console at (\S+)/.exec(output)![1]!,
    stop: () => {
      stop();
      return exited;
    },
  };
}
