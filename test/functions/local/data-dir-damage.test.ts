/**
 * What a store server checks before it opens a data directory's database (data-dir-damage.ts): the
 * cases a fresh or half-made directory must pass, and the reading skipped for table files as the last
 * server left them. The damaged directories themselves: test/cli/damaged-data-dir.test.ts.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingDatabase, recordTables, verifyDatabase } from '../../../functions/local/data-dir-damage.ts';
import { startLocalServices } from '../../../functions/local/services.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-damage-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('missingDatabase', () => {
  it('passes a directory never used, and one left before its database was made', async () => {
    expect(missingDatabase(join(dir, 'absent'))).toBeUndefined();
    const halfMade = join(dir, 'half-made');
    await mkdir(join(halfMade, 's3'), { recursive: true });
    await mkdir(join(halfMade, 'dynamodb'));
    expect(missingDatabase(halfMade)).toBeUndefined();
  });

  it('refuses database files without CURRENT, naming them', async () => {
    const dataDir = join(dir, 'orphans');
    await mkdir(join(dataDir, 'dynamodb'), { recursive: true });
    await writeFile(join(dataDir, 'dynamodb', '000005.ldb'), 'x');
    expect(missingDatabase(dataDir)?.toJSON()).toEqual({
      code: 'LOCAL_DATA_DAMAGED',
      message: expect.stringContaining('its CURRENT file is missing (1 database files remain, 000005.ldb)'),
    });
  });
});

describe('verifyDatabase', () => {
  it('does not read again table files as the last server left them, and reads them once changed or gone', async () => {
    const dataDir = join(dir, 'left');
    // Opened twice: the second open moves the log into a table file.
    for (let open = 0; open < 2; open += 1) {
      const services = await startLocalServices({ dataDir, serveInProcess: false });
      await services.close();
    }
    const database = join(dataDir, 'dynamodb');
    const table = (await readdir(database)).find((name) => name.endsWith('.ldb'))!;
    const path = join(database, table);
    const { mtime } = await stat(path);
    const bytes = await readFile(path);
    await writeFile(path, Buffer.from(bytes).fill(0x67, 0, Math.min(350, bytes.length)));
    // Same name, size and time as left: taken as left, not read.
    await utimes(path, mtime, mtime);
    await expect(verifyDatabase(dataDir)).resolves.toBeUndefined();
    // Its time changed: read, and found damaged.
    await utimes(path, new Date(), new Date());
    await expect(verifyDatabase(dataDir)).rejects.toMatchObject({ code: 'LOCAL_DATA_CORRUPT' });
    // Written whole again and recorded: passes.
    await writeFile(path, bytes);
    await verifyDatabase(dataDir);
    await recordTables(dataDir);
    expect(await readdir(dataDir)).toEqual(['dynamodb', 's3']);
    // One of the files left gone: read, and found damaged.
    await rm(path);
    await expect(verifyDatabase(dataDir)).rejects.toMatchObject({
      code: 'LOCAL_DATA_CORRUPT',
      message: expect.stringContaining(`missing files; e.g.: ${path}`),
    });
  });
});
