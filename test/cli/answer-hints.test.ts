/**
 * A refused answer says what would have been taken: `respond` with a flag for another kind of
 * question names the flags that answer this one (`--select` at an approval: --approve or --reject),
 * and a selection answered with an option in another case or with a close typo ("Red", "gren") says
 * which option it likely meant, in `respond`, `run --answers` and a config `userInput` alike. The
 * answer is still refused (INVALID_INTERACTION_ANSWER) and nothing is sent.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SendTaskSuccessCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SfnLike } from '../../cli/commands/start.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { createHandlerStores } from '../../functions/handlers/deps.ts';
import { dispatch } from '../../functions/handlers/dispatch.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { runCli } from '../support/cli.ts';

const OPTIONS = ['red', 'green', 'blue'];

/** START → `pick` (ask_for_selection of OPTIONS) → END with the option chosen. */
const PICK = {
  id: 'pick-colour',
  version: 1,
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'pick',
      type: 'USER_INTERACTION',
      config: { userInteractionType: 'ask_for_selection', showMessage: 'Colour?', options: OPTIONS },
    },
    { id: 'end', type: 'END', config: { output: '{{nodes.pick.option}}' } },
  ],
  edges: [
    { from: 'start', to: 'pick' },
    { from: 'pick', to: 'end' },
  ],
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-answer-hints-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (args: readonly string[], sfn?: SfnLike) =>
  runCli(args, { cwd: dir, env: {}, ...(sfn ? { services: { sfn } } : {}) });

describe('respond (stub Step Functions client)', () => {
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
            workflow: { id: 'pick-colour', version: 1, maxSteps: 10, variables: [] },
          },
          executionId: 'arn:aws:states:us-east-1:1:execution:stepthread-pick-colour:p-1',
          input: { input: {} },
        },
        deps,
      )) as Envelope;
      const questions = [
        { id: 'pick', config: { userInteractionType: 'ask_for_selection', options: OPTIONS } },
        { id: 'ok', config: { userInteractionType: 'ask_for_approval', showMessage: 'Go?' } },
      ];
      for (const question of questions) {
        const node = { ...question, type: 'USER_INTERACTION' as const };
        await dispatch({ action: 'execute', node, envelope, taskToken: `token-${question.id}` }, deps);
      }
    } finally {
      await services.close();
    }
  });

  async function respond(node: string, ...flags: string[]) {
    const sent: object[] = [];
    const sfn: SfnLike = {
      async send(command) {
        sent.push(command);
        return {};
      },
    };
    const result = await cli(
      ['respond', `${envelope.threadId}/${node}`, ...flags, '--data-dir', dataDir()],
      sfn,
    );
    const success = sent[0] as SendTaskSuccessCommand | undefined;
    return {
      ...result,
      sent,
      reply: success && (JSON.parse(success.input.output ?? '') as { reply: unknown }).reply,
    };
  }

  it('--select at an approval names --approve and --reject; --approve at a selection names --select', async () => {
    const select = await respond('ok', '--select', '1');
    expect(select.code).toBe(1);
    expect(select.stderr).toContain(
      'INVALID_INTERACTION_ANSWER (node ok): node ok (ask_for_approval): --select does not answer it; answer with --approve or --reject (or --fail)',
    );
    expect(select.sent).toEqual([]);
    const input = await respond('ok', '--input', 'yes');
    expect(input.stderr).toContain('--input does not answer it; answer with --approve or --reject');
    const approve = await respond('pick', '--approve');
    expect(approve.code).toBe(1);
    expect(approve.stderr).toContain(
      'INVALID_INTERACTION_ANSWER (node pick): node pick (ask_for_selection): --approve does not answer it; answer with --select <n> (or --fail)',
    );
    expect(approve.sent).toEqual([]);
  });

  it('an option in another case, or with a close typo, is refused with the option it likely meant', async () => {
    const cased = await respond('pick', '--select', 'Red');
    expect(cased.code).toBe(1);
    expect(cased.stderr).toContain(
      'INVALID_INTERACTION_ANSWER (node pick): node pick (ask_for_selection): "Red" is not one of the 3 options (0: red, 1: green, 2: blue) nor an index of one; did you mean "red"?',
    );
    expect(cased.sent).toEqual([]);
    const typo = await respond('pick', '--select', 'gren');
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('; did you mean "green"?');
    // Nothing close: no guess.
    const far = await respond('pick', '--select', 'purple');
    expect(far.stderr).toContain('"purple" is not one of the 3 options');
    expect(far.stderr).not.toContain('did you mean');
    const right = await respond('pick', '--select', 'red');
    expect(right.code, right.stderr).toBe(0);
    expect(right.reply).toEqual({ kind: 'select', choice: 'red' });
  });
});

describe('run --answers and a config userInput', () => {
  it('refuse an option in another case before anything runs, with the option it likely meant', async () => {
    const file = join(dir, 'pick.json');
    await writeFile(file, JSON.stringify(PICK));
    const refused = await cli([
      'run',
      file,
      '--answers',
      '{"pick": "Blue"}',
      '--data-dir',
      join(dir, 'answers'),
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'INVALID_INTERACTION_ANSWER (node pick): --answers "pick": "Blue" is not one of the 3 options (0: red, 1: green, 2: blue) nor an index of one; did you mean "blue"?',
    );
    expect(refused.stderr).not.toMatch(/^started execution/m);

    const given = join(dir, 'pick-given.json');
    await writeFile(
      given,
      JSON.stringify({
        ...PICK,
        nodes: PICK.nodes.map((node) =>
          node.id === 'pick' ? { ...node, config: { ...node.config, userInput: 'GREEN' } } : node,
        ),
      }),
    );
    const validated = await cli(['validate', given]);
    expect(validated.code).toBe(1);
    expect(validated.stdout).toContain('INVALID_INTERACTION_ANSWER');
    expect(validated.stdout).toContain('"GREEN" is not one of the 3 options');
    expect(validated.stdout).toContain('did you mean "green"?');
  });
});
