/**
 * `<dataDir>/stepthread.lock`: which one process serves a data directory's stores. LevelDB (under
 * dynalite) allows one process at a time, and dynalite reports a store it cannot open as an uncaught
 * error, so the process that will open it takes this lock first and others are refused with a code.
 *
 * Many commands may start a server for one directory at the same moment (data-dir-server.ts), so the
 * lock must hold under races: the file appears whole (written aside, then hard-linked into place, which
 * fails when it exists), and a stale one (its process gone) is removed by one process only. Both races
 * were seen: a reader found the file empty between its creation and its write and removed it as stale,
 * and two processes taking over one stale lock each removed the lock the other had just taken.
 */
import { randomUUID } from 'node:crypto';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StepthreadError } from '../../engine/errors.ts';
import { liveHolderOf, ownHolderText } from './process-liveness.ts';

export const LOCK_FILE = 'stepthread.lock';

/** Rounds of "taken, but by a process that is gone" before giving up. */
const ATTEMPTS = 20;

/** Takes the lock of `dataDir`; resolves to its release. LOCAL_DATA_LOCKED while a live process holds it. */
export async function acquireDataDirLock(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = join(dataDir, LOCK_FILE);
  const mine = ownHolderText();
  // Unique even between two calls in one process.
  const written = `${lockPath}.${process.pid}.${randomUUID().slice(0, 8)}`;
  await writeFile(written, mine);
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      try {
        await link(written, lockPath);
        return () => releaseLock(lockPath, mine);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await readFile(lockPath, 'utf8').catch(() => undefined);
      // Released between the two calls: try again.
      if (holder === undefined) continue;
      const pid = liveHolderOf(holder);
      if (pid !== undefined) {
        throw new StepthreadError(
          'LOCAL_DATA_LOCKED',
          `local data directory ${dataDir} is in use by stepthread process ${pid}` +
            (pid === process.pid ? ' (this process)' : '') +
            '; stop it or use another --data-dir',
        );
      }
      await takeOverStale(lockPath, holder, written);
    }
  } finally {
    await unlink(written).catch(() => {});
  }
  throw new StepthreadError('LOCAL_DATA_LOCKED', `could not lock local data directory ${dataDir}`);
}

/**
 * Removes the stale lock that read `stale`, under a second lock (`.takeover`, taken the same way) so
 * that of several processes taking over one stale lock, only the first removes anything: the others
 * find it gone or live. `pidFile` holds this process's pid, to link into place.
 */
async function takeOverStale(lockPath: string, stale: string, pidFile: string): Promise<void> {
  const guard = `${lockPath}.takeover`;
  try {
    await link(pidFile, guard);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Another process is taking it over; one that died doing so leaves its guard behind.
    const holder = await readFile(guard, 'utf8').catch(() => undefined);
    if (holder !== undefined && liveHolderOf(holder) === undefined) await unlink(guard).catch(() => {});
    await sleep(5);
    return;
  }
  try {
    if ((await readFile(lockPath, 'utf8').catch(() => undefined)) === stale) await unlink(lockPath);
  } finally {
    await unlink(guard).catch(() => {});
  }
}

/** Removes the lock if it is still this process's. */
async function releaseLock(lockPath: string, mine: string): Promise<void> {
  const holder = await readFile(lockPath, 'utf8').catch(() => undefined);
  if (holder === mine) await unlink(lockPath).catch(() => {});
}

/** The pid of the live process that holds the lock of `dataDir`; undefined when none does. */
export async function lockHolder(dataDir: string): Promise<number | undefined> {
  const holder = await readFile(join(dataDir, LOCK_FILE), 'utf8').catch(() => undefined);
  return holder === undefined ? undefined : liveHolderOf(holder);
}
