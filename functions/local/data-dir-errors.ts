/**
 * What goes wrong with a local data directory, as coded errors that name the path and say what to
 * do: a directory that cannot be written, a database that cannot be opened, a directory removed
 * while a command used it.
 */
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';

const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EDQUOT']);
/** A path that cannot name a directory at all: a symlink loop, a name too long. */
const UNUSABLE_PATH = new Set(['ELOOP', 'ENAMETOOLONG']);

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A file directly in `dataDir` could not be created though the directory is there: a directory such
 * as /proc/self, where no file can be made (it is not the directory having been removed).
 */
function cannotHoldFiles(error: NodeJS.ErrnoException, dataDir: string): boolean {
  return (
    typeof error.path === 'string' &&
    resolve(dirname(error.path)) === resolve(dataDir) &&
    isDirectory(dataDir)
  );
}

/** `error` (from opening or using `dataDir`) as a coded error; coded ones pass through. */
export function dataDirError(error: unknown, dataDir: string): CodedError {
  if (error instanceof StepthreadError) return error.toJSON();
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  const text = error instanceof Error ? error.message : String(error);
  if (errno !== undefined && UNWRITABLE.has(errno)) {
    return {
      code: 'LOCAL_DATA_UNWRITABLE',
      message: `local data directory ${dataDir} cannot be written (${errno}): make it writable, or use another --data-dir (or STEPTHREAD_DATA_DIR)`,
    };
  }
  if (errno === 'ENOTDIR' || errno === 'EEXIST') {
    return {
      code: 'LOCAL_DATA_UNWRITABLE',
      message: `local data directory ${dataDir} is not a directory (${errno}): remove what is there, or use another --data-dir (or STEPTHREAD_DATA_DIR)`,
    };
  }
  if (errno !== undefined && UNUSABLE_PATH.has(errno)) {
    return {
      code: 'LOCAL_DATA_UNWRITABLE',
      message: `local data directory ${dataDir} cannot be used as a directory (${text}): use another --data-dir (or STEPTHREAD_DATA_DIR)`,
    };
  }
  if (errno === 'ENOENT' && cannotHoldFiles(error as NodeJS.ErrnoException, dataDir)) {
    return {
      code: 'LOCAL_DATA_UNWRITABLE',
      message: `local data directory ${dataDir} cannot hold files (${text}): use another --data-dir (or STEPTHREAD_DATA_DIR)`,
    };
  }
  if (errno === 'ENOENT') {
    return {
      code: 'LOCAL_DATA_GONE',
      message: `local data directory ${dataDir} (or part of it) was removed while in use (${text}): run again to start a fresh store there, or restore the directory`,
    };
  }
  return {
    code: 'LOCAL_DATA_CORRUPT',
    message: `the database in ${join(dataDir, 'dynamodb')} cannot be opened (${text}): move ${dataDir} aside (its runs are lost to stepthread) and run again, or restore it from a backup`,
  };
}

/**
 * For commands that only read: why `dataDir` cannot be read from, or undefined when it is a directory.
 * Nothing there is LOCAL_DATA_NOT_FOUND; a file, a device or a path through a file is not a directory.
 */
export function unreadableDataDir(dataDir: string): CodedError | undefined {
  try {
    if (statSync(dataDir).isDirectory()) return undefined;
    return dataDirError(Object.assign(new Error('not a directory'), { code: 'ENOTDIR' }), dataDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return dataDirError(error, dataDir);
    return {
      code: 'LOCAL_DATA_NOT_FOUND',
      message: `no local data directory at ${dataDir}: nothing has run there; run a workflow first, or point --data-dir (or STEPTHREAD_DATA_DIR) at the directory your runs used`,
    };
  }
}
