import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../cli/io.ts';
import { processIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { cliProcessSync } from '../support/cli-process.ts';

const root = join(import.meta.dirname, '..', '..');
const fixture = (path: string): string => join(root, 'test', 'fixtures', path);

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    readFile: processIo.readFile,
  };
  const code = await main(['node', 'stepthread', ...args], io);
  return { code, out, err };
}

/** A workflow whose nodes run one after another: START, `middle`, END. */
function chain(id: string, middle: unknown[] = []) {
  const nodes = [{ id: 'start', type: 'START' }, ...middle, { id: 'end', type: 'END' }] as { id: string }[];
  return { id, version: 1, nodes, edges: nodes.slice(1).map((n, i) => ({ from: nodes[i]!.id, to: n.id })) };
}

describe('stepthread validate', () => {
  it('exits 0 for a valid workflow', async () => {
    const result = await run('validate', fixture('valid/fork-join-three-paths.json'));
    expect(result.code).toBe(0);
    expect(result.out).toContain('valid');
  });

  it('reads YAML', async () => {
    expect((await run('validate', fixture('valid/route-loop.yaml'))).code).toBe(0);
  });

  it('exits 1 and prints every error on its own line with code, path and node', async () => {
    const result = await run('validate', fixture('invalid/fork-duplicate-path-id.json'));
    expect(result.code).toBe(1);
    const lines = result.out.trim().split('\n').slice(1);
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatch(
        /^ {2}INVALID_FORK_PATH_IDS \(nodes\[\d\]\.config\.forkPathIds(\[\d\])?, node (split|merge)\): /,
      );
    }
  });

  it('prints exactly the documented --json shape', async () => {
    const result = await run('validate', '--json', fixture('invalid/join-main-path-not-found.json'));
    expect(result.code).toBe(1);
    expect(JSON.parse(result.out)).toEqual({
      valid: false,
      errors: [
        {
          code: 'MAIN_PATH_ID_NOT_FOUND',
          message: expect.stringContaining('legal'),
          nodeId: 'merge',
          path: 'nodes[4].config.mainPathId',
        },
      ],
    });
    const valid = await run('validate', '--json', fixture('valid/subgraph.json'));
    expect(JSON.parse(valid.out)).toEqual({ valid: true, errors: [] });
  });

  it('treats unparsable JSON as an invalid workflow (exit 1, WORKFLOW_PARSE_ERROR)', async () => {
    const result = await run('validate', '--json', fixture('invalid/broken-syntax.json'));
    expect(result.code).toBe(1);
    expect(JSON.parse(result.out).errors.map((error: { code: string }) => error.code)).toEqual([
      'WORKFLOW_PARSE_ERROR',
    ]);
  });

  it.each([
    [
      '°',
      'a trailing comma',
      '{\n  "description": "Temperature in °C",\n  "nodes": [1,]\n}\n',
      3,
      15,
      "Unexpected token ']'",
    ],
    [
      'é',
      'a missing comma',
      '{\n  "description": "café",\n  "id": "x" "version": 1\n}\n',
      3,
      13,
      "Expected ',' or '}' after property value",
    ],
    [
      'an emoji',
      'a bad token on its line',
      '{\n  "description": "ship 🚀", "id": tru\n}\n',
      2,
      37,
      'Unexpected "\\n"',
    ],
    [
      'é and an emoji',
      'an early end',
      '{"description": "é😀", "nodes": [',
      1,
      33,
      'Unexpected end of JSON input',
    ],
  ])(
    'names the line and column of a JSON syntax error after %s (%s)',
    async (_chars, _mistake, text, line, column, problem) => {
      const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
      try {
        const file = join(dir, 'broken.json');
        await writeFile(file, text);
        const result = await run('validate', '--json', file);
        expect(result.code).toBe(1);
        expect(JSON.parse(result.out).errors).toEqual([
          {
            code: 'WORKFLOW_PARSE_ERROR',
            message: `${file} is not valid JSON at line ${line}, column ${column}: ${problem}`,
          },
        ]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it('says a .json file written in YAML reads as YAML, and that the extension decides', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
    try {
      const file = join(dir, 'flow.json');
      await writeFile(file, 'version: 1\nid: x\nnodes:\n  - id: s\n    type: START\n');
      const result = await run('validate', '--json', file);
      expect(result.code).toBe(1);
      expect(JSON.parse(result.out).errors).toEqual([
        {
          code: 'WORKFLOW_PARSE_ERROR',
          message: `${file} is not valid JSON at line 1, column 1: Unexpected token 'v'; it reads as YAML: name it .yaml (the extension says how a file is read)`,
        },
      ]);
      // Text that is neither says nothing of YAML.
      await writeFile(file, 'just words\n');
      expect(JSON.parse((await run('validate', '--json', file)).out).errors[0].message).not.toContain('YAML');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 for a missing file, a missing argument or an unknown command', async () => {
    const missing = await run('validate', fixture('valid/does-not-exist.json'));
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('cannot read');
    // With --json the report is printed all the same.
    const missingJson = await run('validate', '--json', fixture('valid/does-not-exist.json'));
    expect(missingJson.code).toBe(2);
    expect(JSON.parse(missingJson.out)).toEqual({
      valid: false,
      errors: [{ code: 'WORKFLOW_FILE_UNREADABLE', message: expect.stringContaining('cannot read') }],
    });
    expect((await run('validate')).code).toBe(2);
    expect((await run('frobnicate')).code).toBe(2);
    expect((await run('validate', '--nope', fixture('valid/subgraph.json'))).code).toBe(2);
    expect((await run()).code).toBe(2);
  });

  it('exits 0 for --help', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    expect(result.out).toContain('validate');
  });
});

describe('validate and a workflow’s $schema', () => {
  it('says which $schema reaches stepthread’s schema when a copied example’s names no file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-schema-'));
    try {
      const copy = join(dir, 'workflows', 'route-loop.json');
      await mkdir(join(dir, 'workflows'));
      await copyFile(join(root, 'examples', 'route-loop.json'), copy);
      const result = await run('validate', copy);
      expect(result.code).toBe(0);
      const suggested = relative(join(dir, 'workflows'), join(root, 'engine/model/workflow.schema.json'));
      expect(result.err).toBe(
        `note: ${copy}: "$schema": "../engine/model/workflow.schema.json" names no file from its folder; stepthread's schema is "$schema": "${suggested}"\n`,
      );
      expect(existsSync(join(dir, 'workflows', suggested))).toBe(true);
      // With that value, nothing more to say; nor in --json, which prints its report alone.
      const text = await readFile(copy, 'utf8');
      await writeFile(copy, text.replace('../engine/model/workflow.schema.json', suggested));
      expect((await run('validate', copy)).err).toBe('');
      await writeFile(copy, text);
      expect((await run('validate', '--json', copy)).err).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('says nothing for the repository’s examples, or a URL', async () => {
    expect(await run('validate', join(root, 'examples', 'support-triage.json'))).toMatchObject({
      code: 0,
      err: '',
    });
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-schema-'));
    try {
      const file = join(dir, 'w.json');
      await writeFile(
        file,
        JSON.stringify({ $schema: 'https://example.com/workflow.schema.json', ...chain('w') }),
      );
      expect(await run('validate', file)).toMatchObject({ code: 0, err: '' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('validate --json on any nesting', () => {
  it('prints JSON with a coded error for 800 nested SUBGRAPHs and a 100,000-deep file, and DEFINITION_TOO_LARGE for a huge definition', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
    try {
      let nested: unknown = chain('inner');
      for (let i = 0; i < 800; i++)
        nested = chain(`l${i}`, [{ id: 's', type: 'SUBGRAPH', config: { workflow: nested } }]);
      // Written as text: JSON.stringify itself would overflow on it.
      const deepText = JSON.stringify(chain('deep')).replace(
        /}$/,
        `,"description":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
      );
      // Node configs are in the node table: only a graph this long (about 700 bytes a node) is too large.
      const big = {
        ...chain(
          'big',
          Array.from({ length: 2_200 }, (_, i) => ({ id: `ask${i}`, type: 'LLM', config: { prompt: 'hi' } })),
        ),
        profiles: { default: { provider: 'scripted', responses: ['ok'] } },
      };
      for (const [name, data, code] of [
        ['nested.json', JSON.stringify(nested), 'SUBGRAPH_TOO_DEEP'],
        ['deep.json', deepText, 'WORKFLOW_TOO_DEEP'],
        ['big.json', JSON.stringify(big), 'DEFINITION_TOO_LARGE'],
      ] as const) {
        const file = join(dir, name);
        await writeFile(file, data);
        const result = await run('validate', '--json', file);
        expect(result.code).toBe(1);
        expect(JSON.parse(result.out)).toMatchObject({
          valid: false,
          errors: [expect.objectContaining({ code })],
        });
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('CODE that does not compile', () => {
  it('is CODE_SYNTAX_ERROR at validate, for CODE nodes at any level and code tools, with path and line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
    try {
      const code = (id: string, source: string) => ({ id, type: 'CODE', config: { code: source } });
      const workflow = {
        ...chain('syntax', [
          code('fine', 'const x = await Promise.resolve(input);\nreturn x'),
          code('broken', 'const total = 1;\nreturn total +;'),
          {
            id: 'inner',
            type: 'SUBGRAPH',
            config: { workflow: chain('child', [code('deep', 'if (input) {')]) },
          },
        ]),
        tools: {
          calc: {
            description: 'adds',
            parameters: { type: 'object' },
            handler: { kind: 'code', code: 'return input.a +* input.b' },
          },
        },
      };
      const file = join(dir, 'syntax.json');
      await writeFile(file, JSON.stringify(workflow));
      const result = await run('validate', '--json', file);
      expect(result.code).toBe(1);
      expect(JSON.parse(result.out)).toEqual({
        valid: false,
        errors: [
          {
            code: 'CODE_SYNTAX_ERROR',
            message: expect.stringMatching(
              /^tool "calc": the code does not compile: SyntaxError: .* \(line 1\)$/,
            ),
            path: 'tools.calc.handler.code',
          },
          {
            code: 'CODE_SYNTAX_ERROR',
            message: expect.stringMatching(
              /^CODE node "broken": the code does not compile: SyntaxError: .* \(line 2\)$/,
            ),
            nodeId: 'broken',
            path: 'nodes[2].config.code',
          },
          {
            code: 'CODE_SYNTAX_ERROR',
            message: expect.stringMatching(/^CODE node "deep": .* \(at the end of the code\)$/),
            nodeId: 'deep',
            path: 'nodes[3].config.workflow.nodes[1].config.code',
          },
        ],
      });
      // Nothing of the code runs while it is checked: a loop that never ends is valid and quick to say so.
      await writeFile(file, JSON.stringify(chain('endless', [code('spin', 'while (true) {}')])));
      expect(await run('validate', file)).toMatchObject({ code: 0, out: expect.stringContaining('valid') });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('every problem at once', () => {
  it('reports code that does not compile beside an unknown key and a malformed field of its own CODE node', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
    try {
      const workflow = {
        ...chain('both', [
          { id: 'calc', type: 'CODE', config: { code: 'return input +;', outputVarible: 'total' } },
          { id: 'slow', type: 'CODE', config: { code: 'if (input) {', timeoutMs: 'soon' } },
          { id: 'ask', type: 'LLM', config: { prompt: '{{totl}}' } },
        ]),
        profiles: { default: { provider: 'scripted', responses: ['ok'] } },
      };
      const file = join(dir, 'both.json');
      await writeFile(file, JSON.stringify(workflow));
      const result = await run('validate', '--json', file);
      expect(result.code).toBe(1);
      expect(
        JSON.parse(result.out).errors.map(({ code, path }: { code: string; path?: string }) => [code, path]),
      ).toEqual([
        ['INVALID_NODE_CONFIG', 'nodes[2].config.timeoutMs'],
        ['UNKNOWN_KEY', 'nodes[1].config.outputVarible'],
        ['UNKNOWN_VARIABLE_REFERENCE', 'nodes[3]'],
        ['CODE_SYNTAX_ERROR', 'nodes[1].config.code'],
        ['CODE_SYNTAX_ERROR', 'nodes[2].config.code'],
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('tool parameters', () => {
  it('refuses a tool whose parameters are no JSON Schema, at the top and in a SUBGRAPH, as a run would fail each call', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
    try {
      const tool = (parameters: unknown) => ({
        description: 'Years as a customer',
        parameters,
        handler: { kind: 'code', code: 'return 1' },
      });
      const good = { type: 'object', properties: { since: { type: 'integer' } } };
      const misspelt = { type: 'object', properties: { since: { type: 'integr' } } };
      const child = { ...chain('child', [{ id: 'look', type: 'TOOL', config: { toolName: 'deep' } }]) };
      const workflow = {
        ...chain('schemas', [
          {
            id: 'sub',
            type: 'SUBGRAPH',
            config: {
              workflow: { ...child, tools: { deep: tool({ type: 'objet' }), late: tool(misspelt) } },
            },
          },
        ]),
        tools: { tenure: tool(misspelt), fine: tool(good) },
      };
      const file = join(dir, 'schemas.json');
      await writeFile(file, JSON.stringify(workflow));
      const result = await run('validate', '--json', file);
      expect(result.code).toBe(1);
      const errors = JSON.parse(result.out).errors as { code: string; path: string; message: string }[];
      expect(errors.map(({ code, path }) => [code, path])).toEqual([
        // The structure's rule (an object schema) once, not again as a schema that does not compile.
        ['INVALID_TOOL_DEFINITION', 'nodes[1].config.workflow.tools.deep.parameters'],
        ['INVALID_TOOL_DEFINITION', 'tools.tenure.parameters'],
        ['INVALID_TOOL_DEFINITION', 'nodes[1].config.workflow.tools.late.parameters'],
      ]);
      expect(errors[1]!.message).toMatch(
        /^tool "tenure": its parameters are not a valid JSON Schema: schema is invalid: data\/properties\/since\/type must be equal to one of the allowed values/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  it('reports a tool schema both checks refuse once, in the path style of the other errors, for a name that is no identifier', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-validate-'));
    try {
      const tools = {
        'look-up': { description: 'Look it up', handler: 'builtin:echo', parameters: { type: 'objet' } },
      };
      const llm = (id: string) => ({
        id,
        type: 'LLM',
        config: { profileId: 'default', prompt: 'hi', tools: ['look-up'] },
      });
      const workflow = {
        ...chain('schemas', [
          llm('ask'),
          { id: 'sub', type: 'SUBGRAPH', config: { workflow: { ...chain('child', [llm('deep')]), tools } } },
        ]),
        profiles: { default: { provider: 'scripted' } },
        tools,
      };
      const file = join(dir, 'schemas.json');
      await writeFile(file, JSON.stringify(workflow));
      const result = await run('validate', '--json', file);
      expect(result.code).toBe(1);
      const errors = JSON.parse(result.out).errors as { code: string; path: string }[];
      expect(errors.map(({ code, path }) => [code, path])).toEqual([
        ['INVALID_TOOL_DEFINITION', 'tools["look-up"].parameters'],
        ['INVALID_TOOL_DEFINITION', 'nodes[2].config.workflow.tools["look-up"].parameters'],
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('bin/stepthread.js (real process)', () => {
  it('returns the validate exit codes end to end', () => {
    const exec = (file: string) => cliProcessSync(['validate', file]);
    const valid = exec(fixture('valid/context-pipeline.json'));
    expect(valid.status, valid.stderr).toBe(0);
    const invalid = exec(fixture('invalid/unknown-tool.json'));
    expect(invalid.status).toBe(1);
    expect(invalid.stdout).toContain('UNKNOWN_TOOL');
    expect(exec(fixture('nope.json')).status).toBe(2);
  });
});
