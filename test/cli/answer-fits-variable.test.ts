/**
 * An ask_for_input answer must fit the type its outputVariable is declared: every way to answer
 * refuses one that does not with INVALID_INTERACTION_ANSWER, naming the variable and its type, before
 * anything is recorded or sent, and the run goes on waiting for a right one (it used to take the
 * answer and fail the run with INVALID_VARIABLE). `respond` to a run waiting in another process,
 * `run`/`resume --answers`, the terminal's prompt, `respond` on a stack (a stub Step Functions client
 * receives what would be sent), and a config `userInput` at validation.
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SendTaskSuccessCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalAnswers } from '../../cli/answers.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { SfnLike } from '../../cli/commands/start.ts';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createHandlerStores } from '../../functions/handlers/deps.ts';
import { dispatch } from '../../functions/handlers/dispatch.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import type { Interaction } from '../../functions/stores/interaction-store.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';
import { COUNT_QUESTION as COUNT } from '../support/count-question.ts';

const REFUSED =
  'INVALID_INTERACTION_ANSWER (node ask): node ask (ask_for_input): the answer is stored in variable "count", declared number, so it must be a number; got "lots" (string)';

let dir: string;
let file: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-answer-fits-'));
  file = join(dir, 'count.json');
  await writeFile(file, JSON.stringify(COUNT));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const spawnCli = (args: readonly string[]) => cliProcess(args, { cwd: dir });

describe('respond to a local run waiting at its prompt', () => {
  it('refuses an answer its variable does not take, the run still waits, and a right one completes it', async () => {
    const dataDir = join(dir, 'respond');
    let asked: () => void = () => {};
    const question = new Promise<void>((resolve) => {
      asked = resolve;
    });
    let stdout = '';
    let stderr = '';
    const io: CliIo = {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      readFile: (path) => readFile(path, 'utf8'),
      env: {},
      cwd: dir,
      // Nobody types: the prompt ends only when respond answers from another process.
      prompt: (_question, signal) => {
        asked();
        return new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      },
    };
    const waiting = main(['node', 'stepthread', 'run', file, '--json', '--data-dir', dataDir], io);
    await question;
    const pending = await spawnCli(['pending', '--json', '--data-dir', dataDir]);
    const [open] = JSON.parse(pending.stdout) as { interactionId: string }[];
    expect(open).toMatchObject({ nodeId: 'ask', answerVariable: { name: 'count', type: 'number' } });

    const wrong = await spawnCli(['respond', open!.interactionId, '--input', 'lots', '--data-dir', dataDir]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(REFUSED);
    // Nothing was recorded: the question is still open, and the run still waits on it.
    const still = await spawnCli(['pending', '--json', '--data-dir', dataDir]);
    expect((JSON.parse(still.stdout) as { interactionId: string }[]).map((i) => i.interactionId)).toEqual([
      open!.interactionId,
    ]);

    const right = await spawnCli(['respond', open!.interactionId, '--input', '42', '--data-dir', dataDir]);
    expect(right.code, right.stderr).toBe(0);
    expect(await waiting, stderr).toBe(0);
    const result = JSON.parse(stdout) as RunJsonResult;
    expect(result).toMatchObject({ status: 'COMPLETED', output: { count: 42 } });
  }, 60_000);
});

describe('run and resume --answers', () => {
  it('refuses an answer its variable does not take before anything runs; the stopped run resumes with a right one', async () => {
    const dataDir = join(dir, 'answers');
    const refused = await runCli(['run', file, '--answers', '{"ask": "lots"}', '--data-dir', dataDir], {
      cwd: dir,
      env: {},
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'INVALID_INTERACTION_ANSWER (node ask): --answers "ask": the answer is stored in variable "count", declared number, so it must be a number; got "lots" (string)',
    );
    expect(refused.stdout).toBe('');
    expect(refused.stderr).not.toMatch(/^started execution/m);

    // No terminal: the run stops at the question, to be resumed with its answer.
    const stopped = await spawnCli(['run', file, '--data-dir', dataDir]);
    expect(stopped.code).toBe(1);
    const executionId = /started execution (\S+)/.exec(stopped.stderr)?.[1];
    expect(executionId).toBeDefined();
    // The resume it suggests answers with a number, which the variable takes.
    expect(stopped.stderr).toContain(`stepthread resume ${executionId} --answers '{"ask":0}'`);
    const badResume = await spawnCli([
      'resume',
      executionId!,
      '--answers',
      '{"ask": "lots"}',
      '--data-dir',
      dataDir,
    ]);
    expect(badResume.code).toBe(2);
    expect(badResume.stderr).toContain('declared number, so it must be a number; got "lots" (string)');
    expect(badResume.stderr).toContain('nothing ran and the run can still be resumed');
    const resumed = await spawnCli([
      'resume',
      executionId!,
      '--answers',
      '{"ask": 42}',
      '--json',
      '--data-dir',
      dataDir,
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      executionId,
      status: 'COMPLETED',
      output: { count: 42 },
    });
  }, 60_000);
});

describe("the terminal's prompt", () => {
  const question = (type: string) =>
    ({
      nodeId: 'ask',
      interactionType: 'ask_for_input',
      answerVariable: { name: 'count', type },
    }) as Partial<Interaction> as Interaction;

  async function typed(lines: string[], asked: Interaction) {
    const said: string[] = [];
    const ask = terminalAnswers(
      async () => lines.shift() ?? 'no more lines',
      (line) => said.push(line),
    );
    return { reply: await ask(asked, {}), said: said.join('') };
  }

  it('says why an answer its variable does not take is refused, and asks again', async () => {
    const { reply, said } = await typed(['lots', '42'], question('number'));
    expect(said).toContain(
      'the answer is stored in variable "count", declared number, so it must be a number; got "lots" (string)',
    );
    expect(reply).toEqual({ kind: 'input', value: 42 });
  });

  it('into a string variable, takes what was typed as text: 42 answers "42"', async () => {
    expect((await typed(['42'], question('string'))).reply).toEqual({ kind: 'input', value: '42' });
    expect((await typed(['"quoted"'], question('string'))).reply).toEqual({ kind: 'input', value: 'quoted' });
    expect((await typed(['{"a": 1}'], question('string'))).reply).toEqual({
      kind: 'input',
      value: '{"a": 1}',
    });
  });
});

describe('respond on a stack (stub Step Functions client)', () => {
  let envelope: Envelope;
  const dataDir = () => join(dir, 'stack');

  beforeAll(async () => {
    // What a deployed run leaves behind: a thread, and the request handler's pending items.
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
            workflow: { id: 'count-ask', version: 1, maxSteps: 10, variables: COUNT.variables },
          },
          executionId: 'arn:aws:states:us-east-1:1:execution:stepthread-count-ask:c-1',
          input: { input: {} },
        },
        deps,
      )) as Envelope;
      const ask = (id: string, outputVariable: string, type: string) => ({
        id,
        type: 'USER_INTERACTION' as const,
        config: { userInteractionType: 'ask_for_input', outputVariable },
        variables: [{ name: outputVariable, type, scope: 'thread' }],
      });
      for (const [node, token] of [
        [ask('ask', 'count', 'number'), 'token-count'],
        [ask('name', 'label', 'string'), 'token-label'],
      ] as const) {
        await dispatch({ action: 'execute', node, envelope, taskToken: token }, deps);
      }
    } finally {
      await services.close();
    }
  });

  async function respond(node: string, text: string) {
    const sent: object[] = [];
    const sfn: SfnLike = {
      async send(command) {
        sent.push(command);
        return {};
      },
    };
    const result = await runCli(
      ['respond', `${envelope.threadId}/${node}`, '--input', text, '--data-dir', dataDir()],
      {
        cwd: dir,
        env: {},
        services: { sfn },
      },
    );
    const success = sent[0] as SendTaskSuccessCommand | undefined;
    return {
      ...result,
      sent,
      reply: success && (JSON.parse(success.input.output ?? '') as { reply: unknown }).reply,
    };
  }

  it('refuses an answer its variable does not take and sends nothing; a right one is sent', async () => {
    const wrong = await respond('ask', 'lots');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(REFUSED);
    expect(wrong.sent).toEqual([]);
    const pending = await runCli(['pending', envelope.threadId, '--data-dir', dataDir()], {
      cwd: dir,
      env: {},
    });
    // Still open, and the hint answers it with what its variable takes.
    expect(pending.stdout).toContain(`respond ${envelope.threadId}/ask --input 0`);
    expect(pending.stdout).toContain('--input takes a number, as variable count is declared');
    const right = await respond('ask', '42');
    expect(right.code, right.stderr).toBe(0);
    expect(right.reply).toEqual({ kind: 'input', value: 42 });
  });

  it('into a string variable, --input 42 answers "42"', async () => {
    const responded = await respond('name', '42');
    expect(responded.code, responded.stderr).toBe(0);
    expect(responded.reply).toEqual({ kind: 'input', value: '42' });
  });
});

describe('a config userInput', () => {
  it('that its variable does not take is refused at validation', async () => {
    const withInput = {
      ...COUNT,
      id: 'count-given',
      nodes: COUNT.nodes.map((node) =>
        node.id === 'ask' ? { ...node, config: { ...node.config, userInput: 'lots' } } : node,
      ),
    };
    const given = join(dir, 'count-given.json');
    await writeFile(given, JSON.stringify(withInput));
    const validated = await runCli(['validate', given], { cwd: dir, env: {} });
    expect(validated.code).not.toBe(0);
    expect(validated.stdout + validated.stderr).toContain('INVALID_INTERACTION_ANSWER');
    expect(validated.stdout + validated.stderr).toContain(
      'declared number, so it must be a number; got "lots"',
    );
  });
});
