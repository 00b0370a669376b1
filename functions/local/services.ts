/**
 * The embedded runtime's AWS stand-ins: dynalite (DynamoDB) and s3rver (S3) on loopback, in this
 * process, on random ports. Persistent under `<dataDir>` by default; ephemeral for tests.
 */
import { accessSync, constants } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { releaseAwsClients } from '../aws/client-cache.ts';
// Types only: a store server loads no SDK client (local-provision.ts).
import type { AwsTarget } from '../aws/clients.ts';
import { type ResourceNames, resolveResourceNames } from '../aws/target.ts';
import { missingDatabase, recordTables, verifyDatabase } from './data-dir-damage.ts';
import { acquireDataDirLock } from './data-dir-lock.ts';
import { createDynalite } from './dynalite-direct.ts';
import { cacheDynaliteParses } from './dynalite-parse-cache.ts';
import { ensureLocalBucket, ensureLocalTable } from './local-provision.ts';
import { LoopbackFilesystemStore } from './s3-store.ts';

export type EmbeddedTarget = Extract<AwsTarget, { kind: 'embedded' }>;

export type LocalServicesOptions = (
  | {
      readonly dataDir: string;
      readonly ephemeral?: false;
      /** The release of the directory's lock when the caller has taken it; else it is taken here. */
      readonly heldLock?: () => Promise<void>;
    }
  /** In-memory DynamoDB and a throwaway S3 directory, removed on close. */
  | { readonly dataDir?: string; readonly ephemeral: true }
) & {
  /** Table and bucket to create; defaults from STEPTHREAD_TABLE / STEPTHREAD_BUCKET. */
  readonly names?: ResourceNames;
  /**
   * Whether this process's clients reach the emulators without a socket (functions/local/in-process.ts);
   * default true. The endpoints listen on loopback either way, for clients in other processes.
   */
  readonly serveInProcess?: boolean;
};

export interface LocalServices {
  readonly target: EmbeddedTarget;
  readonly names: ResourceNames;
  /** Wall time from the call to ready-to-serve (table and bucket exist), in milliseconds. */
  readonly startupMs: number;
  close(): Promise<void>;
}

export async function startLocalServices(options: LocalServicesOptions): Promise<LocalServices> {
  const started = performance.now();
  const names = options.names ?? resolveResourceNames(process.env);
  const cleanups: (() => Promise<void>)[] = [];
  const cleanUp = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };

  try {
    let dynamoPath: string | undefined;
    let s3Dir: string;
    if (options.ephemeral) {
      const parent = options.dataDir ?? ephemeralParent();
      await mkdir(parent, { recursive: true });
      s3Dir = await mkdtemp(join(parent, 'stepthread-s3-'));
      cleanups.push(() => rm(s3Dir, { recursive: true, force: true }));
    } else {
      await mkdir(options.dataDir, { recursive: true });
      // LevelDB takes an exclusive lock, and dynalite crashes the process with an uncaught error
      // when it cannot open its store: refuse up front, with a code and the holder's pid.
      const release = options.heldLock ?? (await acquireDataDirLock(options.dataDir));
      cleanups.push(release);
      // Before anything opens or creates the database: LevelDB would replace a damaged one by an
      // empty one, deleting its files (data-dir-damage.ts).
      const missing = missingDatabase(options.dataDir);
      if (missing) throw missing;
      await verifyDatabase(options.dataDir);
      const { dataDir } = options;
      // Found whole: recorded once the database has closed (cleanups run in reverse), lock still held.
      cleanups.push(() => recordTables(dataDir));
      dynamoPath = join(options.dataDir, 'dynamodb');
      s3Dir = join(options.dataDir, 's3');
      await mkdir(s3Dir, { recursive: true });
    }

    // Every request's expressions parsed once per shape, not afresh (about a tenth of a step's CPU).
    cacheDynaliteParses();
    const { server: dynamoServer, store: dynamoStore } = createDynalite({
      createTableMs: 0,
      deleteTableMs: 0,
      updateTableMs: 0,
      ...(dynamoPath ? { path: dynamoPath } : {}),
    });
    const dynamoPort = await listen(dynamoServer);
    cleanups.push(() => closeServer(dynamoServer));

    const s3 = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: s3Dir,
      resetOnClose: false,
    });
    // The same files, made without thread-pool round trips (s3-store.ts).
    const store = new LoopbackFilesystemStore(s3Dir);
    s3.store = s3.context.store = store;
    // s3rver's first middleware formats a colored log line per request for a logger told to be silent.
    if (s3.middleware[0]?.name === 'logger') s3.middleware.shift();
    // Its winston logger formats every message (JSON) before its silent transport drops it.
    s3.logger.silent = true;
    const s3Address = await s3.run();
    cleanups.push(async () => {
      s3.httpServer?.closeAllConnections();
      await s3.close();
    });

    const target: EmbeddedTarget = {
      kind: 'embedded',
      dynamoEndpoint: `http://127.0.0.1:${dynamoPort}`,
      s3Endpoint: `http://127.0.0.1:${s3Address.port}`,
    };
    cleanups.push(async () => releaseAwsClients(target));
    if (options.serveInProcess !== false) {
      // Loaded only here: the data directory's server serves other processes alone.
      const { serveDynaliteInProcess, serveServerInProcess } = await import('./in-process.ts');
      cleanups.push(serveDynaliteInProcess(target.dynamoEndpoint, dynamoServer, dynamoStore));
      if (s3.httpServer) cleanups.push(serveServerInProcess(target.s3Endpoint, s3.httpServer));
    }
    // Both settle before any failure closes the services: dynalite throws an uncaught error for a
    // request it takes after its database has closed.
    const provisioned = await Promise.allSettled([
      ensureLocalTable(target.dynamoEndpoint, names.tableName),
      ensureLocalBucket(store, names.bucketName),
    ]);
    for (const outcome of provisioned) if (outcome.status === 'rejected') throw outcome.reason;

    let closed: Promise<void> | undefined;
    return {
      target,
      names,
      startupMs: performance.now() - started,
      close: () => {
        closed ??= cleanUp();
        return closed;
      },
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

/** Memory-backed when the system has one for everyone (Linux's /dev/shm), else the temp directory. */
function ephemeralParent(): string {
  try {
    accessSync(SHARED_MEMORY, constants.W_OK);
    return SHARED_MEMORY;
  } catch {
    return tmpdir();
  }
}
const SHARED_MEMORY = '/dev/shm';

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error?: Error) => (error ? reject(error) : resolve()));
    // Keep-alive sockets from SDK clients would otherwise hold the close open.
    server.closeAllConnections();
  });
}
