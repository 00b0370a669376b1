/**
 * What a new user mistypes on the command line ends in a coded error that says what to give instead,
 * exits 2, and touches nothing: a workflow file that is not there (a typo, no extension, a folder)
 * and an `--answers` that is neither JSON nor a file.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');

let dir: string;
let workflows: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-mistakes-'));
  workflows = join(dir, 'workflows');
  await mkdir(workflows);
  for (const name of ['vendor-review.json', 'route-loop.json'])
    await copyFile(join(ROOT, 'examples', name), join(workflows, name));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const data = () => join(dir, 'data');
const cli = (...args: string[]) => runCli([...args], { cwd: dir });

describe('a workflow file that cannot be read', () => {
  it('is WORKFLOW_FILE_UNREADABLE naming the file most likely meant, for run, compile and validate', async () => {
    const typo = join(workflows, 'vendr-review.json');
    const expected = `stepthread: WORKFLOW_FILE_UNREADABLE: cannot read ${typo}: there is no such file; did you mean ${join(workflows, 'vendor-review.json')}?\n`;
    for (const args of [
      ['run', typo, '--data-dir', data()],
      ['compile', typo],
      ['validate', typo],
    ]) {
      const result = await cli(...args);
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr, args[0]).toBe(expected);
      expect(result.stdout).toBe('');
    }
    // Nothing ran, so no data directory was made.
    expect(existsSync(data())).toBe(false);
  });

  it('names the file with its extension when it was left out, and says so in validate --json', async () => {
    const bare = join(workflows, 'route-loop');
    const result = await cli('validate', '--json', bare);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toEqual({
      valid: false,
      errors: [
        {
          code: 'WORKFLOW_FILE_UNREADABLE',
          message: `cannot read ${bare}: there is no such file; did you mean ${join(workflows, 'route-loop.json')}?`,
        },
      ],
    });
    // A name like no file there gets no guess.
    const other = await cli('validate', join(workflows, 'payments.json'));
    expect(other.stderr).toBe(
      `stepthread: WORKFLOW_FILE_UNREADABLE: cannot read ${join(workflows, 'payments.json')}: there is no such file\n`,
    );
  });

  it('says a folder is one, and which workflow files it holds', async () => {
    const result = await cli('run', workflows, '--data-dir', data());
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `stepthread: WORKFLOW_FILE_UNREADABLE: cannot read ${workflows}: it is a folder: give one workflow file (.json, .yaml or .yml) such as ${join(workflows, 'route-loop.json')} (it holds route-loop.json, vendor-review.json); stepthread dev serves a folder\n`,
    );
    expect(existsSync(data())).toBe(false);
  });
});

describe('--answers that is neither JSON nor a file', () => {
  const workflow = () => join(workflows, 'vendor-review.json');

  it('is INVALID_INTERACTION_ANSWER with the form to give, before anything runs', async () => {
    const result = await cli('run', workflow(), '--answers', 'approve=true', '--data-dir', data());
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `stepthread: INVALID_INTERACTION_ANSWER: --answers approve=true is neither inline JSON nor a file that can be read (there is no file approve=true): give a JSON object keyed by node id, such as --answers '{"approve": true}', or a file holding one\n`,
    );
    expect(existsSync(data())).toBe(false);
  });

  it('is INVALID_INTERACTION_ANSWER for JSON that does not parse, inline or in a file, or is no object', async () => {
    const inline = await cli('run', workflow(), '--answers', '{approve: true}', '--data-dir', data());
    expect(inline.code).toBe(2);
    expect(inline.stderr).toMatch(
      /^stepthread: INVALID_INTERACTION_ANSWER: --answers is not valid JSON \(.+\): give a JSON object keyed by node id, such as --answers '\{"approve": true\}', or a file holding one\n$/,
    );
    const file = join(dir, 'answers.txt');
    await writeFile(file, 'approve: yes\n');
    const fromFile = await cli('run', workflow(), '--answers', `@${file}`, '--data-dir', data());
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toMatch(
      new RegExp(
        `^stepthread: INVALID_INTERACTION_ANSWER: --answers file ${file.replaceAll('.', '\\.')} is not valid JSON \\(`,
      ),
    );
    const list = await cli('run', workflow(), '--answers', '[true]', '--data-dir', data());
    expect(list.code).toBe(2);
    expect(list.stderr).toBe(
      `stepthread: INVALID_INTERACTION_ANSWER: --answers must be a JSON object keyed by node id, such as --answers '{"approve": true}', or a file holding one; got an array\n`,
    );
    expect(existsSync(data())).toBe(false);
  });

  it('is refused the same by resume, before it opens the data directory', async () => {
    const result = await cli('resume', 'some-execution', '--answers', 'approve=true', '--data-dir', data());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'stepthread: INVALID_INTERACTION_ANSWER: --answers approve=true is neither',
    );
    expect(existsSync(data())).toBe(false);
  });
});

describe('a command line commander refuses', () => {
  it('is USAGE_ERROR (exit 2) with commander’s own hint kept: an unknown flag or command, a missing argument', async () => {
    const hint = '(run stepthread --help for usage)\n';
    const cases: [string[], string][] = [
      [
        ['respond', 'some-thread/ask', '--selec', '1'],
        "unknown option '--selec'\n(Did you mean --select?)\n",
      ],
      [['validat', 'x.json'], "unknown command 'validat'\n(Did you mean validate?)\n"],
      [['frobnicate'], "unknown command 'frobnicate'\n"],
      [['validate'], "missing required argument 'workflow'\n"],
      [['copy', 'some-thread', '--from'], "option '--from <nodeId|step>' argument missing\n"],
    ];
    for (const [args, said] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toBe(`stepthread: USAGE_ERROR: ${said}${hint}`);
      expect(result.stdout).toBe('');
    }
    expect(existsSync(data())).toBe(false);
  });

  it('leaves --help and --version as they were: printed on stdout, exit 0, uncoded', async () => {
    for (const args of [['--help'], ['copy', '--help'], ['help', 'copy'], ['--version']]) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).not.toContain('USAGE_ERROR');
    }
  });
});

describe('--from given twice', () => {
  it('is USAGE_ERROR for copy and rerun, naming both values, before anything is read or written', async () => {
    const copy = await cli(
      'copy',
      'some-thread',
      '--from',
      'classify',
      '--from',
      'reply',
      '--data-dir',
      data(),
    );
    expect(copy.code).toBe(2);
    expect(copy.stderr).toBe(
      `stepthread: USAGE_ERROR: option '--from <nodeId|step>' argument 'reply' is invalid. --from is given twice ("classify", then "reply"): a copy starts from one point; give it once\n(run stepthread --help for usage)\n`,
    );
    expect(copy.stdout).toBe('');
    const rerun = await cli('rerun', '--failed', '--from', 'a', '--from', 'b', '--data-dir', data());
    expect(rerun.code).toBe(2);
    expect(rerun.stderr).toContain(
      'stepthread: USAGE_ERROR: option \'--from <nodeId>\' argument \'b\' is invalid. --from is given twice ("a", then "b"): each copy runs from one node; give it once\n',
    );
    expect(existsSync(data())).toBe(false);
  });
});

describe('a one-value flag given twice', () => {
  it('is USAGE_ERROR naming both values (commander would keep the last silently), before anything is read or written', async () => {
    const workflow = join(workflows, 'vendor-review.json');
    const cases: [string[], string][] = [
      [
        ['run', workflow, '--input', '{"a":1}', '--input', '{"b":2}'],
        '--input is given twice ("{"a":1}", then "{"b":2}"): a run has one input',
      ],
      [
        ['run', workflow, '--budget', '{"maxTokens":10}', '--budget', '{"maxToolCalls":1}'],
        '--budget is given twice',
      ],
      [['run', workflow, '--answers', '{}', '--answers', '{"ask":"yes"}'], '--answers is given twice'],
      [['resume', 'some-run', '--answers', '{}', '--answers', '{}'], '--answers is given twice'],
      [
        ['copy', 'some-thread', '--input', '{"a":1}', '--input', '{"b":2}'],
        '--input is given twice ("{"a":1}", then "{"b":2}"): a copy has one input',
      ],
      [
        ['start', 'some-workflow', '--input', '{}', '--input', '{}', '--stack', 'nope'],
        '--input is given twice',
      ],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args, '--data-dir', data());
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain('stepthread: USAGE_ERROR: ');
      expect(result.stderr, args.join(' ')).toContain(message);
      expect(result.stdout, args.join(' ')).toBe('');
    }
    expect(existsSync(data())).toBe(false);
  });
});

describe('flags that do not go together', () => {
  it('are USAGE_ERROR (exit 2), before anything is read or written', async () => {
    const workflow = join(workflows, 'route-loop.json');
    const run = await cli('run', workflow, '--thread', 't-1', '--input', '{}', '--data-dir', data());
    expect([run.code, run.stderr]).toEqual([
      2,
      'stepthread: USAGE_ERROR: --input and --thread do not go together (a thread keeps its own input)\n',
    ]);
    const inspect = await cli('inspect', 'x', '--no-conversation', '--last', '3', '--data-dir', data());
    expect([inspect.code, inspect.stderr]).toEqual([
      2,
      'stepthread: USAGE_ERROR: --no-conversation does not go with --last (it shows no conversation)\n',
    ]);
    const dev = await cli('dev', '--port', 'eighty', '--data-dir', data());
    expect([dev.code, dev.stderr]).toEqual([
      2,
      'stepthread: USAGE_ERROR: --port must be a port number, not eighty\n',
    ]);
    expect(existsSync(data())).toBe(false);
  });
});
