/**
 * What the run / inspect / copy commands share: the workflow file checked and parsed, and the stores
 * — the embedded dynalite + s3rver under the data directory by default, or LocalStack / AWS when the
 * environment selects them (resolveAwsTarget).
 */

import { existsSync } from 'node:fs';
import { type CodedError, StepthreadError } from '../engine/errors.ts';
import type { Workflow } from '../engine/model/schema.ts';
import type { AwsClients } from '../functions/aws/clients.ts';
import { type ResourceNames, resolveAwsTarget } from '../functions/aws/target.ts';
// The client's half only: no store code, no SDK (the directory's server runs in its own process).
import { unreadableDataDir } from '../functions/local/data-dir-errors.ts';
import { openDataDir } from '../functions/local/data-dir-server.ts';
import { type CommandForm, shellWord } from '../functions/local/interaction-hints.ts';
import { awsAccessProblem } from './aws-errors.ts';
import { checkWorkflow } from './check-workflow.ts';
import { dataDirPath } from './early-stores.ts';
import { formatCodedError } from './format.ts';
import { cliInvocation } from './invocation.ts';
import { type CliIo, EXIT } from './io.ts';
import { loadWorkflowFile } from './load-workflow.ts';
import { isMissingResource, namesAfterRedeploy, resolveStackNames } from './stack-names.ts';

export interface DataDirOption {
  dataDir?: string;
  /** A deployed stack whose TableName/BucketName outputs name the table and bucket (stack-names.ts). */
  stack?: string;
  /** Read commands: a data directory that does not exist is an error, not a new empty store. */
  mustExist?: boolean;
  /** `--no-cache` (false): read the stack's outputs from CloudFormation, never from the data directory. */
  cache?: boolean;
}

/** `--stack`, for the commands that can read a deployed stack. */
export const STACK_OPTION_HELP =
  'deployed stack whose outputs name the table and bucket (default: $STEPTHREAD_STACK_NAME; STEPTHREAD_TABLE/STEPTHREAD_BUCKET win)';

/** `--no-cache`, beside `--stack`. */
export const NO_CACHE_OPTION_HELP =
  "read the stack's outputs from CloudFormation now, not from the copy cached under the data directory";

/** Where a `--stack` command caches the stack's outputs: the data directory, unless `--no-cache`. */
export function stackCacheDir(options: DataDirOption, io: CliIo): string | undefined {
  return options.cache === false ? undefined : dataDirOf(options, io);
}

/** `--data-dir`, else STEPTHREAD_DATA_DIR, else `.stepthread` in the working directory. */
export function dataDirOf(options: DataDirOption, io: CliIo): string {
  return dataDirPath(options.dataDir, io);
}

/**
 * ` --data-dir <dir>` when the command was given one, for a command it prints for the user to run
 * (a resume), so the printed command finds the same data; '' otherwise (the default or
 * STEPTHREAD_DATA_DIR, which the next command finds too).
 */
export function dataDirArgument(options: Pick<DataDirOption, 'dataDir'>): string {
  return options.dataDir === undefined ? '' : ` --data-dir ${shellWord(options.dataDir)}`;
}

/**
 * ` --stack <name>` and ` --data-dir <dir>` as the command was given them, for a command it prints
 * that reads the same stores (a `respond`): without `--stack` it would read the local data directory,
 * not the deployed stack. A stack from STEPTHREAD_STACK_NAME is left out, as the next command finds it too.
 */
export function storeArguments(options: Pick<DataDirOption, 'dataDir' | 'stack'>): string {
  const stack = options.stack === undefined ? '' : ` --stack ${shellWord(options.stack)}`;
  return `${stack}${dataDirArgument(options)}`;
}

/**
 * How a command printed for the user begins and ends: the CLI as they ran it, then `stores` (the
 * command's dataDirArgument or storeArguments).
 */
export function commandForm(io: CliIo, stores: string): CommandForm {
  return { cli: cliInvocation(io.env ?? process.env), storeArguments: stores };
}

