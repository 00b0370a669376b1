/**
 * An ask_for_input answer typed as text reads the same at the terminal's prompt and as `respond
 * --input`: JSON when it parses, else the text as a string (`hello` answers "hello"). Against the
 * embedded stores with a stub Step Functions client, which receives the SendTaskSuccess a deployed
 * run would.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SendTaskSuccessCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalAnswers } from '../../cli/answers.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { SfnLike } from '../../cli/commands/start.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createHandlerStores } from '../../functions/handlers/deps.ts';
import { dispatch } from '../../functions/handlers/dispatch.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import type { Interaction } from '../../functions/stores/interaction-store.ts';
import { runCli } from '../support/cli.ts';

let dir: string;
let envelope: Envelope;
const dataDir = () => join(dir, 'data');
const node = {
  id: 'ask',
  type: 'USER_INTERACTION' as const,
  config: { userInteractionType: 'ask_for_input', showMessage: 'Your name?' },
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-answer-text-'));
  // What a deployed run leaves behind: a thread, and the request handler's pending item.
  const services = await openDataDir(dataDir());
  try {
    const clients = createAwsClients(services.target, {
      tableName: 'stepthread',
      bucketName: 'stepthread-conversations',
    });
    const deps = {
      ...createHandlerStores(clients),
      env: { now: () => '2025-01-01T00:00:00.000Z', newId: () => 'id' },
    };
    envelope = (await dispatch(
      {
        action: 'execute',
        node: {
          id: 'start',
          type: 'START',
          workflow: { id: 'names', version: 1, maxSteps: 10, variables: [] },
        },
        executionId: 'arn:aws:states:us-east-1:1:execution:stepthread-names:n-1',
        input: { input: {} },
      },
      deps,
    )) as Envelope;
    await dispatch({ action: 'execute', node, envelope, taskToken: 'token-1' }, deps);
  } finally {
    await services.close();
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function stubSfn(): SfnLike & { sent: object[] } {
  const sent: object[] = [];
  return {
    sent,
    async send(command) {
      sent.push(command);
      return {};
    },
  };
}

/** What `respond --input <text>` sends, or its exit code and error when it sends nothing. */
async function respondWith(text: string) {
  const sfn = stubSfn();
  const result = await runCli(
    ['respond', `${envelope.threadId}/ask`, '--input', text, '--data-dir', dataDir()],
    {
      cwd: dir,
      env: {},
      services: { sfn },
    },
  );
  const sent = sfn.sent[0] as SendTaskSuccessCommand | undefined;
  return { ...result, reply: sent && (JSON.parse(sent.input.output ?? '') as { reply: unknown }).reply };
}

/** What the terminal's prompt makes of the same text, typed as one line (then `last`, when asked again). */
async function typed(
  text: string,
  question = { nodeId: 'ask', interactionType: 'ask_for_input' } as Interaction,
  last = '"given up"',
) {
  const lines = [text];
  const said: string[] = [];
  const ask = terminalAnswers(
    async () => lines.shift() ?? last,
    (line) => said.push(line),
  );
  return { reply: await ask(question, {}), said: said.join('') };
}

describe('a selection typed at the terminal', () => {
  it('chooses an option by its text, whitespace around it set aside (validate refuses options that differ only so)', async () => {
    const question = {
      nodeId: 'pick',
      interactionType: 'ask_for_selection',
      options: ['  keep it', 'drop it'],
    } as Partial<Interaction> as Interaction;
    expect((await typed('keep it', question, '1')).reply).toEqual({ kind: 'select', choice: 0 });
    expect((await typed(' drop it ', question, '0')).reply).toEqual({ kind: 'select', choice: 1 });
  });

  it('chooses an option that is itself digits by typing it, as --answers does; other digits are an index', async () => {
    const question = {
      nodeId: 'year',
      interactionType: 'ask_for_selection',
      options: ['2024', '2025', 'later'],
    } as Partial<Interaction> as Interaction;
    expect((await typed('2025', question, '0')).reply).toEqual({ kind: 'select', choice: 1 });
    expect((await typed('2', question, '0')).reply).toEqual({ kind: 'select', choice: 2 });
    // Out of range: asked again (the next line, 0, answers).
    const wrong = await typed('7', question, '0');
    expect(wrong.said).toContain('choose 0-2');
    expect(wrong.reply).toEqual({ kind: 'select', choice: 0 });
  });
});

