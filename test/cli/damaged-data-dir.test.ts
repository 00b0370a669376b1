/**
 * A damaged data directory (issue 31, items 1–2), as a table of damage × command: every cell is a
 * coded error or the right answer, and no cell removes or changes anything stored there. Before:
 * without `dynamodb/CURRENT`, `runs` said "no runs" and LevelDB deleted the table files; without
 * `dynamodb/`, "no runs"; garbage in a table file killed the store server at each command ("socket
 * hang up"); a malformed `stepthread.server.json` failed every command with Node's "port" argument
 * error; a lock naming a live process without its stamp gave 120 s of silence, then
 * LOCAL_STORE_SERVER_FAILED.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { BIN, envWithoutTarget } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLES = join(ROOT, 'examples');
const EXAMPLE = join(EXAMPLES, 'route-loop.json');

let dir: string;
let prepared: string;
let executionId: string;
const idleBefore = process.env.STEPTHREAD_STORE_IDLE_MS;

/** Until the directory's store server has left (its lock goes with it). */
async function serverGone(dataDir: string): Promise<void> {
  for (let waited = 0; existsSync(join(dataDir, 'stepthread.lock')); waited += 20) {
    if (waited > 20_000) throw new Error(`the store server of ${dataDir} did not leave`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  // Servers this file starts leave as soon as their command has.
  process.env.STEPTHREAD_STORE_IDLE_MS = '0';
  dir = await mkdtemp(join(tmpdir(), 'stepthread-damaged-'));
  prepared = join(dir, 'prepared');
  const ran = await runCli(['run', EXAMPLE, '--json', '--data-dir', prepared], { cwd: dir });
  expect(ran.code).toBe(0);
  executionId = (JSON.parse(ran.stdout) as { executionId: string }).executionId;
  await serverGone(prepared);
  // Opened again, LevelDB moves its log into a table file (.ldb): there is one to damage.
  expect((await runCli(['runs', '--data-dir', prepared], { cwd: dir })).code).toBe(0);
  await serverGone(prepared);
  expect((await readdir(join(prepared, 'dynamodb'))).some((name) => name.endsWith('.ldb'))).toBe(true);
}, 60_000);

afterAll(async () => {
  if (idleBefore === undefined) delete process.env.STEPTHREAD_STORE_IDLE_MS;
  else process.env.STEPTHREAD_STORE_IDLE_MS = idleBefore;
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

/** Every stored file under `dataDir` with a hash of its bytes; LevelDB's info log and lock aside. */
async function storedFiles(dataDir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const entries = await readdir(dataDir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || /^(LOG|LOG\.old|LOCK)$|^stepthread\./.test(entry.name)) continue;
    const path = join(entry.parentPath, entry.name);
    // A file renamed into place meanwhile (a table file's temporary copy) was never stored data.
    const bytes = await readFile(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (bytes === undefined) continue;
    files[relative(dataDir, path)] = createHash('sha256').update(bytes).digest('hex');
  }
  return files;
}

interface Damage {
  readonly name: string;
  damage(dataDir: string): Promise<void>;
  /** The coded error every command gives; undefined: every command answers as on the intact directory. */
  readonly code?: string;
  /** What the error says, beyond its code. */
  readonly says?: RegExp;
}

const DAMAGES: readonly Damage[] = [
  {
    name: 'dynamodb/CURRENT missing',
    damage: (dataDir) => unlink(join(dataDir, 'dynamodb', 'CURRENT')),
    code: 'LOCAL_DATA_DAMAGED',
    says: /dynamodb is damaged: its CURRENT file is missing .*restore .* from a backup, or move it aside/,
  },
  {
    name: 'dynamodb/ removed',
    damage: (dataDir) => rm(join(dataDir, 'dynamodb'), { recursive: true }),
    code: 'LOCAL_DATA_DAMAGED',
    says: /dynamodb is gone while .*s3 holds stored objects.*restore .* from a backup, or move it aside/,
  },
  {
    name: 'garbage in a table file',
    damage: async (dataDir) => {
      const dynamoDir = join(dataDir, 'dynamodb');
      const table = (await readdir(dynamoDir)).find((name) => name.endsWith('.ldb'))!;
      const bytes = await readFile(join(dynamoDir, table));
      bytes.fill(0x67, 0, Math.min(350, bytes.length));
      await writeFile(join(dynamoDir, table), bytes);
    },
    code: 'LOCAL_DATA_CORRUPT',
    says: /dynamodb is damaged and cannot be read \(Corruption: .*restore .* from a backup, or move it aside/,
  },
  {
    name: 'a malformed stepthread.server.json',
    // A live pid (this test's), and nothing else a server writes.
    damage: (dataDir) =>
      writeFile(join(dataDir, 'stepthread.server.json'), JSON.stringify({ pid: process.pid })),
  },
  {
    name: 'a lock naming a live process without its stamp',
    damage: (dataDir) => writeFile(join(dataDir, 'stepthread.lock'), String(process.pid)),
  },
];

/** What a command gave: its exit code and output. */
interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `dev` until it serves (then its /api/executions answer as stdout, and it is stopped) or exits. */
async function devOutcome(dataDir: string): Promise<Outcome> {
  const child: ChildProcess = spawn(
    process.execPath,
    [BIN, 'dev', EXAMPLES, '--port', '0', '--data-dir', dataDir],
    { cwd: dir, env: envWithoutTarget() },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  let code: number | null | undefined;
  void exited.then((value) => {
    code = value;
  });
  try {
    for (;;) {
      const url = /console at (http:\S+)/.exec(stdout)?.[1];
      if (url !== undefined) {
        const response = await fetch(`${url}/api/executions`);
        return { code: response.status === 200 ? 0 : response.status, stdout: await response.text(), stderr };
      }
      if (code !== undefined) return { code, stdout, stderr };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    child.kill('SIGINT');
    await exited;
  }
}

/** The commands, each with what it gives on the intact directory. */
const COMMANDS: readonly {
  readonly name: string;
  run(dataDir: string): Promise<Outcome>;
  answers(outcome: Outcome): void;
}[] = [
  {
    name: 'runs',
    run: (dataDir) => runCli(['runs', '--data-dir', dataDir], { cwd: dir }),
    answers: (outcome) => {
      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toContain(executionId);
    },
  },
  {
    name: 'inspect',
    run: (dataDir) => runCli(['inspect', executionId, '--data-dir', dataDir], { cwd: dir }),
    answers: (outcome) => {
      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toContain(`execution ${executionId}  COMPLETED`);
    },
  },
  {
    name: 'run',
    run: (dataDir) => runCli(['run', EXAMPLE, '--data-dir', dataDir], { cwd: dir }),
    answers: (outcome) => {
      expect(outcome.code).toBe(0);
      expect(outcome.stderr).not.toMatch(/[A-Z_]{6,}: /);
    },
  },
  {
    name: 'resume',
    run: (dataDir) => runCli(['resume', executionId, '--data-dir', dataDir], { cwd: dir }),
    // The run completed: read from the store, it is not resumable.
    answers: (outcome) => {
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain(`RUN_NOT_RESUMABLE: execution ${executionId} cannot be resumed`);
    },
  },
  {
    name: 'dev',
    run: devOutcome,
    answers: (outcome) => {
      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toContain(executionId);
    },
  },
];

let cell = 0;

describe.each(DAMAGES)('a data directory with $name', (damage) => {
  it.each(COMMANDS.map((command) => [command.name, command] as const))(
    '%s gives a coded error or the right answer, and removes and changes nothing',
    async (_name, command) => {
      cell += 1;
      const dataDir = join(dir, `cell-${cell}`);
      await cp(prepared, dataDir, { recursive: true });
      await damage.damage(dataDir);
      const before = await storedFiles(dataDir);
      const outcome = await command.run(dataDir);
      if (damage.code === undefined) {
        command.answers(outcome);
        // The database changes as it is used; the stored objects are only added to.
        const after = await storedFiles(dataDir);
        for (const [path, hash] of Object.entries(before)) {
          if (path.startsWith('s3')) expect(after[path], path).toBe(hash);
        }
      } else {
        expect(outcome.code).toBe(1);
        expect(outcome.stderr).toContain(`${damage.code}: `);
        expect(outcome.stderr).toContain(dataDir);
        expect(outcome.stderr).toMatch(damage.says!);
        expect(outcome.stderr).not.toMatch(/\n\s+at /);
        expect(outcome.stdout).toBe('');
        await serverGone(dataDir);
        expect(await storedFiles(dataDir)).toEqual(before);
      }
    },
    30_000,
  );
});

describe('a table file damaged with its size and time as the last server left them (bit rot)', () => {
  it('fails the command that reads it, then is LOCAL_DATA_CORRUPT, not the same failure at every start', async () => {
    const dataDir = join(dir, 'bit-rot');
    await cp(prepared, dataDir, { recursive: true, preserveTimestamps: true });
    const dynamoDir = join(dataDir, 'dynamodb');
    const table = (await readdir(dynamoDir)).find((name) => name.endsWith('.ldb'))!;
    const { mtime } = await stat(join(dynamoDir, table));
    const bytes = await readFile(join(dynamoDir, table));
    await writeFile(join(dynamoDir, table), bytes.fill(0x67, 0, Math.min(350, bytes.length)));
    await utimes(join(dynamoDir, table), mtime, mtime);
    // The server took the table as left and failed on reading it, while serving.
    // (It left its lock behind, as a killed server does: the next command takes it over.)
    const first = await runCli(['runs', '--data-dir', dataDir], { cwd: dir });
    expect(first.code).toBe(1);
    expect(first.stderr).toContain(
      `LOCAL_STORE_SERVER_FAILED: the store server for ${dataDir} stopped while this command used it`,
    );
    const again = await runCli(['runs', '--data-dir', dataDir], { cwd: dir });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`LOCAL_DATA_CORRUPT: the database in ${dynamoDir} is damaged`);
    expect((await readdir(dynamoDir)).filter((name) => name.endsWith('.ldb'))).toEqual([table]);
  }, 60_000);
});
