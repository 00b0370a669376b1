/**
 * Made-up hostile input the CLI must refuse with a code before running, or run correctly: a number past
 * a double's range (`1e400` became null in the output), a file starting with a byte order mark (refused
 * as invalid JSON), and a file whose text holds terminal escape sequences (echoed raw by the parse
 * error, so a file could recolour or retitle the terminal).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'route-loop.json');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-hostile-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a number beyond the range of a double', () => {
  it('in --input is INPUT_NUMBER_INEXACT before anything runs, not null in the output', async () => {
    const result = await runCli(['run', EXAMPLE, '--input', '{"tickets": [], "limit": 1e400}'], {
      cwd: dir,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^stepthread: INPUT_NUMBER_INEXACT: --input holds the number 1e400,/);
    expect(result.stderr).not.toContain('started execution');
  });

  it('in --input, a non-zero number below the smallest double (it would become 0) is INPUT_NUMBER_INEXACT too', async () => {
    const result = await runCli(['run', EXAMPLE, '--input', '{"tickets": [], "limit": 1e-400}'], {
      cwd: dir,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^stepthread: INPUT_NUMBER_INEXACT: --input holds the number 1e-400,/);
    expect(result.stderr).toContain('a non-zero one below 5e-324, which becomes 0');
    expect(result.stderr).not.toContain('started execution');
  });
});

describe('a byte order mark', () => {
  it('before a JSON workflow, and before an --input file, is read as the text after it', async () => {
    const workflow = join(dir, 'bom.json');
    const text = JSON.stringify({
      id: 'bom',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'end', type: 'END', config: { output: { got: '{{input.x}}' } } },
      ],
      edges: [{ from: 'start', to: 'end' }],
    });
    await writeFile(workflow, `\uFEFF${text}`);
    const input = join(dir, 'input.json');
    await writeFile(input, '\uFEFF{"x": "ok"}');
    expect(await runCli(['validate', workflow], {})).toMatchObject({ code: 0 });
    const run = await runCli(
      ['run', workflow, '--json', '--input', `@${input}`, '--data-dir', join(dir, 'data')],
      {
        cwd: dir,
      },
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'COMPLETED', output: { got: 'ok' } });
  }, 60_000);

  it('before an --answers file is read as the text after it', async () => {
    const answers = join(dir, 'answers.json');
    await writeFile(answers, '\uFEFF{"approve-credit": true}');
    const triage = join(import.meta.dirname, '..', '..', 'examples', 'support-triage.json');
    const run = await runCli(
      ['run', triage, '--json', '--answers', answers, '--data-dir', join(dir, 'data-answers')],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'COMPLETED', output: { approved: true } });
  }, 60_000);
});

describe('terminal escape sequences in a file', () => {
  it('are shown escaped in the error that quotes them, never sent to the terminal', async () => {
    const file = join(dir, 'escapes.json');
    await writeFile(file, '{"id": \u001b[31mRED\u001b]0;title\u0007');
    const validate = await runCli(['validate', file], {});
    expect(validate.code).toBe(1);
    // The parse error names the unexpected character (no longer a quote of the text), escaped.
    expect(validate.stdout).toContain("at line 1, column 8: Unexpected token '\\u001b'");
    expect(validate.stdout.replaceAll('\n', '')).not.toMatch(/\p{Cc}/u);
    const input = await runCli(['run', EXAMPLE, '--input', `@${file}`], { cwd: dir });
    expect(input.code).toBe(2);
    expect(input.stderr).toContain('INPUT_INVALID');
    expect(input.stderr.replaceAll('\n', '')).not.toMatch(/\p{Cc}/u);
  });
});
