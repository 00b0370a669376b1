/**
 * One data directory, any number of commands: the stores of `<dataDir>` (dynalite over LevelDB, which
 * one process at a time may open, and s3rver) are served on loopback by one background process per
 * directory, started by the first command that needs it and gone once no command has used it for a
 * moment. Every command — `run`, `inspect`, `runs`, `pending`, a run waiting at a prompt for a day —
 * is a client of it, through the same DynamoDB and S3 APIs as always.
 *
 * - `<dataDir>/stepthread.lock` (pid, exclusive create) says which process serves the directory;
 *   `<dataDir>/stepthread.server.json` where (endpoints and a control port), written once it is ready.
 * - A client holds a lease for as long as it runs: one open TCP connection to the control port, so a
 *   killed client's lease ends with it. The server exits `idleMs` after the last lease ended. The
 *   client that started it holds one from the start, its stdin, until it has connected.
 * - A client finds the server from the file; when there is none, or it does not answer, it starts one
 *   (detached) and waits for its `ready` line. Two clients starting one at once: the second server
 *   finds the lock taken, says so and exits, and its client uses the first one's — or, when the
 *   holder was a server leaving, starts another as soon as the holder is gone.
 *
 * This module is the client's half and loads no store code; the server's is data-dir-daemon.ts, and
 * data-dir-info.ts what both read.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StepthreadError } from '../../engine/errors.ts';
import { releaseAwsClients } from '../aws/client-cache.ts';
import { dataDirError } from './data-dir-errors.ts';
import { type ReadyLine, readServerInfo, type ServerInfo, STANDBY_FLAG } from './data-dir-info.ts';
import { lockHolder } from './data-dir-lock.ts';
import { isAlive } from './process-liveness.ts';
// Types only: a client of the server never loads dynalite, s3rver or the SDK from here (the server
// half is data-dir-daemon.ts).
import type { EmbeddedTarget, LocalServices } from './services.ts';

/**
 * How long a server has to say `ok` to a connection it accepted (ms; `$STEPTHREAD_STORE_ANSWER_MS`):
 * a live server answers at once, so past this it is hung (stopped, or its port taken by another
 * program that accepts and says nothing), and waiting longer would hang the command.
 */
function answerMs(): number {
  const value = Number(process.env.STEPTHREAD_STORE_ANSWER_MS);
  return Number.isFinite(value) && value > 0 ? value : 10_000;
}

/**
 * A lease on the server at `port`: resolves once it said `ok`; undefined when it is not there, or
 * 'silent' when it took the connection and said nothing in time.
 */
function takeLease(port: number): Promise<Socket | undefined | 'silent'> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const fail = (outcome?: 'silent') => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => fail('silent'), answerMs());
    timer.unref();
    socket.once('error', () => fail());
    socket.once('close', () => fail());
    socket.once('data', () => {
      clearTimeout(timer);
      socket.removeAllListeners('close');
      socket.removeAllListeners('error');
      socket.on('error', () => {});
      // The lease must not keep a finished command alive.
      socket.unref();
      resolve(socket);
    });
  });
}

/**
 * A lease on the server `info` describes, when its process is alive: the file of a killed server
 * stays, and its control port may since belong to another program, which would never answer.
 */
async function leaseOn(info: ServerInfo, dataDir: string): Promise<Socket | undefined> {
  if (!isAlive(info.pid)) return undefined;
  const lease = await takeLease(info.controlPort);
  if (lease !== 'silent') return lease;
  throw new StepthreadError(
    'LOCAL_STORE_SERVER_FAILED',
    `the store server for ${dataDir} (process ${info.pid}) runs but does not answer on 127.0.0.1:${info.controlPort}: stop it (kill ${info.pid}) and run the command again`,
  );
}

/** The package's root, where the server entry is started from (its `tsx` resolves there). */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = fileURLToPath(new URL(`./data-dir-server-main${extname(import.meta.url)}`, import.meta.url));

function extname(url: string): string {
  return url.endsWith('.ts') ? '.ts' : '.js';
}

