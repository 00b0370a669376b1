/**
 * Hostile YAML workflow files get a coded error naming the file, before validation: nesting past the
 * JSON limit is WORKFLOW_TOO_DEEP (it was the parser's "Maximum call stack size exceeded"), a tag other
 * than plain data is YAML_TAG_NOT_ALLOWED with the tag and line (`!!js/function` was a YAMLWarning on
 * stderr and a schema error about a string), and a second document is refused rather than ignored.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-yaml-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const WORKFLOW = `id: tagged
version: 1
nodes:
  - id: start
    type: START
  - id: end
    type: END
edges:
  - from: start
    to: end
`;

async function validate(name: string, text: string) {
  const file = join(dir, name);
  await writeFile(file, text);
  const result = await runCli(['validate', '--json', file], {});
  return { file, code: result.code, report: JSON.parse(result.stdout) as { errors: unknown[] } };
}

describe('YAML nested 100,000 levels', () => {
  it.each([
    ['block sequences', `${'- '.repeat(100_000)}x\n`],
    ['flow sequences', `description: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`],
    ['flow mappings', `description: ${'{a: '.repeat(100_000)}${'}'.repeat(100_000)}\n`],
  ])(
    'in %s is WORKFLOW_TOO_DEEP naming the file',
    async (kind, text) => {
      const { file, code, report } = await validate(`deep-${kind.replace(' ', '-')}.yaml`, text);
      expect(code).toBe(1);
      expect(report.errors).toEqual([
        {
          code: 'WORKFLOW_TOO_DEEP',
          message: `${file} nests YAML mappings and sequences more than 256 levels deep`,
        },
      ]);
    },
    60_000,
  );

  it('as deep as JSON allows is read, and one level deeper is refused with the same code', async () => {
    const nested = (levels: number) => `description: ${'['.repeat(levels)}${']'.repeat(levels)}\n`;
    // The top-level mapping is one level: 255 more make 256.
    const ok = await validate('deep-ok.yaml', WORKFLOW.replace('id: tagged\n', `id: tagged\n${nested(255)}`));
    expect(ok.report.errors).toContainEqual(expect.objectContaining({ code: 'SCHEMA_INVALID' }));
    expect(JSON.stringify(ok.report.errors)).not.toContain('TOO_DEEP');
    const deep = await validate('deep-257.yaml', nested(256));
    expect(deep.report.errors).toEqual([expect.objectContaining({ code: 'WORKFLOW_TOO_DEEP' })]);
  });
});

describe('YAML tags', () => {
  it.each([
    ['!!js/function', 'triggers: !!js/function "function () { return 1 }"', '!!js/function', 1],
    ['a custom tag', 'description: !shell "rm -rf /"', '!shell', 1],
    ['!!binary', 'description: !!binary aGVsbG8=', '!!binary', 1],
    ['!!set', 'description: !!set {a, b}', '!!set', 1],
    ['!!timestamp', 'description: !!timestamp 2001-12-14', '!!timestamp', 1],
    ['!!python/object', 'description: !!python/object:os.system ls', '!!python/object:os.system', 1],
  ])('%s is YAML_TAG_NOT_ALLOWED with the tag and its line', async (_name, line, tag) => {
    const text = WORKFLOW.replace('version: 1\n', `version: 1\n${line}\n`);
    const { file, code, report } = await validate(`tag-${tag.replace(/\W/g, '')}.yaml`, text);
    expect(code).toBe(1);
    expect(report.errors).toEqual([
      {
        code: 'YAML_TAG_NOT_ALLOWED',
        message: expect.stringMatching(
          new RegExp(
            `^${file} at line 3, column \\d+: the YAML tag ${tag.replace(/[/.]/g, '\\$&')} is not allowed`,
          ),
        ),
      },
    ]);
  });

  it("YAML 1.1's types stay refused under a %YAML 1.1 directive", async () => {
    const { report } = await validate(
      'yaml11.yaml',
      `%YAML 1.1\n---\n${WORKFLOW}description: !!binary aGk=\n`,
    );
    expect(report.errors).toEqual([expect.objectContaining({ code: 'YAML_TAG_NOT_ALLOWED' })]);
  });

  it('the core schema tags of plain data are read as their values', async () => {
    const text = WORKFLOW.replace('id: tagged', 'id: !!str tagged').replace(
      'version: 1',
      'version: !!int "1"',
    );
    expect(await validate('core-tags.yaml', text)).toMatchObject({ code: 0, report: { errors: [] } });
  });

  it('no YAMLWarning reaches stderr: the command prints the coded error only', async () => {
    const file = join(dir, 'warned.yaml');
    await writeFile(file, WORKFLOW.replace('version: 1\n', 'version: 1\ndescription: !!js/function "x"\n'));
    const result = await cliProcess(['validate', file], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('YAML_TAG_NOT_ALLOWED');
    expect(result.stderr).toBe('');
  });
});

describe('YAML with more than one document', () => {
  it('is WORKFLOW_PARSE_ERROR instead of running the first one', async () => {
    const { file, report } = await validate('two.yaml', `${WORKFLOW}---\n${WORKFLOW}`);
    expect(report.errors).toEqual([
      {
        code: 'WORKFLOW_PARSE_ERROR',
        message: `${file} is not valid YAML: it holds more than one document (a line "---" starts the second, at line 11); a workflow file is one document`,
      },
    ]);
  });
});

describe('a YAML file with no document', () => {
  it.each([
    ['empty', ''],
    ['only comments', '# a workflow, one day\n'],
  ])('(%s) is WORKFLOW_PARSE_ERROR saying so, not a schema error about null', async (kind, text) => {
    const { file, report } = await validate(`none-${kind.replace(' ', '-')}.yaml`, text);
    expect(report.errors).toEqual([
      { code: 'WORKFLOW_PARSE_ERROR', message: `${file} is not valid YAML: the file holds no document` },
    ]);
  });
});
