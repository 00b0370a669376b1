/**
 * `stepthread --version`, `-v` and `stepthread version` print the package's version (package.json),
 * and `--help` lists them. The installed package prints the same: test/package/install.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

describe('stepthread --version', () => {
  it.each([['--version'], ['-v'], ['version']])('%s prints the package version', async (arg) => {
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    expect(await runCli([arg], {})).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('is listed by --help, as an option and a command', async () => {
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}-v, --version +print the stepthread version$/m);
    expect(help.stdout).toMatch(/^ {2}version +print the stepthread version$/m);
  });
});
