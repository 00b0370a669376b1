/**
 * A local run whose model calls read their API key from an environment variable that is not set is
 * refused before anything runs (LLM_MISSING_API_KEY naming the variable and the nodes), rather than
 * failing at the first model call after the steps before it; a copy is checked with its edits.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

let dir: string;
let file: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-api-keys-'));
  file = join(dir, 'keyed.json');
  await writeFile(
    file,
    JSON.stringify({
      version: 1,
      id: 'keyed',
      profiles: {
        default: { provider: 'scripted', responses: ['ok'] },
        hosted: {
          provider: 'openai',
          model: 'gpt-4o-mini',
          apiKeyEnv: 'MY_LLM_KEY',
          // Nothing listens there: with the key set, the call is made and fails at once.
          baseUrl: 'http://127.0.0.1:9/v1',
          maxRetries: 0,
        },
      },
      nodes: [
        { id: 'start', type: 'START', config: {} },
        {
          id: 'set',
          type: 'VARIABLE',
          config: { variableName: 'topic', variableType: 'string', expression: "'tea'" },
        },
        { id: 'draft', type: 'LLM', config: { prompt: 'About {{topic}}' } },
        { id: 'end', type: 'END', config: {} },
      ],
      edges: [
        { from: 'start', to: 'set' },
        { from: 'set', to: 'draft' },
        { from: 'draft', to: 'end' },
      ],
    }),
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const data = () => join(dir, 'data');
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { cwd: dir, env });
const runsIn = async () =>
  JSON.parse((await cli(['runs', '--json', '--data-dir', data()])).stdout) as unknown[];

describe('an API key the environment lacks', () => {
  it('a profile no node uses needs none: the run completes', async () => {
    const result = await cli(['run', file, '--json', '--data-dir', data()]);
    expect(result.stderr).not.toContain('LLM_MISSING_API_KEY');
    expect(result.code).toBe(0);
  });

  it('refuses a copy whose edited profile reads an unset variable, before it runs; with the key set it is not refused', async () => {
    const before = await runsIn();
    const source = JSON.parse((await cli(['run', file, '--json', '--data-dir', data()])).stdout) as {
      threadId: string;
    };
    const copied = await cli([
      'copy',
      source.threadId,
      '--from',
      'draft',
      '--node-config',
      'draft.profileId="hosted"',
      '--data-dir',
      data(),
    ]);
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim();
    const refused = await cli(['run', file, '--thread', copyId, '--data-dir', data()]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'stepthread: the run needs an API key the environment lacks, so nothing ran\n' +
        "  LLM_MISSING_API_KEY: the environment variable MY_LLM_KEY is not set, and node draft (profile hosted, openai) reads its API key from it: set it (export MY_LLM_KEY=…), or name another variable with the profile's apiKeyEnv\n",
    );
    // Nothing ran: no run was added, and the copy still stands where it was made.
    expect((await runsIn()).length).toBe(before.length + 1);
    const copy = JSON.parse((await cli(['inspect', copyId, '--json', '--data-dir', data()])).stdout) as {
      threads: { status: string }[];
    };
    expect(copy.threads[0]!.status).toBe('CREATED');
    // With the key set the copy runs: its model call is made (and fails: nothing listens there).
    // The model call reads process.env (as the installed CLI's environment is), the check the CLI's.
    process.env.MY_LLM_KEY = 'sk-test';
    const ran = await cli(['run', file, '--thread', copyId, '--json', '--data-dir', data()], {
      MY_LLM_KEY: 'sk-test',
    }).finally(() => {
      delete process.env.MY_LLM_KEY;
    });
    expect(ran.stderr).not.toContain('LLM_MISSING_API_KEY');
    expect(JSON.parse(ran.stdout)).toMatchObject({ status: 'FAILED', error: { code: 'LLM_UNAVAILABLE' } });
  });

  it('refuses a new run before its first step, naming every node that reads the variable', async () => {
    const twice = join(dir, 'twice.json');
    const workflow = {
      version: 1,
      id: 'twice',
      profiles: { default: { provider: 'openai', model: 'gpt-4o-mini' } },
      nodes: [
        { id: 'start', type: 'START', config: {} },
        { id: 'first', type: 'LLM', config: { prompt: 'one' } },
        { id: 'second', type: 'LLM', config: { prompt: 'two' } },
        { id: 'end', type: 'END', config: {} },
      ],
      edges: [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'second' },
        { from: 'second', to: 'end' },
      ],
    };
    await writeFile(twice, JSON.stringify(workflow));
    const before = await runsIn();
    const result = await cli(['run', twice, '--data-dir', data()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'LLM_MISSING_API_KEY: the environment variable OPENAI_API_KEY is not set, and nodes first, second (profile default, openai) read their API key from it',
    );
    expect(await runsIn()).toEqual(before);
  });
});
