/**
 * `stepthread run` begins opening its data directory's stores before its modules load
 * (cli/early-stores.ts): for an existing directory the store server starts at once and the command's
 * own opening uses it; a directory that does not exist is left alone; an opening the command never
 * took is dropped, so the server can leave when idle.
 */
import { existsSync } from 'node:fs';
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
  await rm(dir, { recursive: true, force: true });
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

  it('leaves a directory that does not exist alone (--data-dir=DIR, or STEPTHREAD_DATA_DIR)', async () => {
    const missing = join(dir, 'missing');
    openRunStoresEarly([`--data-dir=${missing}`, 'wf.json'], io())();
    openRunStoresEarly(['wf.json'], { ...io(), env: { STEPTHREAD_DATA_DIR: missing } })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(missing)).toBe(false);
  });

  it('drops an opening the command never took: the server leaves when idle', async () => {
    const dataDir = join(dir, 'untaken');
    await mkdir(dataDir);
    const drop = openRunStoresEarly(['wf.json', '--data-dir', dataDir], io());
    await until(() => serving(dataDir), 'the early server');
    drop();
    await until(async () => !(await serving(dataDir)), 'the server to leave');
  }, 60_000);
});