export interface StoreSession {
  readonly clients: AwsClients;
  /** Where the data lives, for messages. */
  readonly location: string;
  /** The local data directory, when the stores are the embedded ones. */
  readonly dataDir?: string;
  /**
   * Names read from the cached outputs of a stack: asks CloudFormation again and gives a session on
   * the names it answers now, or undefined when they are the same (then the cache was right).
   */
  refresh?(): Promise<StoreSession | undefined>;
  close(): Promise<void>;
}

export async function openStores(options: DataDirOption, io: CliIo): Promise<StoreSession> {
  const given = io.env ?? process.env;
  const embedded = { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' } as const;
  // Naming a stack means AWS itself when no endpoint says otherwise, as for `runs` and `dev`: never
  // the local data directory while the user asked for a deployed stack.
  const env =
    options.stack !== undefined && resolveAwsTarget(given, embedded).kind === 'embedded'
      ? { ...given, STEPTHREAD_TARGET: 'aws' }
      : given;
  const target = resolveAwsTarget(env, embedded);
  // The SDK clients load here, not at the top: `compile` shares this module and needs no SDK
  // (cli/main.ts). For the embedded stores they load while the directory's server is found or started.
  const clientsModule = import('../functions/aws/clients.ts');
  if (target.kind !== 'embedded') {
    const cacheDir = stackCacheDir(options, io);
    const resolveOptions = {
      ...(options.stack ? { stack: options.stack } : {}),
      ...(cacheDir ? { cacheDir } : {}),
    };
    const { createAwsClients } = await clientsModule;
    const session = (names: ResourceNames, cached: boolean): StoreSession => ({
      clients: createAwsClients(target, names),
      location: target.kind === 'endpoint' ? target.endpoint : 'AWS',
      ...(cached
        ? {
            refresh: async () => {
              const fresh = await namesAfterRedeploy(env, target, resolveOptions, names);
              return fresh && session(fresh, false);
            },
          }
        : {}),
      close: async () => {},
    });
    const resolved = await resolveStackNames(env, target, resolveOptions);
    return session(resolved.names, resolved.cached);
  }
  const dataDir = dataDirOf(options, io);
  const unreadable = options.mustExist ? unreadableDataDir(dataDir) : undefined;
  if (unreadable) throw new StepthreadError(unreadable.code, unreadable.message);
  // Shared with every other command on the directory (functions/local/data-dir-server.ts).
  const [services, { createAwsClients }] = await Promise.all([
    openDataDir(dataDir, { create: !options.mustExist }),
    clientsModule,
  ]);
  return {
    clients: createAwsClients(services.target, services.names),
    location: dataDir,
    dataDir,
    close: () => services.close(),
  };
}

/**
 * Opens the stores, runs `work` with them, and always closes them. A failure to open or an error from
 * `work` is printed with its code under `failure` and gives exit 1.
 */
export async function withStores(
  options: DataDirOption,
  io: CliIo,
  failure: (session: StoreSession | undefined) => string,
  work: (session: StoreSession) => Promise<number>,
  /** Called once opening has begun: loads what `work` needs while a store server may be starting. */
  whileOpening?: () => void,
): Promise<number> {
  let session: StoreSession;
  try {
    const opening = openStores(options, io);
    whileOpening?.();
    session = await opening;
  } catch (error) {
    printErrors(io, failure(undefined), [codedOf(error, io.env ?? process.env)]);
    return EXIT.invalid;
  }
  try {
    let code: number;
    try {
      code = await work(session);
    } catch (error) {
      // Names from a stack's cached outputs, and the table or bucket is gone: the stack was deployed
      // again. With the names CloudFormation gives now, the command runs once more.
      const fresh = isMissingResource(error) ? await session.refresh?.() : undefined;
      if (!fresh) throw error;
      await session.close();
      session = fresh;
      code = await work(session);
    }
    if (session.dataDir !== undefined && !existsSync(session.dataDir)) throw goneError(session.dataDir);
    return code;
  } catch (error) {
    const gone = session.dataDir !== undefined && !existsSync(session.dataDir);
    printErrors(io, failure(session), [
      gone ? goneError(session.dataDir!).toJSON() : localCodedOf(error, session, io.env ?? process.env),
    ]);
    return EXIT.invalid;
  } finally {
    await session.close();
  }
}

/**
 * `error` as codedOf gives it, but for the embedded stores a connection cut is their server having
 * stopped (a damaged table it read, or it was killed), not AWS out of reach.
 */
function localCodedOf(
  error: unknown,
  session: StoreSession,
  env: Readonly<Record<string, string | undefined>>,
): CodedError {
  const coded = codedOf(error, env);
  if (session.dataDir === undefined || coded.code !== 'AWS_ENDPOINT_UNREACHABLE') return coded;
  const cause = error instanceof Error ? ` (${error.message})` : '';
  return {
    code: 'LOCAL_STORE_SERVER_FAILED',
    message: `the store server for ${session.dataDir} stopped while this command used it${cause}; run the command again: a damaged database is then named (LOCAL_DATA_CORRUPT)`,
  };
}

/** The data directory was removed while the command used it: what it wrote there is gone. */
function goneError(dataDir: string): StepthreadError {
  return new StepthreadError(
    'LOCAL_DATA_GONE',
    `local data directory ${dataDir} was removed while this command used it; what it stored there is lost. Run again to start a fresh store there`,
  );
}

export type LoadedWorkflow = { ok: true; workflow: Workflow } | { ok: false; exitCode: number };

/** Reads and validates a workflow file; prints the problems and gives the exit code when it fails. */
export async function loadValidWorkflow(file: string, io: CliIo): Promise<LoadedWorkflow> {
  const loaded = await loadWorkflowFile(file, io);
  if (loaded.kind === 'unreadable') {
    io.stderr(`stepthread: ${formatCodedError(loaded.error)}\n`);
    return { ok: false, exitCode: EXIT.usage };
  }
  const result =
    loaded.kind === 'unparsable'
      ? { errors: [loaded.error], workflow: undefined }
      : await checkWorkflow(loaded.data);
  if (result.errors.length > 0 || result.workflow === undefined) {
    printErrors(io, `${file} is not a valid workflow`, result.errors);
    return { ok: false, exitCode: EXIT.invalid };
  }
  return { ok: true, workflow: result.workflow };
}

export function printErrors(io: CliIo, headline: string, errors: readonly CodedError[]): void {
  io.stderr(`stepthread: ${headline}\n`);
  for (const error of errors) io.stderr(`  ${formatCodedError(error)}\n`);
}

/**
 * What a command on a deployed stack prints when it fails: a coded error (its own code, or what to fix
 * to reach AWS) with what to do, else the error's message on one line.
 */
export function printDeployedFailure(
  io: CliIo,
  headline: string,
  error: unknown,
  env: Readonly<Record<string, string | undefined>> = process.env,
): void {
  const coded = error instanceof StepthreadError ? error.toJSON() : awsAccessProblem(error, env);
  if (coded) printErrors(io, headline, [coded]);
  else io.stderr(`stepthread: ${headline}: ${(error as Error).message}\n`);
}

/**
 * A thrown error as a coded one, for output: StepthreadError carries its code; an AWS SDK failure to
 * reach the stores gets the code of what to fix (cli/aws-errors.ts).
 */
export function codedOf(
  error: unknown,
  env: Readonly<Record<string, string | undefined>> = process.env,
): CodedError {
  const coded = error as Partial<CodedError> & { toJSON?: () => CodedError };
  if (typeof coded.toJSON === 'function') return coded.toJSON();
  return (
    awsAccessProblem(error, env) ?? {
      code: 'NODE_EXECUTION_FAILED',
      message: error instanceof Error ? error.message : String(error),
    }
  );
}