/**
 * What starting a server came to: a lease on it, or its line when that is not `ready` (or it was, but
 * the lease could not be taken: the server is gone already).
 */
type Started = { info: ServerInfo; lease: Socket } | { line: ReadyLine };

/** A server started in the background: what it came to, once it has said its line. */
interface StartedServer {
  readonly started: Promise<Started>;
  /** A standby server (`--standby`): let it open the directory and serve. */
  go(): void;
  /** A standby server: let it exit without touching anything. */
  drop(): void;
}

/** Starts a server for `dataDir` in the background; `standby`: loaded, but waiting for `go`. */
function spawnServer(dataDir: string, standby = false): StartedServer {
  const loader = ENTRY.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...loader, ENTRY, dataDir, ...(standby ? [STANDBY_FLAG] : [])], {
    cwd: PACKAGE_ROOT,
    detached: true,
    // stdin open is this process's lease until it has taken one on the control port (data-dir-daemon.ts).
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  // The pipes must not keep this process alive (a standby server waits on stdin until `go`).
  (child.stdin as Socket | null)?.unref();
  child.stdin?.on('error', () => {});
  const started = new Promise<Started>((resolve) => {
    let text = '';
    let said = false;
    const done = async (line: ReadyLine) => {
      said = true;
      child.stdout!.destroy();
      child.unref();
      const taken = 'ready' in line ? await takeLease(line.ready.controlPort) : undefined;
      const lease = taken === 'silent' ? undefined : taken;
      // Taken (or the server is gone): the server may now leave once idle.
      child.stdin?.destroy();
      resolve(lease !== undefined && 'ready' in line ? { info: line.ready, lease } : { line });
    };
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\n');
      if (end < 0 || said) return;
      try {
        void done(JSON.parse(text.slice(0, end)) as ReadyLine);
      } catch {
        void done({ error: { code: 'LOCAL_STORE_SERVER_FAILED', message: text.slice(0, end) } });
      }
    });
    child.once('exit', (code) => {
      if (said) return;
      void done({
        error: {
          code: 'LOCAL_STORE_SERVER_FAILED',
          message: `the store server for ${dataDir} exited (${String(code)}) before it was ready`,
        },
      });
    });
    child.once('error', (error) => {
      if (!said) void done({ error: { code: 'LOCAL_STORE_SERVER_FAILED', message: error.message } });
    });
  });
  // Not read until go: a dropped standby server's exit must not keep this process alive either.
  if (standby) child.unref();
  return {
    started,
    go: () => child.stdin?.write('go\n'),
    drop: () => {
      child.stdin?.destroy();
      child.stdout?.destroy();
    },
  };
}

/** Starts a server for `dataDir` in the background: a lease on it, or what it said instead. */
function startServer(dataDir: string): Promise<Started> {
  return spawnServer(dataDir).started;
}

export interface DataDirOptions {
  /** False: a directory that does not exist is LOCAL_DATA_NOT_FOUND instead of being created. */
  readonly create?: boolean;
}

/**
 * What `openEarly` found or started for a directory: a lease on its server, the line of a server it
 * started, or a standby server for a directory that did not exist.
 */
type Early =
  | { info: ServerInfo; lease: Socket }
  | { line: ReadyLine }
  | { standby: StartedServer }
  | undefined;

/** `openEarly`'s work by directory, until openDataDir takes it. */
const early = new Map<string, Promise<Early>>();

/**
 * Begins what openDataDir(`dataDir`) will do, for a command that will open that directory's stores
 * once it has loaded and checked its input: a lease on its server, or the start of one. Starting
 * the server is the longest part of a command that finds none, so it starts while the command loads.
 * For a directory that does not exist, the server starts on standby: it loads, and creates the
 * directory only when openDataDir lets it go, so a command that stops at an invalid input leaves
 * nothing behind. Whatever it finds waits for openDataDir; if that never comes (the command stopped),
 * the lease ends with the process, a server it started exits when idle, as always, and a standby
 * server exits at once.
 */
