/**
 * What goes wrong with a local data directory, as coded errors that name the path and say what to
 * do: a directory that cannot be written, a database that cannot be opened, a directory removed
 * while a command used it.
 */
import { join } from 'node:path';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';

const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);

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
