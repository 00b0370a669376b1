/**
 * A data directory whose database is damaged is refused before dynalite opens it, with a coded error
 * naming what is wrong: LevelDB (under dynalite) opened with createIfMissing starts a fresh, empty
 * database when `dynamodb/CURRENT` is gone and deletes the old table files as obsolete, so a mere
 * `stepthread runs` said "no runs" and destroyed every run. And a table file with garbage in it
 * opened fine, then failed the first read that reached it with an error dynalite throws uncaught,
 * killing the store server at each command ("socket hang up").
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { copyFile, link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StepthreadError } from '../../engine/errors.ts';

/** LevelDB's files that hold data: without CURRENT they are orphans a fresh open would delete. */
const DATABASE_FILE = /^(\d+\.(ldb|sst|log)|MANIFEST-\d+)$/;

function entriesOf(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

function whatToDo(dataDir: string): string {
  return `stepthread did not open it; restore ${dataDir} from a backup, or move it aside (its runs are then lost to stepthread) and run again to start a fresh store`;
}

/**
 * LOCAL_DATA_DAMAGED when `dataDir` was used (its database has files, or its S3 folder has buckets)
 * but its database cannot be found whole: no `dynamodb/CURRENT`. A directory never used, or made but
 * left before its database was (s3/ still empty), is fine: a fresh store starts there.
 */
export function missingDatabase(dataDir: string): StepthreadError | undefined {
  const dynamoDir = join(dataDir, 'dynamodb');
  const files = entriesOf(dynamoDir);
  if (files.includes('CURRENT')) return undefined;
  const orphans = files.filter((name) => DATABASE_FILE.test(name));
  if (orphans.length > 0) {
    return new StepthreadError(
      'LOCAL_DATA_DAMAGED',
      `the database in ${dynamoDir} is damaged: its CURRENT file is missing (${orphans.length} database files remain, ${orphans.slice(0, 3).join(', ')}); ${whatToDo(dataDir)}`,
    );
  }
  const buckets = entriesOf(join(dataDir, 's3'));
  if (buckets.length > 0) {
    return new StepthreadError(
      'LOCAL_DATA_DAMAGED',
      `the database of ${dataDir} is missing: ${dynamoDir}${files.length === 0 ? '' : '/CURRENT'} is gone while ${join(dataDir, 's3')} holds stored objects (${buckets.slice(0, 3).join(', ')}); ${whatToDo(dataDir)}`,
    );
  }
  return undefined;
}

/**
 * Reads the whole database of `dataDir` once before dynalite opens it: LOCAL_DATA_CORRUPT naming the
 * directory when a file in it is damaged (LevelDB checks each block as it reads it). Nothing to read
 * (a fresh directory): nothing to check.
 *
 * It reads a twin, `dynamodb.check/`, of hard links to the database's files: opening a LevelDB writes
 * (a new MANIFEST, CURRENT and log, the old ones removed), and a database found damaged must be left
 * exactly as it was. LevelDB never writes into an existing table or log file (it writes new ones and
 * renames), so the links keep the originals untouched; where links cannot be made, copies are.
 */
export async function verifyDatabase(dataDir: string): Promise<void> {
  const dynamoDir = join(dataDir, 'dynamodb');
  const files = entriesOf(dynamoDir);
  if (!files.includes('CURRENT')) return;
  if (await tablesAsLeft(dataDir)) return;
  const twin = join(dataDir, 'dynamodb.check');
  await rm(twin, { recursive: true, force: true });
  await mkdir(twin);
  try {
    for (const name of files) {
      if (!DATABASE_FILE.test(name) && name !== 'CURRENT') continue;
      await link(join(dynamoDir, name), join(twin, name)).catch(() =>
        copyFile(join(dynamoDir, name), join(twin, name)),
      );
    }
    await readWhole(twin, dataDir, dynamoDir);
  } finally {
    await rm(twin, { recursive: true, force: true });
  }
}

async function readWhole(path: string, dataDir: string, dynamoDir: string): Promise<void> {
  const { ClassicLevel } = await import('classic-level');
  const db = new ClassicLevel<Buffer, Buffer>(path, {
    createIfMissing: false,
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  try {
    await db.open();
    for await (const _ of db.iterator({ fillCache: false })) {
      // Reading is the check.
    }
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    const text = [error, cause]
      .filter((part): part is Error => part instanceof Error)
      .map((part) => part.message.replaceAll(path, dynamoDir))
      .join(': ');
    throw new StepthreadError(
      'LOCAL_DATA_CORRUPT',
      `the database in ${dynamoDir} is damaged and cannot be read (${text}); ${whatToDo(dataDir)}`,
    );
  } finally {
    await db.close().catch(() => {});
  }
}

/**
 * `<dataDir>/dynamodb/stepthread-tables.json`: the table files as the last store server left them
 * (name, size, modification time), written as it closed the database. Reading the whole database
 * costs about 350 ms per 80 MB, at every server start; a table file is never rewritten, so when every
 * one is as a server left it, nothing but LevelDB has touched them and the reading is skipped. Kept
 * beside them: LevelDB leaves alone a file whose name is none of its own.
 */
const TABLES_FILE = join('dynamodb', 'stepthread-tables.json');

function tableFingerprints(dataDir: string): string[] {
  const dynamoDir = join(dataDir, 'dynamodb');
  return entriesOf(dynamoDir)
    .filter((name) => /^\d+\.(ldb|sst)$/.test(name))
    .flatMap((name) => {
      try {
        const { size, mtimeMs } = statSync(join(dynamoDir, name));
        return [`${name}:${size}:${Math.round(mtimeMs)}`];
      } catch {
        return [];
      }
    });
}

/** Whether every table file of `dataDir` is as the last server to close its database left it. */
async function tablesAsLeft(dataDir: string): Promise<boolean> {
  try {
    const left = new Set(JSON.parse(await readFile(join(dataDir, TABLES_FILE), 'utf8')) as unknown[]);
    const now = tableFingerprints(dataDir);
    // The same set: a table file removed is damage too.
    return now.length === left.size && now.every((fingerprint) => left.has(fingerprint));
  } catch {
    return false;
  }
}

/**
 * Forgets how the table files were left, so that the next server reads the whole database: for a
 * server failing while it serves (a read that found a table damaged though its size and time are as
 * left, such as a disk's bit rot), which would otherwise fail again at every start.
 */
export function forgetTables(dataDir: string): void {
  try {
    rmSync(join(dataDir, TABLES_FILE), { force: true });
  } catch {
    // The directory is gone or unusable: the next server finds out for itself.
  }
}

/** Records the table files as this server leaves them, once it has closed the database. */
export async function recordTables(dataDir: string): Promise<void> {
  const path = join(dataDir, TABLES_FILE);
  const temporary = `${path}.${process.pid}`;
  try {
    await writeFile(temporary, JSON.stringify(tableFingerprints(dataDir)));
    await rename(temporary, path);
  } catch {
    // Not recorded: the next server reads the whole database, as without it.
    await rm(temporary, { force: true }).catch(() => {});
  }
}
