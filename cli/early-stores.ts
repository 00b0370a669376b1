/**
 * `stepthread run` opens its data directory's stores only after it has loaded its modules and checked
 * the workflow; starting the directory's store server, when none is up, takes longer than all that.
 * So main begins the opening (openEarly) from the bare arguments, before the command's modules load.
 * A no-op for the remote targets and for a directory that does not exist yet.
 */
import { resolve } from 'node:path';
import { StepthreadError } from '../engine/errors.ts';
import { resolveAwsTarget } from '../functions/aws/target.ts';
import { openEarly } from '../functions/local/data-dir-server.ts';
import type { CliIo } from './io.ts';

/**
 * `--data-dir`, else STEPTHREAD_DATA_DIR (set and not empty), else `.stepthread` in the working
 * directory. An empty `--data-dir` (an unset shell variable, `--data-dir "$DIR"`) is refused: it would
 * resolve to the working directory itself and fill it with the stores' files.
 */
export function dataDirPath(given: string | undefined, io: CliIo): string {
  const env = io.env ?? process.env;
  if (given === '') {
    throw new StepthreadError(
      'LOCAL_DATA_UNWRITABLE',
      '--data-dir is empty, which names no directory (it would be the working directory): give the directory, or leave the option out for ./.stepthread',
    );
  }
  return resolve(io.cwd ?? process.cwd(), given ?? (env.STEPTHREAD_DATA_DIR || '.stepthread'));
}

/** The value of `--data-dir` in `args` as commander reads it (`--data-dir DIR` or `--data-dir=DIR`). */
function dataDirArgument(args: readonly string[]): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--') break;
    if (arg === '--data-dir') {
      value = args[i + 1];
      i += 1;
    } else if (arg.startsWith('--data-dir=')) value = arg.slice('--data-dir='.length);
  }
  return value;
}

/**
 * Begins opening the stores `stepthread run <args>` will use (a wrong guess costs an idle server);
 * returns what drops it if the command never opened them.
 */
export function openRunStoresEarly(args: readonly string[], io: CliIo): () => void {
  const env = io.env ?? process.env;
  const embedded = { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' };
  if (resolveAwsTarget(env, embedded).kind !== 'embedded') return () => {};
  const given = dataDirArgument(args);
  // Refused by the command itself, with its code.
  if (given === '') return () => {};
  return openEarly(dataDirPath(given, io));
}
