/**
 * A `--data-dir` that cannot be a data directory gives every command that uses one the coded
 * LOCAL_DATA_UNWRITABLE naming it, without a stack trace, and creates nothing: /proc/self said
 * LOCAL_DATA_GONE ("removed while in use"), a symlink loop LOCAL_DATA_CORRUPT for `run` and
 * LOCAL_DATA_NOT_FOUND for the commands that read, a path through a file LOCAL_DATA_NOT_FOUND, and an
 * empty `--data-dir` made the working directory a data directory.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'route-loop.json');

let dir: string;
let cwd: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-data-dir-paths-'));
  cwd = join(dir, 'cwd');
  await mkdir(cwd);
  await writeFile(join(dir, 'a-file'), 'not a directory');
  await symlink(join(dir, 'loop'), join(dir, 'loop'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every command that opens the local data directory, with arguments that reach the opening. */
const COMMANDS: readonly (readonly string[])[] = [
  ['run', EXAMPLE],
  ['resume', 'no-such-execution'],
  ['runs'],
  ['inspect', 'no-such-execution'],
  ['pending'],
  ['copy', 't-no-such-thread'],
  ['respond', 't-no-such-thread/ask', '--approve'],
  ['dev', join(import.meta.dirname, '..', '..', 'examples'), '--port', '0'],
];

const PATHS: readonly [string, () => string, RegExp][] = [
  ...(process.platform === 'linux'
    ? [['/proc/self', () => '/proc/self', /cannot hold files/] as [string, () => string, RegExp]]
    : []),
  ['a file', () => join(dir, 'a-file'), /is not a directory/],
  ['/dev/null', () => '/dev/null', /is not a directory/],
  ['a path through a file', () => join(dir, 'a-file', 'sub'), /is not a directory/],
  ['a symlink loop', () => join(dir, 'loop'), /cannot be used as a directory \(ELOOP/],
  ['a name too long', () => join(dir, 'x'.repeat(300)), /cannot be used as a directory \(ENAMETOOLONG/],
];

describe.each(PATHS)('--data-dir %s', (_name, path, reason) => {
  it.each(COMMANDS.map((args) => [args[0]!, args] as const))(
    '%s is LOCAL_DATA_UNWRITABLE naming the path, without a stack trace',
    async (_command, args) => {
      const dataDir = path();
      const result = await runCli([...args, '--data-dir', dataDir], { cwd });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`LOCAL_DATA_UNWRITABLE: local data directory ${dataDir} `);
      expect(result.stderr).toMatch(reason);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout).toBe('');
    },
    30_000,
  );
});

describe('an empty --data-dir', () => {
  it.each(COMMANDS.map((args) => [args[0]!, args] as const))(
    '%s is refused, coded, and leaves the working directory as it was',
    async (_command, args) => {
      const result = await runCli([...args, '--data-dir='], { cwd });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('LOCAL_DATA_UNWRITABLE: --data-dir is empty');
      expect(await readdir(cwd)).toEqual([]);
    },
    30_000,
  );

  it('an empty STEPTHREAD_DATA_DIR counts as unset: ./.stepthread', async () => {
    const result = await runCli(['runs'], { cwd, env: { STEPTHREAD_DATA_DIR: '' } });
    expect(result.stderr).toContain(
      `LOCAL_DATA_NOT_FOUND: no local data directory at ${join(cwd, '.stepthread')}`,
    );
    expect(existsSync(join(cwd, 'dynamodb'))).toBe(false);
  });
});
