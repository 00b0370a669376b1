/**
 * Keeps the README and docs/ true: every `npm run stepthread -- …` command they show runs, every
 * transcript shown after `$ ` is what the command prints, every workflow they inline is the example
 * file, every JSON snippet parses and fits the schema, every `npm run <script>` exists, and every
 * relative link resolves, anchors included.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hookSchema, NODE_TYPES, nodeSchema, workflowSchema } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { BIN, envWithoutTarget } from './support/cli-process.ts';

const root = join(import.meta.dirname, '..');
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => `docs/${file}`),
];
const textOf = (path: string) => readFileSync(join(root, path), 'utf8');

interface Block {
  lang: string;
  body: string;
}
function blocksOf(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

const dataDir = mkdtempSync(join(tmpdir(), 'stepthread-readme-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Splits a shell command line into words, honouring single and double quotes (all the docs use). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** What `npm run stepthread -- …` sets, as the documents show commands: the CLI prints its hints in that form. */
const AS_NPM_RUN = { npm_lifecycle_event: 'stepthread', npm_command: 'run' };

/**
 * The command as a user runs it: bin/stepthread.js in a process of its own (a run that stops at a
 * question exits, as only a real process does), stdout and stderr in one stream, in the order printed.
 */
function stepthread(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn('/bin/sh', ['-c', 'exec "$0" "$@" 2>&1', process.execPath, BIN, ...args], {
    cwd: root,
    env: { ...envWithoutTarget(), ...AS_NPM_RUN, STEPTHREAD_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/** `stepthread dev …` as the user starts it, on any free port, until it serves; then Ctrl-C. */
async function devServes(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [BIN, ...args, '--port', '0', '--data-dir', dataDir], {
    cwd: root,
    env: { ...envWithoutTarget(), ...AS_NPM_RUN },
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text;
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    out += text;
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  try {
    for (
      let waited = 0;
      !/console at http/.test(out) && child.exitCode === null && waited < 30_000;
      waited += 50
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    child.kill('SIGINT');
  }
  return { code: await exited, out };
}

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
const THREAD_ID = /\bt-[0-9a-f]{32}\b/g;

/**
 * What differs from run to run: ids, times, durations, and the AWS estimate (it bills a step that
 * took over 100 ms by its duration).
 */
function normalise(text: string): string {
  return text
    .replace(UUID, '<execution>')
    .replace(THREAD_ID, '<thread>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/\b\d+ ms\b/g, '<n> ms')
    .replace(/aws ≈ \$\d+\.\d+/g, 'aws ≈ $<n>');
}

/** A transcript matches its output line by line, ids and times aside; a line `…` stands for any lines. */
function transcriptMatches(expected: string, actual: string): boolean {
  const literal = (line: string) => line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = normalise(expected)
    .split('\n')
    .map((line) => (line.trim() === '…' ? '(?:[^\\n]*\\n)*?' : `${literal(line)}\\n`))
    .join('')
    .replace(/\\n$/, '');
  return new RegExp(`^${pattern}$`).test(normalise(actual));
}

const commandPrefix = 'npm run stepthread -- ';

type Step = { kind: 'command'; line: string } | { kind: 'transcript'; line: string; expected: string };

/** The stepthread commands a document shows, in its order: `sh` lines and `$ ` transcripts. */
function stepsOf(markdown: string): Step[] {
  return blocksOf(markdown).flatMap((block): Step[] => {
    if (block.lang === 'sh') {
      return block.body
        .split('\n')
        .filter((line) => line.startsWith(commandPrefix))
        .map((line) => ({
          kind: 'command',
          line: line.slice(commandPrefix.length).split(/\s+#/)[0]!.trim(),
        }));
    }
    if (block.lang === 'text' && block.body.startsWith(`$ ${commandPrefix}`)) {
      const [first, ...rest] = block.body.split('\n');
      return [
        { kind: 'transcript', line: first!.slice(2 + commandPrefix.length), expected: rest.join('\n') },
      ];
    }
    return [];
  });
}

describe('the documents', () => {
  it('are the README and docs/*.md', () => {
    expect(documents).toContain('docs/cli.md');
    expect(documents).toContain('docs/workflow-file.md');
  });

  it('match a transcript line by line, ids and times aside, `…` for any lines', () => {
    const shown =
      'started execution 3c75d5cf-599a-403b-9f78-ca14c9c493ed (thread t-ddfd5bdcd6abddb91205b14f25860dad)\n  ✓ start (21 ms)\n  …\nstatus    COMPLETED\n';
    const printed =
      'started execution 0b7c2f0e-5a7e-4a53-9a83-6f1f1b0e4b2d (thread t-1d0c6b3f6f9e4d2a8c5b7e9f0a1b2c3d)\n  ✓ start (3 ms)\n  → plan\n  ✓ plan (9 ms)\nstatus    COMPLETED\n';
    expect(transcriptMatches(shown, printed)).toBe(true);
    expect(transcriptMatches(shown, printed.replace('COMPLETED', 'FAILED'))).toBe(false);
    expect(transcriptMatches(shown, printed.replace('✓ start', '✓ begin'))).toBe(false);
    // The AWS estimate bills a step over 100 ms by its duration: it varies as durations do.
    const cost = 'cost      $0.000000: 245 tokens (184 in, 61 out) in 4 model calls, 1 tool call';
    expect(transcriptMatches(`${cost} · aws ≈ $0.000507\n`, `${cost} · aws ≈ $0.000508\n`)).toBe(true);
    expect(transcriptMatches(`${cost} · aws ≈ $0.000507\n`, `${cost}\n`)).toBe(false);
  });
});

describe.each(documents)('%s', (document) => {
  const markdown = textOf(document);
  const steps = stepsOf(markdown);
  // Ids a command prints, for the commands after it that show an id: `<executionId>` or an id of the
  // same shape stands for the execution the document ran last, `<threadId>` for its thread, and
  // `<copyId>` for the thread `copy` printed last, `<sourceId>` for the thread that copy was made of.
  const last: { execution?: string; thread?: string; copy?: string; source?: string } = {};
  const withIds = (line: string) => {
    const need = (id: string | undefined, what: string) => {
      if (id === undefined)
        throw new Error(`${document}: \`${line}\` names ${what} before any command printed one`);
      return id;
    };
    return line
      .replace(/<executionId>|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, () =>
        need(last.execution, 'an execution'),
      )
      .replace(/<threadId>|\bt-[0-9a-f]{32}\b/g, () => need(last.thread, 'a thread'))
      .replace(/<copyId>/g, () => need(last.copy, 'a copy'))
      .replace(/<sourceId>/g, () => need(last.source, "a copy's source"));
  };
  const remember = (args: string[], out: string) => {
    const thread = out.match(THREAD_ID)?.[0];
    if (args[0] === 'copy') {
      last.copy = thread;
      last.source = args[1];
    }
    if (args[0] !== 'run' && args[0] !== 'resume') return;
    last.execution = out.match(UUID)?.[0] ?? last.execution;
    last.thread = thread ?? last.thread;
  };

  if (steps.length > 0) {
    it.each(steps.map((step, i) => ({ ...step, i })))('`stepthread $line`', async (step) => {
      const args = shellWords(withIds(step.line));
      if (args[0] === 'dev') {
        const { code, out } = await devServes(args);
        expect(out).toMatch(/console at http:\/\/127\.0\.0\.1:\d+/);
        expect([0, 130]).toContain(code);
        return;
      }
      const { code, out } = await stepthread(args);
      remember(args, out);
      if (step.kind === 'transcript') {
        expect(
          transcriptMatches(step.expected, out),
          `${document} shows:\n${step.expected}\nprinted:\n${out}`,
        ).toBe(true);
        return;
      }
      expect(code, out).toBe(0);
      if (args[0] === 'run' || args[0] === 'resume') expect(out).toContain('COMPLETED');
    });
  }

  const scripts = Object.keys(
    (JSON.parse(textOf('package.json')) as { scripts: Record<string, string> }).scripts,
  );
  const npmRuns = blocksOf(markdown)
    .filter((block) => block.lang === 'sh')
    .flatMap((block) => [...block.body.matchAll(/^npm run ([\w:-]+)/gm)].map((m) => m[1]!));
  if (npmRuns.length > 0) {
    it.each([...new Set(npmRuns)])('`npm run %s` is a script of package.json', (script) => {
      expect(scripts).toContain(script);
    });
  }

  const json = blocksOf(markdown).filter((block) => block.lang === 'json');
  if (json.length > 0) {
    it('shows JSON that parses and fits the schema: whole workflows, nodes, and top-level fields', () => {
      for (const { body } of json) {
        // A snippet is a value, members of an object (`"tools": {…}`), or items of a list (`{…}, {…}`).
        const value = [body, `{${body}}`, `[${body}]`]
          .map((text) => {
            try {
              return { parsed: JSON.parse(text) as unknown };
            } catch {
              return undefined;
            }
          })
          .find((attempt) => attempt !== undefined);
        expect(value, body).toBeDefined();
        for (const item of Array.isArray(value!.parsed) ? value!.parsed : [value!.parsed]) {
          const object = item as Record<string, unknown>;
          if ('nodes' in object) {
            const result = validateWorkflow(object);
            expect(result.errors, body).toEqual([]);
            const example = join(root, 'examples', `${String(object.id)}.json`);
            if (existsSync(example))
              expect(object, `${document} inlines ${example}`).toEqual(
                JSON.parse(readFileSync(example, 'utf8')),
              );
          } else if (NODE_TYPES.includes(object.type as never)) {
            expect(nodeSchema.safeParse(object).error, body).toBeUndefined();
          } else if ('hooks' in object) {
            expect(hookSchema.array().safeParse(object.hooks).error, body).toBeUndefined();
          } else {
            expect(workflowSchema.partial().strict().safeParse(object).error, body).toBeUndefined();
          }
        }
      }
    });
  }

  it('links only to files and anchors that exist', () => {
    const broken = linksOf(markdown).filter((target) => !resolves(document, target));
    expect(broken).toEqual([]);
  });
});

/** Relative link targets of a document, outside code. */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/i.test(target));
}

/** GitHub's anchors for a document's headings (and explicit `<a id>`s). */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const [, heading] of prose.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of prose.matchAll(/<a id="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

function resolves(document: string, target: string): boolean {
  const [path, anchor] = target.split('#') as [string, string | undefined];
  const file = path === '' ? join(root, document) : join(root, dirname(document), decodeURIComponent(path));
  if (!existsSync(file) || relative(root, file).startsWith('..')) return false;
  if (anchor === undefined) return true;
  if (!file.endsWith('.md')) return false;
  return anchorsOf(readFileSync(file, 'utf8')).has(anchor);
}