describe('an ask_for_input answer typed as text', () => {
  it.each([
    ['hello', 'hello'],
    ['hello world', 'hello world'],
    ['"quoted"', 'quoted'],
    ['42', 42],
    ['true', true],
    ['{"name": "Ada"}', { name: 'Ada' }],
    ['[1, 2]', [1, 2]],
  ])('respond --input %s answers %j, as the terminal does', async (text, value) => {
    const responded = await respondWith(text);
    expect(responded.code, responded.stderr).toBe(0);
    expect(responded.stdout).toBe(`answered ${envelope.threadId}/ask: the run continues\n`);
    expect(responded.reply).toEqual({ kind: 'input', value });
    expect((await typed(text)).reply).toEqual({ kind: 'input', value });
  });

  it('a number JSON would round is refused by both, which say how to give it as text', async () => {
    const responded = await respondWith('12345678901234567891');
    expect(responded.code).toBe(2);
    expect(responded.stderr).toContain('INPUT_NUMBER_INEXACT');
    expect(responded.stderr).toContain('"12345678901234567891"');
    expect(responded.reply).toBeUndefined();
    // The terminal says the same and asks again.
    const terminal = await typed('12345678901234567891');
    expect(terminal.said).toContain('quote it, "12345678901234567891"');
    expect(terminal.reply).toEqual({ kind: 'input', value: 'given up' });
  });
});

describe('--answers and userInput: the failing form {"fail": …}, and numbers JSON would round', () => {
  /** START → `q` (ask_for_input) → `ok` (ask_for_approval) → END, the input's answer in `said`. */
  const workflow = (userInput?: unknown) => ({
    id: 'fails',
    version: 1,
    variables: [{ name: 'said', type: 'object' }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'q',
        type: 'USER_INTERACTION',
        config: {
          userInteractionType: 'ask_for_input',
          outputVariable: 'said',
          ...(userInput === undefined ? {} : { userInput }),
        },
      },
      { id: 'ok', type: 'USER_INTERACTION', config: { userInteractionType: 'ask_for_approval' } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'q' },
      { from: 'q', to: 'ok' },
      { from: 'ok', to: 'end' },
    ],
  });

  async function run(name: string, definition: object, answers: object) {
    const file = join(dir, `${name}.json`);
    await writeFile(file, JSON.stringify(definition));
    const result = await runCli(
      ['run', file, '--answers', JSON.stringify(answers), '--json', '--data-dir', join(dir, `run-${name}`)],
      { cwd: dir, env: {} },
    );
    return JSON.parse(result.stdout) as RunJsonResult;
  }

  it('answers an ask_for_input, whose answer may be any JSON, that object included', async () => {
    const result = await run('input', workflow(), { q: { fail: 'the value' }, ok: true });
    expect(result.status).toBe('COMPLETED');
    expect(result.conversation.map((message) => message.content)).toContain('{"fail":"the value"}');
  });

  it('answers an ask_for_input as a config userInput too', async () => {
    const result = await run('user-input', workflow({ fail: 'the value' }), { ok: true });
    expect(result.status).toBe('COMPLETED');
    expect(result.conversation.map((message) => message.content)).toContain('{"fail":"the value"}');
  });

  it('--answers holding a number JSON would round is INPUT_NUMBER_INEXACT before anything runs, as --input is', async () => {
    const file = join(dir, 'rounds.json');
    await writeFile(file, JSON.stringify(workflow()));
    const result = await runCli(
      [
        'run',
        file,
        '--answers',
        '{"q": {"id": 12345678901234567891}, "ok": true}',
        '--data-dir',
        join(dir, 'run-rounds'),
      ],
      { cwd: dir, env: {} },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^stepthread: INPUT_NUMBER_INEXACT: --answers holds the number 12345678901234567891,/,
    );
    expect(result.stderr).not.toContain('started execution');
  });

  it('fails the run at an approval, whose answers are never such an object', async () => {
    const result = await run('approval', workflow(), { q: { any: 'object' }, ok: { fail: 'not today' } });
    expect(result.status).toBe('FAILED');
    expect(result.error).toMatchObject({
      code: 'USER_INTERACTION_FAILED',
      message: 'not today',
      nodeId: 'ok',
    });
  });
});