export function openEarly(dataDir: string): () => void {
  if (early.has(dataDir)) return () => {};
  const exists = existsSync(dataDir);
  const work = async (): Promise<Early> => {
    if (!exists) return { standby: spawnServer(dataDir, true) };
    const info = await readServerInfo(dataDir);
    const lease = info === undefined ? undefined : await leaseOn(info, dataDir);
    if (info !== undefined && lease !== undefined) return { info, lease };
    return await startServer(dataDir);
  };
  const begun = work().catch(() => undefined);
  early.set(dataDir, begun);
  // Not taken by the time the command ends (it stopped before opening): drop the lease, in a process
  // that goes on (tests, which run commands in-process).
  return () => {
    if (early.get(dataDir) !== begun) return;
    early.delete(dataDir);
    void begun.then((found) => {
      if (found !== undefined && 'lease' in found) found.lease.destroy();
      if (found !== undefined && 'standby' in found) found.standby.drop();
    });
  };
}

/**
 * How long a command waits for the server that holds the directory's lock to be ready (or gone) before
 * saying that none answered: only a hung holder should ever take that long. It was 400 polls, about
 * 21 s, which a start could outlast on a slow machine with many commands starting at once (each
 * starts a server, and all of them load before the lock refuses all but one).
 */
const HOLDER_WAIT_MS = 120_000;

/** The stores of `dataDir`, shared with every other command on it (see above). */
export async function openDataDir(dataDir: string, options: DataDirOptions = {}): Promise<LocalServices> {
  const started = performance.now();
  const begun = early.get(dataDir);
  early.delete(dataDir);
  let found = await begun;
  if (found !== undefined && 'standby' in found) {
    const { standby } = found;
    if (options.create === false) {
      standby.drop();
      found = undefined;
    } else {
      try {
        await createDataDir(dataDir);
      } catch (error) {
        standby.drop();
        throw error;
      }
      standby.go();
      found = await standby.started;
    }
  }
  if (found !== undefined && 'lease' in found) return clientOf(found.info, found.lease, started);
  if (found !== undefined && 'error' in found.line) {
    throw new StepthreadError(found.line.error.code, found.line.error.message);
  }
  if (options.create !== false) await createDataDir(dataDir);
  // A server that said `locked` was refused by the lock's holder: a server starting (its file appears
  // once it is ready) or one exiting, idle (the lock goes with it). Another start is worth it only
  // once the holder is gone, and then at once.
  let startedOne = found !== undefined && 'line' in found && 'locked' in found.line;
  const deadline = performance.now() + HOLDER_WAIT_MS;
  for (let attempt = 0; performance.now() < deadline; attempt += 1) {
    const info = await readServerInfo(dataDir);
    if (info !== undefined) {
      const lease = await leaseOn(info, dataDir);
      if (lease !== undefined) return clientOf(info, lease, started);
    }
    if (!startedOne || (await lockHolder(dataDir)) === undefined) {
      startedOne = true;
      const outcome = await startServer(dataDir);
      if ('lease' in outcome) return clientOf(outcome.info, outcome.lease, started);
      if ('error' in outcome.line)
        throw new StepthreadError(outcome.line.error.code, outcome.line.error.message);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(5 + attempt * 2, 50)));
  }
  throw new StepthreadError(
    'LOCAL_STORE_SERVER_FAILED',
    `no store server answered for ${dataDir}; if no stepthread process is using it, remove ${join(dataDir, 'stepthread.lock')} and try again`,
  );
}

/** Makes `dataDir` (and its parents) when absent; a failure is the coded error that names it. */
async function createDataDir(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true });
  } catch (error) {
    const coded = dataDirError(error, dataDir);
    throw new StepthreadError(coded.code, coded.message);
  }
}

function clientOf(info: ServerInfo, lease: Socket, started: number): LocalServices {
  const target: EmbeddedTarget = {
    kind: 'embedded',
    dynamoEndpoint: info.dynamoEndpoint,
    s3Endpoint: info.s3Endpoint,
  };
  let closed = false;
  return {
    target,
    names: info.names,
    startupMs: performance.now() - started,
    close: async () => {
      if (closed) return;
      closed = true;
      lease.destroy();
      releaseAwsClients(target);
    },
  };
}
