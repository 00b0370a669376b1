/**
 * `stepthread dev` that cannot serve says why, with a code, and does not start: a port another
 * process holds, and a workflows folder that does not exist (before, the first failed with
 * NODE_EXECUTION_FAILED: listen EADDRINUSE and the second served an empty console).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');

let dir: string;
let holder: Server;
let busyPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'stepthread-dev-refuse-'));
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  busyPort = (holder.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => holder.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('stepthread dev refuses what it cannot serve', () => {
  it('names a port in use and suggests --port', async () => {
    const dataDir = join(dir, 'data-port');
    const result = await runCli(
      ['dev', join(ROOT, 'examples'), '--port', String(busyPort), '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `stepthread: cannot start the dev server\n  DEV_PORT_UNAVAILABLE: port ${busyPort} on 127.0.0.1 is in use (another \`stepthread dev\`, or another program): choose another with --port <n>, or --port 0 for any free one\n`,
    );
  });

  it('names a workflows folder that does not exist, before making a data directory', async () => {
    const dataDir = join(dir, 'data-folder');
    const result = await runCli(['dev', 'nofolder', '--port', '0', '--data-dir', dataDir], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `stepthread: cannot serve nofolder\n  DEV_FOLDER_NOT_FOUND: no folder ${join(dir, 'nofolder')}: give the folder of your workflow files (e.g. \`stepthread dev examples\`)\n`,
    );
    const file = join(dir, 'flows.json');
    writeFileSync(file, '{}');
    const onFile = await runCli(['dev', 'flows.json', '--port', '0', '--data-dir', dataDir], { cwd: dir });
    expect(onFile.stderr).toContain(`DEV_FOLDER_NOT_FOUND: ${file} is a file, not a folder`);
    expect(existsSync(dataDir)).toBe(false);
  });
});
