/** `stepthread dev` as a child process over a data directory, for tests that stop it as a user does. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BIN, envWithoutTarget } from './cli-process.ts';

const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');

export interface DevProcess {
  readonly url: string;
  /** Everything it printed on stderr so far. */
  stderr(): string;
  /** Ctrl-C; resolves with the exit code. */
  interrupt(): Promise<number | null>;
  /** SIGKILL, for a `finally` (nothing when it has exited). */
  kill(): void;
}

/** `stepthread dev <workflowsDir> --port 0 --data-dir <dataDir>` in `cwd` (examples by default), once it serves. */
export async function startDevProcess(
  dataDir: string,
  cwd: string,
  workflowsDir: string = EXAMPLES,
): Promise<DevProcess> {
  const child = spawn(process.execPath, [BIN, 'dev', workflowsDir, '--port', '0', '--data-dir', dataDir], {
    cwd,
    env: envWithoutTarget(),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const url = await pollFor(() => /console at (http:\S+)/.exec(stdout)?.[1]).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`stepthread dev did not start: ${stderr}`, { cause: error });
  });
  return {
    url,
    stderr: () => stderr,
    interrupt: () => {
      child.kill('SIGINT');
      return exited;
    },
    kill: () => {
      child.kill('SIGKILL');
    },
  };
}

/** Starts support-triage over the API and waits until its approval is asked. */
export async function startWaitingTriage(url: string): Promise<string> {
  const response = await fetch(`${url}/api/workflows/support-triage/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      input: { ticket: { subject: 'Charged twice', customer: 'Ada', monthlyFee: 30 } },
    }),
  });
  const { executionId } = (await response.json()) as { executionId: string };
  const asked = async () => {
    const page = (await (await fetch(`${url}/api/executions/${executionId}`)).json()) as {
      pending?: unknown[];
    };
    return (page.pending?.length ?? 0) > 0 ? true : undefined;
  };
  await pollFor(asked);
  return executionId;
}

/** Starts `workflowId` over the API (no input) and waits until it ended; gives its execution id and status. */
export async function runToEnd(
  url: string,
  workflowId: string,
): Promise<{ executionId: string; status: string }> {
  const response = await fetch(`${url}/api/workflows/${workflowId}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const { executionId } = (await response.json()) as { executionId: string };
  const ended = async () => {
    const page = (await (await fetch(`${url}/api/executions/${executionId}`)).json()) as {
      execution?: { status: string };
    };
    const status = page.execution?.status;
    return status === undefined || status === 'RUNNING' ? undefined : status;
  };
  return { executionId, status: await pollFor(ended) };
}

/** What `read` gives once it gives something, within 30 s (usable in a beforeAll, unlike expect.poll). */
async function pollFor<T>(read: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('nothing after 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
