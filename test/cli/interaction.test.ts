/**
 * Human in the loop from the CLI: `run --answers` on the support-triage example, `start` against a
 * stub Step Functions client, and `pending` / `respond` against the embedded stores (the stub
 * receives the SendTaskSuccess / SendTaskFailure a deployed run would).
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ListStateMachinesCommand,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { DeployedServices, SfnLike } from '../../cli/commands/start.ts';
import { storeArguments } from '../../cli/local-session.ts';
import type { Envelope } from '../../engine/thread/types.ts';
import { type AwsClients, createAwsClients } from '../../functions/aws/clients.ts';
import { createHandlerStores, type HandlerDeps } from '../../functions/handlers/deps.ts';
import { dispatch } from '../../functions/handlers/dispatch.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { PLAIN_COMMAND_FORM, respondCommand } from '../../functions/local/interaction-hints.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { createInteractionStore } from '../../functions/stores/interaction-store.ts';
import { fullThread } from '../functions/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'support-triage.json');
const TICKET = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-hitl-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Records every command; answers them with `reply` (throwing when it returns an Error). */
function stubSfn(reply: (command: object) => unknown = () => ({})): SfnLike & { sent: object[] } {
  const sent: object[] = [];
  return {
    sent,
    async send(command) {
      sent.push(command);
      const answer = reply(command);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

function cli(
  args: string[],
  options: { sfn?: SfnLike; env?: Record<string, string>; values?: DeployedServices['values'] } = {},
) {
  return runCli(args, {
    cwd: dir,
    env: options.env ?? {},
    services: {
      ...(options.sfn ? { sfn: options.sfn } : {}),
      ...(options.values ? { values: options.values } : {}),
    },
  });
}

describe('stepthread run with USER_INTERACTION', () => {
  it('runs support-triage with --answers: approval → credit → reply', async () => {
    const answers = join(dir, 'answers.json');
    await writeFile(answers, JSON.stringify({ 'approve-credit': true }));
    const { code, stdout, stderr } = await cli([
      'run',
      EXAMPLE,
      '--input',
      JSON.stringify(TICKET),
      '--answers',
      answers,
      '--json',
      '--data-dir',
      join(dir, 'run-data'),
    ]);
    // Only the ids, printed as the run starts so a killed run can still be found.
    expect(stderr).toMatch(/^started execution \S+ \(thread \S+\)\n$/);
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as RunJsonResult;
    expect(result.status).toBe('COMPLETED');
    const reply =
      'Sorry for the double charge. We have refunded it and added a goodwill credit of 6 EUR to your account.';
    expect(result.output).toEqual({
      category: 'billing',
      approved: true,
      credit: { amount: 6, currency: 'EUR' },
      reply,
    });
    expect(result.conversation.map(({ role, content }) => ({ role, content }))).toEqual([
      { role: 'user', content: 'Classify this ticket as billing or technical: Charged twice this month' },
      { role: 'assistant', content: 'Checking how long this customer has been with us.' },
      { role: 'tool', content: '{"years":6}' },
      { role: 'assistant', content: 'billing' },
      { role: 'user', content: 'Approved.' },
      { role: 'user', content: 'Write the reply to Ada. Credit granted: 6 EUR.' },
      { role: 'assistant', content: reply },
    ]);
  });

  it('takes --answers inline as JSON, like --input', async () => {
    const { code, stdout } = await cli([
      'run',
      EXAMPLE,
      '--input',
      JSON.stringify(TICKET),
      '--answers',
      '{"approve-credit": true}',
      '--json',
      '--data-dir',
      join(dir, 'inline-data'),
    ]);
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as RunJsonResult).output).toMatchObject({
      approved: true,
      credit: { amount: 6 },
    });
  });

  it('a rejection in the answers file means no credit, and the run still completes', async () => {
    const answers = join(dir, 'reject.json');
    await writeFile(
      answers,
      JSON.stringify({ 'approve-credit': { approved: false, reason: 'already refunded' } }),
    );
    const { code, stdout } = await cli([
      'run',
      EXAMPLE,
      '--input',
      JSON.stringify(TICKET),
      '--answers',
      answers,
      '--json',
      '--data-dir',
      join(dir, 'run-data'),
    ]);
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as RunJsonResult;
    expect(result.output).toMatchObject({ approved: false, credit: { amount: 0, currency: 'EUR' } });
    expect(result.conversation.map((m) => m.content)).toContain('Rejected. already refunded');
    // The scripted reply follows the decision: no credit is promised.
    expect(result.output).toMatchObject({ reply: 'Sorry for the double charge. We have refunded it.' });
  });

  it('embedded with no terminal and no way to exit, fails with USER_INPUT_REQUIRED and says how to answer', async () => {
    const { code, stdout, stderr } = await cli([
      'run',
      EXAMPLE,
      '--input',
      JSON.stringify(TICKET),
      '--data-dir',
      join(dir, 'run-data'),
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/status\s+FAILED/);
    expect(stderr).toContain('USER_INPUT_REQUIRED (node approve-credit)');
    expect(stderr).toContain('--answers <file> with {"approve-credit":true}');
  });

  it('as a process with no terminal, stops at the question and leaves the run to resume with its answer', async () => {
    const dataDir = join(dir, 'stop-data');
    const stopped = await cliProcess(
      ['run', EXAMPLE, '--input', JSON.stringify(TICKET), '--data-dir', dataDir],
      {
        cwd: dir,
      },
    );
    expect(stopped.code).toBe(1);
    const executionId = /started execution (\S+)/.exec(stopped.stderr)?.[1];
    expect(stopped.stderr).toContain(
      `node approve-credit (ask_for_approval) "Grant Ada a goodwill credit of 20% of their 30 EUR monthly fee?" needs an answer; the run stops here, and goes on with: stepthread resume ${executionId} --answers '{"approve-credit":true}' --data-dir ${dataDir}`,
    );
    // No process waits on its question, so `respond` could not answer it: resuming with the answer
    // does, and a resume without it would stop at the question again. runs, inspect and pending
    // all give that one command.
    const answerWith = `stepthread resume ${executionId} --answers '{"approve-credit":true}' --data-dir ${dataDir}`;
    const pendingJson = await cliProcess(['pending', executionId!, '--json', '--data-dir', dataDir], {
      cwd: dir,
    });
    const [{ requestedAt }] = JSON.parse(pendingJson.stdout);
    const runs = await cliProcess(['runs', '--json', '--data-dir', dataDir], { cwd: dir });
    const [row] = JSON.parse(runs.stdout);
    expect(row).toMatchObject({ executionId, status: 'INTERRUPTED', resume: answerWith });
    // Its duration ends at its last activity, the question asked, not at now: it stays as it is.
    expect(row.lastActivityTime).toBe(requestedAt);
    expect(row.durationMs).toBe(Date.parse(requestedAt) - Date.parse(row.startTime));
    const runsText = await cliProcess(['runs', '--data-dir', dataDir], { cwd: dir });
    expect(runsText.stdout).toContain(`  ↳ resume with: ${answerWith}\n`);
    // inspect says the same of the run and of the thread it left at the question.
    const inspected = await cliProcess(['inspect', executionId!, '--json', '--data-dir', dataDir], {
      cwd: dir,
    });
    const report = JSON.parse(inspected.stdout);
    expect(report).toMatchObject({ executionStatus: 'INTERRUPTED', resume: answerWith });
    expect(report.threads.map((thread: { status: string }) => thread.status)).toEqual(['INTERRUPTED']);
    expect(report.threads[0].waitingFor).toEqual([expect.objectContaining({ answerWith })]);
    const text = await cliProcess(['inspect', executionId!, '--data-dir', dataDir], { cwd: dir });
    expect(text.stdout).toContain(`execution ${executionId}  INTERRUPTED`);
    expect(text.stdout).toContain(`its process is gone; resume with: ${answerWith}\n`);
    expect(text.stdout).toContain(`    answer with: ${answerWith}\n`);
    const pending = await cliProcess(['pending', executionId!, '--data-dir', dataDir], { cwd: dir });
    expect(pending.stdout).toContain(`its run's process is gone; resume it with the answer: ${answerWith}\n`);
    expect(pending.stdout).not.toContain('stepthread respond');
    // A mistyped node id in --answers is refused before anything runs, by resume as by run: the same
    // usage error (exit 2) with the same coded line, and the run stays resumable.
    const mistyped =
      '  INVALID_INTERACTION_ANSWER (node aprove-credit): --answers names "aprove-credit", which is no USER_INTERACTION node of support-triage (they are: approve-credit)\n';
    const badRun = await cli(['run', EXAMPLE, '--answers', '{"aprove-credit": true}', '--data-dir', dataDir]);
    expect(badRun.code).toBe(2);
    expect(badRun.stderr).toContain(mistyped);
    const badResume = await cliProcess(
      ['resume', executionId!, '--answers', '{"aprove-credit": true}', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(badResume.code).toBe(2);
    expect(badResume.stderr).toContain(mistyped);
    expect(badResume.stderr).toContain('nothing ran and the run can still be resumed');
    const resumed = await cliProcess(
      ['resume', executionId!, '--answers', '{"approve-credit": true}', '--json', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      executionId,
      status: 'COMPLETED',
      output: { approved: true, credit: { amount: 6, currency: 'EUR' } },
    });
    // The LLM steps before the question ran once: the classifier's tool call is in the conversation once.
    const contents = (JSON.parse(resumed.stdout) as RunJsonResult).conversation.map((m) => m.content);
    expect(contents.filter((c) => c === 'Checking how long this customer has been with us.')).toHaveLength(1);

    // With --json, stdout says so as JSON, as for any run that did not complete.
    const asJson = await cliProcess(
      ['run', EXAMPLE, '--input', JSON.stringify(TICKET), '--json', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(asJson.code).toBe(1);
    const stoppedJson = JSON.parse(asJson.stdout);
    expect(stoppedJson).toMatchObject({
      status: 'INTERRUPTED',
      output: null,
      error: { code: 'USER_INPUT_REQUIRED', nodeId: 'approve-credit' },
      resume: `stepthread resume ${stoppedJson.executionId} --answers '{"approve-credit":true}' --data-dir ${dataDir}`,
    });
  }, 60_000);

  it('checks --answers against the workflow before running: unknown nodes and wrong answer types', async () => {
    const dataDir = join(dir, 'answers-check');
    const unknown = await cli([
      'run',
      EXAMPLE,
      '--answers',
      '{"aprove-credit": true}',
      '--data-dir',
      dataDir,
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('INVALID_INTERACTION_ANSWER');
    expect(unknown.stderr).toContain(
      '"aprove-credit", which is no USER_INTERACTION node of support-triage (they are: approve-credit)',
    );
    const wrongType = await cli([
      'run',
      EXAMPLE,
      '--answers',
      '{"approve-credit": 42}',
      '--data-dir',
      dataDir,
    ]);
    expect(wrongType.code).toBe(2);
    expect(wrongType.stderr).toContain('an approval answer must be true, false');
    // Nothing ran: no execution was recorded.
    expect(wrongType.stdout).toBe('');
    const deep = `${'['.repeat(80)}1${']'.repeat(80)}`;
    const tooDeep = await cli([
      'run',
      EXAMPLE,
      '--answers',
      `{"approve-credit": ${deep}}`,
      '--data-dir',
      dataDir,
    ]);
    expect(tooDeep.code).toBe(2);
    expect(tooDeep.stderr).toContain('VALUE_TOO_DEEP');
    expect(tooDeep.stderr).toContain(
      '--answers "approve-credit" nests arrays and objects more than 64 levels deep',
    );
    expect(tooDeep.stderr).not.toMatch(/^started execution/m);
  });

  it('rejects an unreadable answers file before running', async () => {
    const { code, stderr } = await cli(['run', EXAMPLE, '--answers', join(dir, 'nope.json')]);
    expect(code).toBe(2);
    expect(stderr).toContain('--answers');
    // Inline JSON that is not an object is read as JSON, and refused as not an object (not as a file name).
    const array = await cli(['run', EXAMPLE, '--answers', '[true]']);
    expect(array.code).toBe(2);
    expect(array.stderr).toContain(
      'INVALID_INTERACTION_ANSWER: --answers must be a JSON object keyed by node id',
    );
  });
});

describe('stepthread start (stub Step Functions client)', () => {
  const machine = 'arn:aws:states:us-east-1:123456789012:stateMachine:stepthread-support-triage';

  it('resolves a workflow id to its state machine and starts a named execution', async () => {
    const sfn = stubSfn((command) => {
      if (command instanceof ListStateMachinesCommand) {
        return {
          stateMachines: [
            { name: 'stepthread-other', stateMachineArn: 'x' },
            { name: 'stepthread-support-triage', stateMachineArn: machine },
          ],
        };
      }
      return { executionArn: `${machine.replace(':stateMachine:', ':execution:')}:ticket-1` };
    });
    const { code, stdout } = await cli(
      ['start', 'support-triage', '--input', JSON.stringify(TICKET), '--name', 'ticket-1'],
      { sfn },
    );
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(
      'arn:aws:states:us-east-1:123456789012:execution:stepthread-support-triage:ticket-1',
    );
    // On the `live` alias: the run is pinned to the version the latest deploy published.
    const start = sfn.sent.find((c) => c instanceof StartExecutionCommand) as StartExecutionCommand;
    expect(start.input).toEqual({
      stateMachineArn: `${machine}:live`,
      name: 'ticket-1',
      input: JSON.stringify({ input: TICKET }),
    });
  });

  it('starts on the state machine itself when it has no live alias (deployed before pinning)', async () => {
    const noAlias = Object.assign(new Error('State Machine Does Not Exist'), {
      name: 'StateMachineDoesNotExist',
    });
    const sfn = stubSfn((command) => {
      if (command instanceof ListStateMachinesCommand) {
        return { stateMachines: [{ name: 'stepthread-support-triage', stateMachineArn: machine }] };
      }
      if (command instanceof StartExecutionCommand && command.input.stateMachineArn !== machine)
        return noAlias;
      return { executionArn: `${machine.replace(':stateMachine:', ':execution:')}:ticket-2` };
    });
    const { code, stdout } = await cli(['start', 'support-triage', '--name', 'ticket-2'], { sfn });
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(
      'arn:aws:states:us-east-1:123456789012:execution:stepthread-support-triage:ticket-2',
    );
    const starts = sfn.sent.filter((c) => c instanceof StartExecutionCommand) as StartExecutionCommand[];
    expect(starts.map((c) => c.input.stateMachineArn)).toEqual([`${machine}:live`, machine]);
  });

  it('says that an EXPRESS state machine does not deduplicate execution names', async () => {
    const express = stubSfn((command) =>
      command instanceof DescribeStateMachineCommand
        ? { type: 'EXPRESS' }
        : { executionArn: `${machine.replace(':stateMachine:', ':execution:')}:ticket-1` },
    );
    const started = await cli(['start', machine, '--name', 'ticket-1'], { sfn: express });
    expect(started.code).toBe(0);
    expect(started.stderr).toContain('EXPRESS state machine: StartExecution does not deduplicate by name');
    const standard = stubSfn((command) =>
      command instanceof DescribeStateMachineCommand
        ? { type: 'STANDARD' }
        : { executionArn: `${machine.replace(':stateMachine:', ':execution:')}:ticket-1` },
    );
    expect((await cli(['start', machine, '--name', 'ticket-1'], { sfn: standard })).stderr).toBe('');
  });

  it('uploads an input over 8 KB and starts with a reference to it (claim check), the same each time', async () => {
    const uploads: Map<string, unknown>[] = [];
    const values = {
      putValues: async (entries: ReadonlyMap<string, unknown>) => {
        uploads.push(new Map(entries));
        return 'object-1';
      },
    };
    const sfn = stubSfn(() => ({ executionArn: 'arn:x' }));
    const big = { document: 'd'.repeat(300_000) };
    const { code } = await cli(['start', machine, '--input', JSON.stringify(big), '--name', 'big-1'], {
      sfn,
      values,
    });
    expect(code).toBe(0);
    expect(uploads).toHaveLength(1);
    expect([...uploads[0]!.values()]).toEqual([big]);
    const start = sfn.sent.find((c) => c instanceof StartExecutionCommand) as StartExecutionCommand;
    const body = JSON.parse(start.input.input!) as { input: Record<string, unknown> };
    expect(body.input).toEqual({
      '$stepthread:ref': `v:object-1/${[...uploads[0]!.keys()][0]}`,
      bytes: JSON.stringify(big).length,
    });
    expect(start.input.input!.length).toBeLessThan(200);
  });

  it('the same name again reports the existing execution instead of a second run', async () => {
    const exists = Object.assign(new Error('exists'), { name: 'ExecutionAlreadyExists' });
    const sfn = stubSfn((command) => {
      if (command instanceof StartExecutionCommand) return exists;
      if (command instanceof DescribeExecutionCommand)
        return { status: 'SUCCEEDED', input: JSON.stringify({ input: TICKET }) };
      return {};
    });
    const same = await cli(['start', machine, '--input', JSON.stringify(TICKET), '--name', 'ticket-1'], {
      sfn,
    });
    expect(same.code).toBe(0);
    expect(same.stdout.trim()).toBe(
      'arn:aws:states:us-east-1:123456789012:execution:stepthread-support-triage:ticket-1',
    );
    expect(same.stderr).toContain('already started (SUCCEEDED)');
    expect(sfn.sent.filter((c) => c instanceof StartExecutionCommand)).toHaveLength(1);

    const different = await cli(['start', machine, '--input', '{"other":1}', '--name', 'ticket-1'], { sfn });
    expect(different.code).toBe(1);
    expect(different.stderr).toContain('different input');
  });

  it('needs a deployed target', async () => {
    const { code, stderr } = await cli(['start', 'support-triage']);
    expect(code).toBe(2);
    expect(stderr).toContain('STEPTHREAD_TARGET=aws');
  });
});

describe('stepthread pending / respond (embedded stores, stub Step Functions client)', () => {
  const dataDir = () => join(dir, 'deployed-data');
  const names = { tableName: 'stepthread', bucketName: 'stepthread-conversations' };
  const node = {
    id: 'approve',
    type: 'USER_INTERACTION' as const,
    config: {
      userInteractionType: 'ask_for_approval',
      showMessage: 'Refund {{input.amount}} EUR?',
      outputVariable: 'ok',
    },
    variables: [{ name: 'ok', type: 'boolean' as const, scope: 'thread' as const }],
  };
  let envelope: Envelope;

  /** What the deployed functions do, against the stores the CLI opens (closed again before the CLI runs). */
  async function asTheFunctions<T>(work: (deps: HandlerDeps, clients: AwsClients) => Promise<T>): Promise<T> {
    // A client of the data directory's store server, like every command.
    const services = await openDataDir(dataDir());
    try {
      const clients = createAwsClients(services.target, names);
      const deps = {
        ...createHandlerStores(clients),
        env: { now: () => '2025-01-01T00:00:00.000Z', newId: () => 'id' },
      };
      return await work(deps, clients);
    } finally {
      await services.close();
    }
  }

  /** The `answer` Task after the wait Task: the task result at $.answer, or the Catch's error at $.error. */
  const answerTask = (deps: HandlerDeps, waiting: Envelope, at: { answer?: unknown; error?: unknown }) =>
    dispatch({ action: 'answer', node, envelope: { ...waiting, ...at } }, deps);

  const thread = () =>
    asTheFunctions(async (deps) => (await fullThread(deps.threads, envelope.threadId)).thread);

  beforeAll(async () => {
    // What a deployed run leaves behind: a thread, and the request handler's pending item.
    await asTheFunctions(async (deps) => {
      envelope = (await dispatch(
        {
          action: 'execute',
          node: {
            id: 'start',
            type: 'START',
            workflow: { id: 'refunds', version: 1, maxSteps: 10, variables: [] },
          },
          executionId: 'arn:aws:states:us-east-1:1:execution:stepthread-refunds:r-1',
          input: { input: { amount: 12 } },
        },
        deps,
      )) as Envelope;
      await dispatch({ action: 'execute', node, envelope, taskToken: 'token-1' }, deps);
    });
  });

  it('inspect shows what the waiting thread waits for, its input and variables', async () => {
    const { code, stdout } = await cli(['inspect', envelope.threadId, '--json', '--data-dir', dataDir()]);
    expect(code).toBe(0);
    const [thread] = JSON.parse(stdout).threads;
    expect(thread.input).toEqual({ amount: 12 });
    expect(thread.waitingFor).toEqual([
      expect.objectContaining({
        interactionId: `${envelope.threadId}/approve`,
        type: 'ask_for_approval',
        message: 'Refund 12 EUR?',
        // The data directory this inspect read, which respond must read too.
        answerWith: `stepthread respond ${envelope.threadId}/approve --approve --data-dir ${dataDir()}`,
      }),
    ]);
    const text = await cli(['inspect', envelope.threadId, '--data-dir', dataDir()]);
    expect(text.stdout).toContain('waiting for ask_for_approval at approve "Refund 12 EUR?"');
  });

  it('pending lists the open interaction with how to answer it', async () => {
    const { code, stdout } = await cli(['pending', '--data-dir', dataDir()]);
    expect(code).toBe(0);
    expect(stdout).toContain(`${envelope.threadId}/approve`);
    expect(stdout).toContain('Refund 12 EUR?');
    // Runnable as printed (no `|` or `<text>` for the shell to take), then what else it takes.
    expect(stdout).toContain(
      `  stepthread respond ${envelope.threadId}/approve --approve --data-dir ${dataDir()}\n` +
        "    (or --reject to reject; --reason '<text>' to say why)\n",
    );
    for (const ref of [envelope.executionId, envelope.threadId]) {
      const json = await cli(['pending', ref, '--json', '--data-dir', dataDir()]);
      expect(JSON.parse(json.stdout)).toEqual([
        expect.objectContaining({
          nodeId: 'approve',
          interactionType: 'ask_for_approval',
          threadId: envelope.threadId,
        }),
      ]);
    }
    // An execution whose ARN is a prefix of this one's lists nothing of it: there is none.
    const prefix = await cli([
      'pending',
      envelope.executionId.slice(0, -2),
      '--json',
      '--data-dir',
      dataDir(),
    ]);
    expect(prefix.stdout).toBe('');
    expect(prefix.stderr).toContain('EXECUTION_NOT_FOUND');
  });

  it('with --stack, the respond command inspect and pending print names the stack, so it runs as printed', async () => {
    // Without it, respond would read the local data directory, where no such question is.
    const stack = storeArguments({ stack: 'Agents' });
    expect(stack).toBe(' --stack Agents');
    expect(storeArguments({ stack: "Bob's agents", dataDir: '/tmp/d' })).toBe(
      " --stack 'Bob'\\''s agents' --data-dir /tmp/d",
    );
    const interactionId = `${envelope.threadId}/approve`;
    const report = await asTheFunctions((_deps, clients) =>
      buildInspectReport(createLocalRuntime({ clients }), envelope.threadId, { storeArguments: stack }),
    );
    expect(report.threads[0]!.waitingFor).toEqual([
      expect.objectContaining({ answerWith: `stepthread respond ${interactionId} --approve --stack Agents` }),
    ]);
    const form = { cli: 'stepthread', storeArguments: stack };
    expect(respondCommand({ interactionId, interactionType: 'ask_for_approval' }, form)).toBe(
      `stepthread respond ${interactionId} --approve --stack Agents`,
    );
    expect(respondCommand({ interactionId, interactionType: 'ask_for_selection' }, form)).toBe(
      `stepthread respond ${interactionId} --select 0 --stack Agents`,
    );
    expect(respondCommand({ interactionId, interactionType: 'ask_for_input' }, PLAIN_COMMAND_FORM)).toBe(
      `stepthread respond ${interactionId} --input '"your answer"'`,
    );
  });

  it('pending and resume of an id that names no execution or thread say so, as inspect does (exit 1)', async () => {
    for (const ref of ['nope', 't-nope']) {
      const pending = await cli(['pending', ref, '--data-dir', dataDir()]);
      const inspected = await cli(['inspect', ref, '--data-dir', dataDir()]);
      const resumed = await cli(['resume', ref, '--data-dir', dataDir()]);
      expect(resumed.code).toBe(1);
      expect(resumed.stderr).toContain(pending.stderr.split('\n')[1]!);
      expect(pending.code).toBe(1);
      expect(pending.stdout).toBe('');
      expect(pending.stderr).toContain(
        `EXECUTION_NOT_FOUND: execution or thread ${ref} not found (stepthread runs --data-dir ${dataDir()} lists the executions here)`,
      );
      expect(inspected.stderr).toContain(pending.stderr.split('\n')[1]!);
    }
    // A known id is no error.
    expect((await cli(['pending', envelope.threadId, '--data-dir', dataDir()])).code).toBe(0);
  });

  it('lists open interactions with one Query each, never a Scan', async () => {
    const sent = await asTheFunctions(async (_deps, clients) => {
      const names: string[] = [];
      const dynamo = {
        send: (command: { constructor: { name: string } }) => {
          names.push(command.constructor.name);
          return clients.dynamo.send(command as never);
        },
      } as unknown as AwsClients['dynamo'];
      const store = createInteractionStore({ ...clients, dynamo });
      expect(await store.listOpen()).toHaveLength(1);
      expect(await store.listOpenOfExecution(envelope.executionId)).toHaveLength(1);
      expect(await store.listOpenOfThread(envelope.threadId)).toHaveLength(1);
      return names;
    });
    expect(sent).toEqual(['QueryCommand', 'QueryCommand', 'QueryCommand']);
  });

  it('locally, respond to a question no process waits on says so, coded, with the resume that answers it', async () => {
    const { code, stderr } = await cli([
      'respond',
      envelope.threadId,
      '--reject',
      '--reason',
      'no',
      '--data-dir',
      dataDir(),
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `INTERACTION_NOT_DELIVERED (node approve): no process on this machine is waiting on interaction ${envelope.threadId}/approve`,
    );
    expect(stderr).toContain(
      `stepthread resume ${envelope.executionId} --answers '{"approve":{"approved":false,"reason":"no"}}' --data-dir ${dataDir()}`,
    );
    // Withdrawn: still open, and nothing waits to be taken by a later run.
    const pending = await cli(['pending', envelope.threadId, '--json', '--data-dir', dataDir()]);
    expect(JSON.parse(pending.stdout)).toHaveLength(1);
    const offered = await asTheFunctions(async (deps) => {
      const [open] = await deps.interactions!.listOpenOfThread(envelope.threadId);
      return deps.interactions!.hasLocalReply(open!);
    });
    expect(offered).toBe(false);
  }, 30_000);

  it('respond checks the answer against the interaction type before sending anything', async () => {
    const sfn = stubSfn();
    const { code, stderr } = await cli(
      ['respond', envelope.threadId, '--select', '1', '--data-dir', dataDir()],
      { sfn },
    );
    expect(code).toBe(1);
    expect(stderr).toContain('INVALID_INTERACTION_ANSWER');
    expect(sfn.sent).toEqual([]);
  });

  it('respond --reject only sends SendTaskSuccess with the reply; it writes nothing', async () => {
    const before = await thread();
    const sfn = stubSfn();
    const { code, stdout } = await cli(
      [
        'respond',
        envelope.executionId,
        '--node',
        'approve',
        '--reject',
        '--reason',
        'too much',
        '--data-dir',
        dataDir(),
      ],
      { sfn },
    );
    expect(code).toBe(0);
    expect(stdout).toContain('rejected');
    expect(sfn.sent).toHaveLength(1);
    const success = sfn.sent[0] as SendTaskSuccessCommand;
    expect(success).toBeInstanceOf(SendTaskSuccessCommand);
    expect(success.input.taskToken).toBe('token-1');
    expect(JSON.parse(success.input.output ?? '')).toEqual({
      reply: { kind: 'reject', reason: 'too much' },
      requestedAt: '2025-01-01T00:00:00.000Z',
    });
    // Nothing changed: the thread is as it was and the interaction still waits for its answer Task.
    expect(await thread()).toEqual(before);
    expect(JSON.parse((await cli(['pending', '--json', '--data-dir', dataDir()])).stdout)).toHaveLength(1);
  });

  it('of two racing answers Step Functions takes one; respond reports the other as already answered', async () => {
    // The token is single-use: Step Functions refuses it once the Task has its result.
    const stale = Object.assign(new Error('Task Timed Out'), { name: 'TaskTimedOut' });
    const sfn = stubSfn(() => stale);
    const late = await cli(
      ['respond', `${envelope.threadId}/approve`, '--approve', '--data-dir', dataDir()],
      { sfn },
    );
    expect(late.code).toBe(1);
    expect(late.stderr).toContain('INTERACTION_ALREADY_ANSWERED');
    expect(late.stderr).toContain('already answered');
    expect(late.stderr).toContain('TaskTimedOut');
  });

  it('the answer Task commits the reply, closes the interaction, and respond then reports it answered', async () => {
    const sent = { reply: { kind: 'reject', reason: 'too much' }, requestedAt: '2025-01-01T00:00:00.000Z' };
    const next = (await asTheFunctions((deps) => answerTask(deps, envelope, { answer: sent }))) as Envelope;
    expect(next).toMatchObject({
      threadId: envelope.threadId,
      step: envelope.step + 1,
      last: { nodeId: 'approve', status: 'COMPLETED' },
    });
    expect(next).not.toHaveProperty('answer');
    const answered = await thread();
    expect(answered.variables.thread.ok).toBe(false);
    expect(answered.nodeResults.approve?.output).toEqual({ approved: false, reason: 'too much' });
    expect(JSON.parse((await cli(['pending', '--json', '--data-dir', dataDir()])).stdout)).toEqual([]);

    // respond again: the same answer is reported, not sent; another one is refused. Nothing is sent.
    const sfn = stubSfn();
    const same = await cli(
      [
        'respond',
        `${envelope.threadId}/approve`,
        '--reject',
        '--reason',
        'too much',
        '--json',
        '--data-dir',
        dataDir(),
      ],
      { sfn },
    );
    expect(same.code).toBe(0);
    expect(JSON.parse(same.stdout)).toEqual({
      interactionId: `${envelope.threadId}/approve`,
      result: 'already-answered',
    });
    const other = await cli(
      ['respond', `${envelope.threadId}/approve`, '--approve', '--data-dir', dataDir()],
      { sfn },
    );
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('INTERACTION_ALREADY_ANSWERED');
    expect(sfn.sent).toEqual([]);
  });

  it('respond --fail sends SendTaskFailure; the answer Task records the failure and closes the interaction', async () => {
    const asked = { ...node, id: 'confirm' };
    const waiting = await asTheFunctions(async (deps) => {
      const current = (await deps.threads.getThread(envelope.threadId)).thread.lastEnvelope!;
      await dispatch({ action: 'execute', node: asked, envelope: current, taskToken: 'token-2' }, deps);
      return current;
    });
    const sfn = stubSfn();
    const { code, stdout } = await cli(
      [
        'respond',
        `${envelope.threadId}/confirm`,
        '--fail',
        '--reason',
        'fraud suspected',
        '--data-dir',
        dataDir(),
      ],
      { sfn },
    );
    expect(code).toBe(0);
    expect(stdout).toContain('the run fails');
    const failure = sfn.sent[0] as SendTaskFailureCommand;
    expect(failure).toBeInstanceOf(SendTaskFailureCommand);
    expect(failure.input.taskToken).toBe('token-2');
    const cause = failure.input.cause ?? '';
    expect(JSON.parse(cause)).toEqual({
      code: 'USER_INTERACTION_FAILED',
      message: 'fraud suspected',
      nodeId: 'confirm',
    });

    // The wait Task's Catch puts the failure at $.error; the answer Task commits it as the node's failure.
    const error = { Error: failure.input.error, Cause: cause };
    await expect(
      asTheFunctions((deps) =>
        dispatch({ action: 'answer', node: asked, envelope: { ...waiting, error } }, deps),
      ),
    ).rejects.toMatchObject({ name: 'stepthread.NodeFailed' });
    const stored = await asTheFunctions((deps) =>
      deps.interactions!.getInteraction(envelope.threadId, 'confirm'),
    );
    expect(stored).toMatchObject({
      status: 'FAILED',
      resolution: { outcome: 'FAILED', code: 'USER_INTERACTION_FAILED', reason: 'fraud suspected' },
    });
    expect((await thread()).nodeResults.confirm?.error).toMatchObject({ code: 'USER_INTERACTION_FAILED' });
  });

  it('a timed-out interaction fails the node with INTERACTION_TIMED_OUT and leaves the open list', async () => {
    const asked = { ...node, id: 'late', config: { ...node.config, timeoutSeconds: 60 } };
    await asTheFunctions(async (deps) => {
      // A fresh thread for this one: the previous node failed the other.
      const started = (await dispatch(
        {
          action: 'execute',
          node: {
            id: 'start',
            type: 'START',
            workflow: { id: 'refunds', version: 1, maxSteps: 10, variables: [] },
          },
          executionId: 'arn:aws:states:us-east-1:1:execution:stepthread-refunds:r-2',
          input: { input: { amount: 5 } },
        },
        deps,
      )) as Envelope;
      await dispatch({ action: 'execute', node: asked, envelope: started, taskToken: 'token-3' }, deps);
      expect(await deps.interactions!.listOpenOfExecution(started.executionId)).toHaveLength(1);
      const timeout = { Error: 'States.Timeout', Cause: 'Task timed out' };
      await expect(
        dispatch({ action: 'answer', node: asked, envelope: { ...started, error: timeout } }, deps),
      ).rejects.toMatchObject({
        name: 'stepthread.NodeFailed',
        message: expect.stringContaining('INTERACTION_TIMED_OUT'),
      });
      expect(await deps.interactions!.listOpenOfExecution(started.executionId)).toEqual([]);
      expect(await deps.interactions!.getInteraction(started.threadId, 'late')).toMatchObject({
        status: 'FAILED',
        resolution: { code: 'INTERACTION_TIMED_OUT', reason: 'node late was not answered within 60 s' },
      });
    });
  });
});
