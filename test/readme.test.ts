/**
 * Keeps the README true: every `npm run stepthread -- …` command it shows runs, transcripts shown
 * after `$ ` produce exactly the printed output, and the inline workflow is the example file.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../cli/io.ts';
import { main } from '../cli/main.ts';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));

const dataDir = mkdtempSync(join(tmpdir(), 'stepthread-readme-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Splits a shell command line into words, honouring single and double quotes (all the README uses). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

async function stepthread(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const io: CliIo = {
    env: { ...process.env, STEPTHREAD_DATA_DIR: dataDir },
    cwd: root,
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      out += text;
    },
    readFile: (path) => readFile(join(root, path), 'utf8'),
  };
  const code = await main(['node', 'stepthread', ...args], io);
  return { code, out };
}

const commandPrefix = 'npm run stepthread -- ';

describe('README', () => {
  const commands = blocks
    .filter((b) => b.lang === 'sh')
    .flatMap((b) => b.body.split('\n'))
    .filter((line) => line.startsWith(commandPrefix))
    .map((line) => line.slice(commandPrefix.length).split(/\s+#/)[0]!.trim());
  const runs = commands.filter((command) => command.startsWith('run '));

  it('shows at least one stepthread command', () => {
    expect(commands.length).toBeGreaterThan(0);
  });

  it('runs every example it shows', () => {
    expect(runs.length).toBeGreaterThanOrEqual(3);
  });

  it.each(commands)('`stepthread %s` succeeds', async (command) => {
    const { code, out } = await stepthread(shellWords(command));
    expect(out).toContain('COMPLETED');
    expect(code).toBe(0);
  });

  const transcripts = blocks
    .filter((b) => b.lang === 'text' && b.body.startsWith(`$ ${commandPrefix}`))
    .map((b) => {
      const [first, ...rest] = b.body.split('\n');
      return { args: shellWords(first!.slice(2 + commandPrefix.length)), expected: rest.join('\n') };
    });

  it.each(transcripts)('transcript of `stepthread $args` matches', async ({ args, expected }) => {
    const { out } = await stepthread(args);
    expect(out).toBe(expected);
  });

  it('inlines examples/route-loop.json exactly', () => {
    const inline = blocks.find((b) => b.lang === 'json' && b.body.includes('"id": "route-loop"'));
    const file = JSON.parse(readFileSync(join(root, 'examples/route-loop.json'), 'utf8'));
    expect(JSON.parse(inline!.body)).toEqual(file);
  });
});
