/**
 * `stepthread run` begins opening its data directory's stores before its modules load
 * (cli/early-stores.ts): for an existing directory the store server starts at once and the command's
 * own opening uses it; for a directory that does not exist it starts on standby and creates nothing
 * until the opening lets it; an opening the command never took is dropped, so the server can leave
 * when idle, and a standby server exits at once.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRunStoresEarly } from '../../cli/early-stores.ts';
import type { CliIo } from '../../cli/io.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';

let dir: string;
const idle = process.env.STEPTHREAD_STORE_IDLE_MS;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-early-'));
  // The servers these tests start inherit it: they leave soon after their last lease.
  process.env.STEPTHREAD_STORE_IDLE_MS = '200';
});
afterAll(async () => {
  if (idle === undefined) delete process.env.STEPTHREAD_STORE_IDLE_MS;
  else process.env.STEPTHREAD_STORE_IDLE_MS = idle;
  // A standby store server may still be writing its last table file as it leaves: retry the removal.
  await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

function io(): CliIo {
  return {
    stdout: () => {},
    stderr: () => {},
    readFile: (path) => readFile(path, 'utf8'),
    env: {},
    cwd: dir,
  };
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 800; i += 1) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Pids of store servers started for a data directory under `path` (Linux's /proc). */
function serverProcesses(path: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (
        args.some((arg) => arg.includes('data-dir-server-main')) &&
        args.some((arg) => arg.startsWith(path))
      ) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

const serving = async (dataDir: string) => (await readdir(dataDir)).includes('stepthread.server.json');

describe('opening a run’s stores early', () => {
  it('starts the server of an existing directory at once, and the run’s opening uses it', async () => {
    const dataDir = join(dir, 'existing');
    await mkdir(dataDir);
    const drop = openRunStoresEarly(['wf.json', '--data-dir', dataDir], io());
    // Nothing has asked for the stores yet: the server comes up on its own.
    await until(() => serving(dataDir), 'the early server');
    const info = JSON.parse(await readFile(join(dataDir, 'stepthread.server.json'), 'utf8'));
    const services = await openDataDir(dataDir);
    expect(services.target.dynamoEndpoint).toBe(info.dynamoEndpoint);
    drop(); // taken already: changes nothing
    await services.close();
    await until(async () => !(await serving(dataDir)), 'the server to leave');
  }, 60_000);

  it('starts a server on standby for a directory that does not exist: it creates it only once the run opens it', async () => {
    const dataDir = join(dir, 'new');
    openRunStoresEarly(['wf.json', '--data-dir', dataDir], io());
    await until(async () => serverProcesses(dataDir).length === 1, 'the standby server');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(dataDir)).toBe(false);
    const [standby] = serverProcesses(dataDir);
    const services = await openDataDir(dataDir);
    // The standby server is the one serving: the opening started no other.
    expect(JSON.parse(await readFile(join(dataDir, 'stepthread.server.json'), 'utf8')).pid).toBe(standby);
    expect(serverProcesses(dataDir)).toEqual([standby]);
    await services.close();
    await until(async () => !(await serving(dataDir)), 'the server to leave');
  }, 60_000);

  it('drops a standby server the command never took: it exits and creates nothing (--data-dir=DIR, or STEPTHREAD_DATA_DIR)', async () => {
    const missing = join(dir, 'missing');
    const drops = [
      openRunStoresEarly([`--data-dir=${missing}`, 'wf.json'], io()),
      openRunStoresEarly(['wf.json'], { ...io(), env: { STEPTHREAD_DATA_DIR: join(dir, 'missing-env') } }),
    ];
    await until(async () => serverProcesses(dir).length === 2, 'the standby servers');
    for (const drop of drops) drop();
    await until(async () => serverProcesses(dir).length === 0, 'the standby servers to exit');
    expect(existsSync(missing)).toBe(false);
    expect(existsSync(join(dir, 'missing-env'))).toBe(false);
  }, 60_000);

  it('drops an opening the command never took: the server leaves when idle', async () => {
    const dataDir = join(dir, 'untaken');
    await mkdir(dataDir);
    const drop = openRunStoresEarly(['wf.json', '--data-dir', dataDir], io());
    await until(() => serving(dataDir), 'the early server');
    drop();
    await until(async () => !(await serving(dataDir)), 'the server to leave');
  }, 60_000);
});
