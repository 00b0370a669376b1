/**
 * The compiled CLI's store server (functions/local/store-server-build.ts): built as one CommonJS file
 * and its entry, it serves a data directory, writes V8's code cache as it exits (replacing an
 * earlier build's), and starts from that cache the next time (the cache file is then left as it is).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ListBucketsCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, createS3Client, releaseAwsClients } from '../../functions/aws/clients.ts';
import { buildStoreServer } from '../../functions/local/store-server-build.ts';

const ROOT = join(import.meta.dirname, '..', '..');

interface Ready {
  ready: { pid: number; dynamoEndpoint: string; s3Endpoint: string };
}

/**
 * Starts the built server on `dataDir`, returns its ready line, a promise of its exit, and `release`:
 * until then stdin is open, the lease of the command that starts a server (data-dir-daemon.ts), so the
 * server serves however long the test takes; then it leaves at once (no idle time).
 */
function startServer(outdir: string, dataDir: string, cacheHome: string) {
  const child = spawn(process.execPath, [join(outdir, 'data-dir-server-main.js'), dataDir], {
    // dynalite stays a package: found from the repository's node_modules, as from the installed one's.
    env: {
      ...process.env,
      NODE_PATH: join(ROOT, 'node_modules'),
      XDG_CACHE_HOME: cacheHome,
      STEPTHREAD_STORE_IDLE_MS: '0',
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ready = new Promise<Ready>((resolve, reject) => {
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) resolve(JSON.parse(text.slice(0, text.indexOf('\n'))) as Ready);
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before it was ready: ${text}`)));
  });
  return { ready, exited, release: () => child.stdin.end() };
}

describe('the built store server', () => {
  let work: string;
  let outdir: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'stepthread-store-server-'));
    outdir = join(work, 'bin');
    await buildStoreServer({ outdir });
  }, 120_000);
  afterAll(() => rm(work, { recursive: true, force: true }));

  it('serves the data directory, then starts again from its code cache', async () => {
    const cacheHome = join(work, 'cache');
    const dataDir = join(work, 'data');

    // An earlier build's cache, which the first start replaces.
    await mkdir(join(cacheHome, 'stepthread'), { recursive: true });
    await writeFile(join(cacheHome, 'stepthread', 'store-server-v0-x64-1-1.v8cache'), 'stale');

    const first = startServer(outdir, dataDir, cacheHome);
    const { ready } = await first.ready;
    // Written as the server exits, so that it holds the request handlers too: not yet.
    expect(await readdir(join(cacheHome, 'stepthread'))).toEqual(['store-server-v0-x64-1-1.v8cache']);
    const target = {
      kind: 'embedded',
      dynamoEndpoint: ready.dynamoEndpoint,
      s3Endpoint: ready.s3Endpoint,
    } as const;
    const clients = createAwsClients(target, {
      tableName: 'stepthread',
      bucketName: 'stepthread-conversations',
    });
    const tables = await clients.dynamo.send(new ListTablesCommand({}));
    expect(tables.TableNames).toContain('stepthread');
    const buckets = await createS3Client(target).send(new ListBucketsCommand({}));
    expect(buckets.Buckets?.map((bucket) => bucket.Name)).toContain('stepthread-conversations');
    releaseAwsClients(target);
    first.release();
    expect(await first.exited).toBe(0);

    const cacheDir = join(cacheHome, 'stepthread');
    const [cacheFile, ...others] = await readdir(cacheDir);
    expect(others).toEqual([]);
    expect(cacheFile).toMatch(/^store-server-v.*\.v8cache$/);
    expect(cacheFile).not.toBe('store-server-v0-x64-1-1.v8cache');
    const written = await stat(join(cacheDir, cacheFile!));
    expect(written.size).toBeGreaterThan(100_000);

    // Over the same data, from the cache: it is accepted, so not written again.
    const second = startServer(outdir, dataDir, cacheHome);
    expect((await second.ready).ready.pid).toBeGreaterThan(0);
    second.release();
    expect(await second.exited).toBe(0);
    expect((await stat(join(cacheDir, cacheFile!))).mtimeMs).toBe(written.mtimeMs);
    expect(await readdir(cacheDir)).toEqual([cacheFile]);
  }, 60_000);

  it('reads a database it did not leave through LevelDB as installed, and refuses a damaged one, coded', async () => {
    const cacheHome = join(work, 'cache-damaged');
    const dataDir = join(work, 'damaged');
    // Twice: opened again, LevelDB moves its log into a table file.
    for (let start = 0; start < 2; start += 1) {
      const server = startServer(outdir, dataDir, cacheHome);
      await server.ready;
      server.release();
      expect(await server.exited).toBe(0);
    }
    const database = join(dataDir, 'dynamodb');
    const table = (await readdir(database)).find((name) => name.endsWith('.ldb'))!;
    const bytes = await readFile(join(database, table));
    await writeFile(join(database, table), bytes.fill(0x67, 0, Math.min(350, bytes.length)));
    const damaged = startServer(outdir, dataDir, cacheHome);
    expect(await damaged.ready).toEqual({
      error: {
        code: 'LOCAL_DATA_CORRUPT',
        message: expect.stringContaining(`the database in ${database} is damaged`),
      },
    });
    expect(await damaged.exited).toBe(1);
  }, 60_000);
});
