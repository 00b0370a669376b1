/**
 * One process contending for a data directory's lock (data-dir-lock.test.ts starts several at once),
 * from the epoch millisecond given last:
 * `<dataDir> rounds <n>`: n times take the lock (retrying while held), mark the directory as held while
 * holding it, and release; a mark already there is two holders at once, printed as VIOLATION.
 * `<dataDir> once <holdMs>`: try once; print `got` (and hold for holdMs) or `locked`.
 */
import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { acquireDataDirLock } from '../../../functions/local/data-dir-lock.ts';

const [dataDir = '', mode, count = '1', startAt = '0'] = process.argv.slice(2);
const n = Number(count);
// All contenders begin at one moment, whatever their start-up took.
await sleep(Math.max(0, Number(startAt) - Date.now()));
const locked = (error: unknown) => (error as { code?: string }).code === 'LOCAL_DATA_LOCKED';

if (mode === 'once') {
  try {
    const release = await acquireDataDirLock(dataDir);
    console.log('got');
    await sleep(n);
    await release();
  } catch (error) {
    if (!locked(error)) throw error;
    console.log('locked');
  }
} else {
  const mark = join(dataDir, 'held');
  for (let round = 0; round < n; round += 1) {
    let release: () => Promise<void>;
    for (;;) {
      try {
        release = await acquireDataDirLock(dataDir);
        break;
      } catch (error) {
        if (!locked(error)) throw error;
        await sleep(Math.random() * 3);
      }
    }
    try {
      await writeFile(mark, String(process.pid), { flag: 'wx' });
    } catch {
      console.log('VIOLATION');
    }
    await sleep(Math.random() * 2);
    await unlink(mark).catch(() => {});
    await release();
  }
  console.log('done');
}
