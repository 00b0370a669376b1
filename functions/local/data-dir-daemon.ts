/**
 * The store server's half of data-dir-server.ts: the background process that serves one data
 * directory's stores (dynalite, s3rver) until no command has used them for a moment. Only that process
 * loads this module (data-dir-server-main.ts, or built: data-dir-server-cached.ts); a command, the
 * client, loads data-dir-server.ts alone.
 */
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { StepthreadError } from '../../engine/errors.ts';
import { forgetTables } from './data-dir-damage.ts';
import { dataDirError } from './data-dir-errors.ts';
import { type ReadyLine, readServerInfo, SERVER_FILE, type ServerInfo } from './data-dir-info.ts';
import { acquireDataDirLock } from './data-dir-lock.ts';
// Types only: the stores (dynalite, s3rver) load once this process holds the directory's lock.
import type { LocalServices } from './services.ts';

/** How long the server stays after its last client left (ms); `$STEPTHREAD_STORE_IDLE_MS`. */
const DEFAULT_IDLE_MS = 1500;

/** How the server was started: `node <entry> <dataDir> [--standby]`. */
export interface ServeOptions {
  /** How long to stay after the last client left; `$STEPTHREAD_STORE_IDLE_MS`, else 1.5 s. */
  readonly idleMs?: number;
  /**
   * Loaded, but touching nothing until a line comes on stdin; stdin closed first: exit. A command
   * starts a server this way for a directory that may not exist yet, before it knows whether it will
   * open it (data-dir-server.ts, openEarly).
   */
  readonly standby?: boolean;
}

/**
 * The background server's main: serves `dataDir` until idle. Says `{"ready"}`, `{"locked"}` or
 * `{"error"}` on stdout, one line, then nothing more (its starter stops reading).
 */
export async function serveDataDir(dataDir: string, options: ServeOptions = {}): Promise<void> {
  const idleMs = options.idleMs ?? idleMsOf(process.env);
  // A standby server is started ahead so that its loading overlaps the command's own: it loads the
  // stores while it waits. Any other loads them only once it holds the lock, so that of many servers
  // started at one moment for one directory, those refused do not pay for loading them.
  const loading = options.standby ? loadServices() : undefined;
  if (options.standby && !(await goAhead())) process.exit(0);
  let ready = false;
  const say = (line: ReadyLine) => {
    process.stdout.on('error', () => {});
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  // dynalite reports a LevelDB it cannot open as an uncaught error: the starter gets it, coded.
  // Once serving, it is a read that failed (a damaged table): the next server reads the whole
  // database before it serves, and refuses it coded, instead of failing the same way at each start.
  process.on('uncaughtException', (error) => {
    if (!ready) say({ error: dataDirError(error, dataDir) });
    else forgetTables(dataDir);
    process.exit(1);
  });
  let services: LocalServices;
  try {
    await mkdir(dataDir, { recursive: true });
    const heldLock = await acquireDataDirLock(dataDir);
    const { startLocalServices } = await (loading ?? loadServices());
    services = await startLocalServices({ dataDir, serveInProcess: false, heldLock });
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'LOCAL_DATA_LOCKED') say({ locked: true });
    else say({ error: dataDirError(error, dataDir) });
    process.exit(1);
  }
  const leases = new Set<Socket>();
  // The command that started this server holds a lease of its own until it has taken one on the
  // control port (it then closes stdin): else, with a short idle time or a slow machine, the server
  // could leave between its ready line and its starter's connection.
  let starterHolds = true;
  const idle = () => leases.size === 0 && !starterHolds;
  let timer: NodeJS.Timeout | undefined;
  const serverFile = join(dataDir, SERVER_FILE);
  const shutdown = async () => {
    if (!idle()) return;
    control.close();
    const current = await readServerInfo(dataDir);
    if (current?.pid === process.pid) await rm(serverFile, { force: true });
    await services.close();
    process.exit(0);
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void shutdown(), idleMs);
  };
  const control = createServer((socket) => {
    leases.add(socket);
    clearTimeout(timer);
    socket.on('error', () => {});
    socket.on('close', () => {
      leases.delete(socket);
      if (idle()) arm();
    });
    socket.write('ok\n');
  });
  const controlPort = await new Promise<number>((resolve, reject) => {
    control.once('error', reject);
    control.listen(0, '127.0.0.1', () => resolve((control.address() as { port: number }).port));
  });
  const info: ServerInfo = {
    pid: process.pid,
    dynamoEndpoint: services.target.dynamoEndpoint,
    s3Endpoint: services.target.s3Endpoint,
    controlPort,
    names: services.names,
  };
  const temporary = `${serverFile}.${process.pid}`;
  await writeFile(temporary, JSON.stringify(info));
  await rename(temporary, serverFile);
  ready = true;
  say({ ready: info });
  void stdinClosed().then(() => {
    starterHolds = false;
    if (idle()) arm();
  });
}

function loadServices(): Promise<typeof import('./services.ts')> {
  return import('./services.ts');
}

function idleMsOf(env: NodeJS.ProcessEnv): number {
  const value = Number(env.STEPTHREAD_STORE_IDLE_MS);
  return Number.isFinite(value) && value >= 0 ? value : DEFAULT_IDLE_MS;
}

/** True once a line arrives on stdin; false when it closes first (the command never opened the stores). */
function goAhead(): Promise<boolean> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: string) => {
      text += chunk;
      if (!text.includes('\n')) return;
      // The rest of stdin is the starter's lease (stdinClosed).
      process.stdin.off('data', onData);
      process.stdin.pause();
      resolve(true);
    };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', onData);
    process.stdin.once('end', () => resolve(false));
    process.stdin.once('error', () => resolve(false));
  });
}

/**
 * Resolves once stdin ends: the starter's lease ended (it took its own, or it is gone). A server
 * started with stdin ignored (/dev/null) reads its end at once; one on a terminal has no starter.
 */
function stdinClosed(): Promise<void> {
  if (process.stdin.isTTY || process.stdin.readableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    process.stdin.once('error', resolve);
    // Read to the end, dropping anything written.
    process.stdin.resume();
  });
}
