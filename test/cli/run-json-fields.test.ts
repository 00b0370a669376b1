/**
 * `run --json` and `resume --json` give the same fields whatever the status: a run that stops at a
 * question (INTERRUPTED) has its conversation so far too, as a COMPLETED or FAILED one does, and
 * `error` and `resume` are there (null) when the status has none.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { cliProcess } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'support-triage.json');
const TICKET = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };
/** What the run says before its question: the classifier's turn, with its tool call. */
const BEFORE_QUESTION = [
  { role: 'user', content: 'Classify this ticket as billing or technical: Charged twice this month' },
  { role: 'assistant', content: 'Checking how long this customer has been with us.' },
  { role: 'tool', content: '{"years":6}' },
  { role: 'assistant', content: 'billing' },
];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-json-fields-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Every status's keys, in order. */
const FIELDS = ['executionId', 'threadId', 'status', 'output', 'conversation', 'error', 'resume'];

const said = (result: RunJsonResult) => result.conversation.map(({ role, content }) => ({ role, content }));

it('a run stopped at a question (run --json, then resume --json) has its conversation so far', async () => {
  const dataDir = join(dir, 'data');
  const stopped = await cliProcess(
    ['run', EXAMPLE, '--input', JSON.stringify(TICKET), '--json', '--data-dir', dataDir],
    { cwd: dir },
  );
  expect(stopped.code).toBe(1);
  const result = JSON.parse(stopped.stdout) as RunJsonResult;
  expect(result.status).toBe('INTERRUPTED');
  // The fields of every status (error: it did not complete), then the command that goes on.
  expect(Object.keys(result)).toEqual(FIELDS);
  expect(result.error).toMatchObject({ code: 'USER_INPUT_REQUIRED', nodeId: 'approve-credit' });
  expect(result.resume).toMatch(/ resume \S+ --answers /);
  expect(said(result)).toEqual(BEFORE_QUESTION);

  // Resumed with no answer, it stops at the question again: the same fields, the same conversation.
  const again = await cliProcess(['resume', result.executionId, '--json', '--data-dir', dataDir], {
    cwd: dir,
  });
  expect(again.code).toBe(1);
  const resumed = JSON.parse(again.stdout) as RunJsonResult;
  expect(resumed).toMatchObject({ executionId: result.executionId, status: 'INTERRUPTED' });
  expect(Object.keys(resumed)).toEqual(Object.keys(result));
  expect(said(resumed)).toEqual(BEFORE_QUESTION);

  // Answered, it completes: the same fields, error and resume null.
  const done = await cliProcess(
    ['resume', result.executionId, '--answers', '{"approve-credit": true}', '--json', '--data-dir', dataDir],
    { cwd: dir },
  );
  expect(done.code, done.stderr).toBe(0);
  const completed = JSON.parse(done.stdout) as RunJsonResult;
  expect(Object.keys(completed)).toEqual(FIELDS);
  expect(completed).toMatchObject({ status: 'COMPLETED', error: null, resume: null });
  expect(said(completed).slice(0, BEFORE_QUESTION.length)).toEqual(BEFORE_QUESTION);
}, 60_000);

it('a FAILED run has the same fields: its error, and resume null', async () => {
  // A budget of one token: the run fails at its first model call.
  const failed = await cliProcess(
    [
      'run',
      EXAMPLE,
      '--input',
      JSON.stringify(TICKET),
      '--budget',
      '{"maxTokens": 1}',
      '--json',
      '--data-dir',
      join(dir, 'failed'),
    ],
    { cwd: dir },
  );
  expect(failed.code).toBe(1);
  const result = JSON.parse(failed.stdout) as RunJsonResult;
  expect(Object.keys(result)).toEqual(FIELDS);
  expect(result).toMatchObject({
    status: 'FAILED',
    output: null,
    error: { code: 'BUDGET_EXCEEDED', nodeId: 'classify' },
    resume: null,
  });
}, 60_000);
