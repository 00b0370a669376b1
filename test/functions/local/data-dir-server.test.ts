/**
 * A data directory's store server under races with its clients (functions/local/data-dir-server.ts,
 * data-dir-daemon.ts): whatever the machine's speed, a command is served by the server it started, does
 * not wait on a lock holder that is gone, and is not held up by what a killed server left behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holderTextOf } from '../../../functions/local/process-liveness.ts';
import { cliProcess } from '../../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const ENTRY = join(ROOT, 'functions', 'local', 'data-dir-server-main.ts');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-server-races-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A store server for `dataDir` started as a command starts one: stdin a pipe, held by the test. */
function startServer(dataDir: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, dataDir], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ready = new Promise<{ controlPort: number; pid: number }>((resolve, reject) => {
    let text = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) resolve(JSON.parse(text.slice(0, text.indexOf('\n'))).ready);
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before it was ready: ${text}`)));
  });
  return { child, ready, exited };
}

/** What the control port says to a new connection ('' when it refuses or closes it). */
function greeting(port: number): Promise<{ text: string; socket: ReturnType<typeof connect> }> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('error', () => resolve({ text: '', socket }));
    socket.once('close', () => resolve({ text: '', socket }));
    socket.once('data', (data) => resolve({ text: String(data), socket }));
  });
}

/** Pids of store server processes for `dataDir` (Linux's /proc). */
function serverProcesses(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.some((arg) => arg.includes('data-dir-server-main')) && args.includes(dataDir)) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Whether `pid` is gone or a zombie: dead, its sockets closed (Linux's /proc). */
function dead(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2400; i += 1) {
    if (await condition()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A process that only lives until killed, to stand for a lock's holder. */
function liveProcess(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
}

/** A server file as a server writes it, naming process `pid` and its control port. */
function serverFile(pid: number | undefined, controlPort: number): string {
  return JSON.stringify({
    pid,
    controlPort,
    dynamoEndpoint: 'http://127.0.0.1:1',
    s3Endpoint: 'http://127.0.0.1:2',
    names: { tableName: 'stepthread', bucketName: 'stepthread' },
  });
}

/** A loopback port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the store server and the command that started it', () => {
  it('stays until its starter has connected, however long that takes, even with no idle time', async () => {
    const dataDir = join(dir, 'starter');
    await mkdir(dataDir);
    const server = startServer(dataDir, { STEPTHREAD_STORE_IDLE_MS: '0' });
    const { controlPort } = await server.ready;
    // A slow starter: a busy machine, or one that paused it.
    await sleep(500);
    const lease = await greeting(controlPort);
    expect(lease.text).toBe('ok\n');
    // The starter took its lease and let go of stdin: the server now leaves with the last lease.
    server.child.stdin!.end();
    lease.socket.destroy();
    expect(await server.exited).toBe(0);
    expect(await readdir(dataDir)).toEqual(['dynamodb', 's3']);
  }, 60_000);

  it('leaves when idle once its starter is gone without connecting', async () => {
    const dataDir = join(dir, 'starter-gone');
    await mkdir(dataDir);
    const server = startServer(dataDir, { STEPTHREAD_STORE_IDLE_MS: '0' });
    await server.ready;
    server.child.stdin!.destroy();
    expect(await server.exited).toBe(0);
    expect(await readdir(dataDir)).toEqual(['dynamodb', 's3']);
  }, 60_000);
});

describe('a server refused by the lock', () => {
  const PRELOAD = join(ROOT, 'test', 'support', 'module-loads.cjs');
  /** The server's ready line and which of the stores' packages it loaded, once it has exited. */
  async function serveTraced(
    dataDir: string,
  ): Promise<{ line: string; loads: string[]; code: number | null }> {
    const child = spawn(process.execPath, ['--require', PRELOAD, '--import', 'tsx', ENTRY, dataDir], {
      cwd: ROOT,
      env: { ...process.env, TRACE_PACKAGES: 'dynalite,s3rver', STEPTHREAD_STORE_IDLE_MS: '0' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      // Ready: let it go (it leaves at once, its idle time being 0).
      if (stdout.includes('\n')) child.stdin!.end();
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const traced = /module-loads: (.*)/.exec(stderr);
    if (!traced) throw new Error(`no module-loads line from the server: ${stderr}`);
    return { line: stdout.trim(), loads: JSON.parse(traced[1]!) as string[], code };
  }

  it('loads neither dynalite nor s3rver: only the lock holder pays for them', async () => {
    const dataDir = join(dir, 'lock-first');
    await mkdir(dataDir);
    // The first server takes the lock and loads the stores (the tracing sees them).
    const first = startServer(dataDir, {});
    await first.ready;
    const refused = await serveTraced(dataDir);
    expect(refused.line).toBe('{"locked":true}');
    expect(refused.code).toBe(1);
    expect(refused.loads).toEqual([]);
    first.child.stdin!.end();
    first.child.kill();
    await first.exited;
    // Once the lock is free, a server loads both.
    const served = await serveTraced(dataDir);
    expect(served.line).toMatch(/^\{"ready"/);
    expect(served.loads).toEqual(['dynalite', 's3rver']);
  }, 60_000);
});

describe('a command on a directory whose server is leaving or was killed', () => {
  it('starts a server as soon as the lock holder is gone, without waiting out a polling round', async () => {
    const dataDir = join(dir, 'leaving');
    await mkdir(dataDir);
    // A server on its way out: it holds the lock, and its file names a control port that refuses.
    const holder = liveProcess();
    await writeFile(join(dataDir, 'stepthread.lock'), holderTextOf(holder.pid!));
    await writeFile(join(dataDir, 'stepthread.server.json'), serverFile(holder.pid, await closedPort()));
    const command = cliProcess(['runs', '--json', '--data-dir', dataDir], { cwd: dir });
    // The command's first server finds the lock held, says so and exits.
    await until(() => serverProcesses(dataDir).length === 1, 'the first server');
    await until(() => serverProcesses(dataDir).length === 0, 'the first server to be refused');
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const gone = performance.now();
    await until(() => serverProcesses(dataDir).length === 1, 'the next server');
    // It polls the holder (every 50 ms at most); before, it started the next server only at its
    // 50th poll, about 2 s later.
    expect(performance.now() - gone).toBeLessThan(1000);
    const result = await command;
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
  }, 60_000);

  it('waits for a lock holder that takes 25 s to be done, instead of giving up after 400 polls', async () => {
    const dataDir = join(dir, 'slow-holder');
    await mkdir(dataDir);
    // A server starting very slowly: it holds the lock, and has no file yet.
    const holder = liveProcess();
    await writeFile(join(dataDir, 'stepthread.lock'), holderTextOf(holder.pid!));
    const command = cliProcess(['runs', '--json', '--data-dir', dataDir], { cwd: dir });
    await sleep(25_000);
    holder.kill('SIGKILL');
    const result = await command;
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
  }, 90_000);

  it('takes a killed server that is not yet reaped (a zombie) for dead, and does not wait on its port', async () => {
    const dataDir = join(dir, 'zombie');
    await mkdir(dataDir);
    // A child that exits at once under a parent that never reaps it (sleep exec'd in place of sh).
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const zombie = Number(
      await new Promise<string>((resolve) => parent.stdout!.once('data', (data) => resolve(String(data)))),
    );
    await until(() => dead(zombie), 'the zombie');
    // What the killed server left: its lock, and its file naming a control port that another program
    // has since taken, one that accepts connections and never says anything.
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    await writeFile(join(dataDir, 'stepthread.lock'), String(zombie));
    await writeFile(
      join(dataDir, 'stepthread.server.json'),
      serverFile(zombie, (silent.address() as { port: number }).port),
    );
    try {
      const result = await cliProcess(['runs', '--json', '--data-dir', dataDir], { cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual([]);
    } finally {
      silent.close();
      parent.kill();
    }
  }, 60_000);

  it('says which server hangs when a live one takes the connection and never answers', async () => {
    const dataDir = join(dir, 'hung');
    await mkdir(dataDir);
    // A server that runs but is hung (stopped, say): its process lives, its port accepts, says nothing.
    const holder = liveProcess();
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    await writeFile(join(dataDir, 'stepthread.lock'), holderTextOf(holder.pid!));
    await writeFile(join(dataDir, 'stepthread.server.json'), serverFile(holder.pid, port));
    try {
      const result = await cliProcess(['runs', '--json', '--data-dir', dataDir], {
        cwd: dir,
        env: { STEPTHREAD_STORE_ANSWER_MS: '300' },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `LOCAL_STORE_SERVER_FAILED: the store server for ${dataDir} (process ${holder.pid}) runs but does not answer on 127.0.0.1:${port}: stop it (kill ${holder.pid}) and run the command again`,
      );
    } finally {
      silent.close();
      holder.kill('SIGKILL');
    }
  }, 30_000);

  it('works at once after its server was killed (SIGKILL), its lock and file left behind', async () => {
    const dataDir = join(dir, 'killed');
    await mkdir(dataDir);
    // A server that would stay ten minutes, killed.
    const first = await cliProcess(['runs', '--json', '--data-dir', dataDir], {
      cwd: dir,
      env: { STEPTHREAD_STORE_IDLE_MS: '600000' },
    });
    expect(first.code, first.stderr).toBe(0);
    const killed = JSON.parse(await readFile(join(dataDir, 'stepthread.server.json'), 'utf8')) as {
      pid: number;
    };
    process.kill(killed.pid, 'SIGKILL');
    await until(() => dead(killed.pid), 'the server to die');
    expect((await readdir(dataDir)).sort()).toEqual([
      'dynamodb',
      's3',
      'stepthread.lock',
      'stepthread.server.json',
    ]);
    const result = await cliProcess(['runs', '--json', '--data-dir', dataDir], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
  }, 60_000);
});
