/**
 * A cancelled run, copied as it stopped and run again (`cancel`, then `copy <thread>`, then `run
 * --thread`): the copy stands at the node the run was stopped at — the question it waited on, the model
 * call in flight — whose step left no trace, so its run asks that question again (or calls the model
 * again) and goes on to its end, as a copy of a failed run resumes at its failed node. The first run is
 * a real process with no terminal (it stops at its question) or one held on a model that never answers.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { CopyStartInput } from '../../engine/asl/copy-start.ts';
import { compileWorkflow } from '../../engine/asl/index.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { createAwsClients, releaseAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { createLocalRuntime, type RunOutcome } from '../../functions/local/runtime.ts';
import { putNodeTable } from '../../functions/stores/node-tables.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess, runningCli } from '../support/cli-process.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

let dir: string;
let model: ScriptedServer;
beforeAll(async () => {
  [dir, model] = await Promise.all([
    mkdtemp(join(tmpdir(), 'stepthread-cancel-copy-')),
    startScriptedServer(),
  ]);
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

const dataDir = () => join(dir, 'data');
const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir()], { cwd: dir });

async function workflowFile(name: string, workflow: object): Promise<string> {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(workflow));
  return file;
}

const select = (id: string, showMessage: string) => ({
  id,
  type: 'USER_INTERACTION',
  config: { userInteractionType: 'ask_for_selection', showMessage, options: ['low', 'high'] },
});

/** start → (`before`) → the questions in order → end, which outputs each answer's option. */
function questions(id: string, asked: string[], before: object[] = []): Workflow {
  const nodes = [
    { id: 'start', type: 'START' },
    ...before,
    ...asked.map((node) => select(node, `${node}?`)),
    {
      id: 'end',
      type: 'END',
      config: { output: Object.fromEntries(asked.map((node) => [node, `{{nodes.${node}.option}}`])) },
    },
  ];
  const ids = nodes.map((node) => (node as { id: string }).id);
  return {
    id,
    version: 1,
    nodes,
    edges: ids.slice(1).map((to, i) => ({ from: ids[i]!, to })),
  } as Workflow;
}

/** Runs `file` as a process with no terminal: it stops at its first unanswered question and exits. */
async function runStoppingAtQuestion(file: string, answers?: object) {
  const stopped = await cliProcess(
    ['run', file, ...(answers ? ['--answers', JSON.stringify(answers)] : []), '--data-dir', dataDir()],
    { cwd: dir, env: { STEPTHREAD_DATA_DIR: '' } },
  );
  expect(stopped.stderr).toContain('needs an answer; the run stops here');
  const [, executionId, threadId] = /started execution (\S+) \(thread (\S+)\)/.exec(stopped.stderr)!;
  return { executionId: executionId!, threadId: threadId! };
}

/** The copy's node runs, as `inspect --json` lists them: its source's marked `(copied)`. */
async function nodeRuns(copyId: string): Promise<string[]> {
  const inspected = JSON.parse((await cli('inspect', copyId, '--json')).stdout) as {
    threads: { nodes: { nodeId: string; copied?: boolean }[] }[];
  };
  return inspected.threads[0]!.nodes.map((node) => `${node.nodeId}${node.copied ? ' (copied)' : ''}`);
}

/** `cancel`, then `copy` of its thread as it stopped: the copy's id. */
async function cancelAndCopy(executionId: string, threadId: string): Promise<string> {
  const cancelled = await cli('cancel', executionId);
  expect(cancelled.code, cancelled.stderr).toBe(0);
  const copied = await cli('copy', threadId);
  expect(copied.code, copied.stderr).toBe(0);
  return copied.stdout.trim();
}

describe('a cancelled run copied as it stopped', () => {
  it('cancelled at its first question: the copy asks it again and completes once answered', async () => {
    const file = await workflowFile('first-question', questions('first-question', ['choose']));
    const { executionId, threadId } = await runStoppingAtQuestion(file);
    const copyId = await cancelAndCopy(executionId, threadId);

    const ran = await cli('run', file, '--thread', copyId, '--answers', '{"choose": 1}');
    expect(ran.stderr).toContain(`running thread ${copyId} from node choose\n`);
    expect(ran.code, ran.stderr).toBe(0);
    const json = await cli('inspect', copyId, '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ executionStatus: 'COMPLETED' });
    // START is its source's step; the question and END are its own, each run once.
    expect(await nodeRuns(copyId)).toEqual(['start (copied)', 'choose', 'end']);
    const output = JSON.parse(json.stdout).threads[0].output;
    expect(output).toEqual({ choose: 'high' });
  }, 90_000);

  it('cancelled at a later question: the copy asks that one again, not the one answered before it', async () => {
    const file = await workflowFile(
      'later-question',
      questions(
        'later-question',
        ['first', 'second'],
        [{ id: 'prepare', type: 'CODE', config: { code: 'return 1' } }],
      ),
    );
    const { executionId, threadId } = await runStoppingAtQuestion(file, { first: 0 });
    const copyId = await cancelAndCopy(executionId, threadId);

    // Only the stopped question is answered: `first` is not asked again (it would fail unanswered).
    const ran = await cli('run', file, '--thread', copyId, '--answers', '{"second": 1}', '--json');
    expect(ran.code, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout) as RunJsonResult).toMatchObject({
      threadId: copyId,
      status: 'COMPLETED',
      output: { first: 'low', second: 'high' },
    });
    expect(await nodeRuns(copyId)).toEqual([
      'start (copied)',
      'prepare (copied)',
      'first (copied)',
      'second',
      'end',
    ]);
  }, 90_000);

  it('cancelled during its first model call: the copy calls the model again and completes', async () => {
    const file = await workflowFile('essay', {
      id: 'essay',
      version: 1,
      profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'write', type: 'LLM', config: { prompt: 'Write a long essay.' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.write}}' } },
      ],
      edges: [
        { from: 'start', to: 'write' },
        { from: 'write', to: 'end' },
      ],
    });
    // The reply never comes: the server holds its first chunk until the cancel closes the call.
    model.reply({ ...textReply('never sent'), beforeChunk: () => new Promise(() => {}) });
    const before = model.requests.length;
    const run = runningCli(['run', file, '--data-dir', dataDir()], { cwd: dir });
    await vi.waitFor(() => expect(model.requests).toHaveLength(before + 1), {
      timeout: 30_000,
      interval: 50,
    });
    const [, executionId, threadId] = /started execution (\S+) \(thread (\S+)\)/.exec(run.stderr())!;
    const copyId = await cancelAndCopy(executionId!, threadId!);
    expect((await run.exited).code).toBe(1);

    model.reply(textReply('A short essay.'));
    const ran = await cli('run', file, '--thread', copyId, '--json');
    expect(ran.code, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout)).toMatchObject({ status: 'COMPLETED', output: 'A short essay.' });
    expect(await nodeRuns(copyId)).toEqual(['start (copied)', 'write', 'end']);
    expect(model.requests).toHaveLength(before + 2);
  }, 90_000);

  it('on a stack (`copy --stack`, `start --thread`): the copy starts at the question its run was cancelled at', async () => {
    const workflow = questions(
      'on-stack',
      ['choose'],
      [{ id: 'prepare', type: 'CODE', config: { code: 'return 1' } }],
    );
    const file = await workflowFile('on-stack', workflow);
    const { executionId, threadId } = await runStoppingAtQuestion(file);
    const cancelled = await cli('cancel', executionId);
    expect(cancelled.code, cancelled.stderr).toBe(0);

    // The stack: its state machine is the workflow as deploy compiles it, its node table in the bucket.
    const compiled = compileWorkflow(workflow);
    await withStores(async (clients) => {
      await putNodeTable(clients.s3, clients.bucketName, compiled.nodeTable);
    });
    const machine = 'arn:aws:states:us-east-1:123456789012:stateMachine:stepthread-on-stack';
    let ran: RunOutcome | undefined;
    const sfn = recordingSfn(async (name, input) => {
      switch (name) {
        case 'DescribeExecutionCommand':
          return { executionArn: input.executionArn, stateMachineArn: machine, status: 'ABORTED' };
        case 'DescribeStateMachineCommand':
          return { definition: JSON.stringify(compiled.definition) };
        case 'ListStateMachinesCommand':
          return {
            stateMachines: [{ name: 'stepthread-on-stack', stateMachineArn: machine, type: 'STANDARD' }],
          };
        case 'StartExecutionCommand': {
          // As the state machine would: its entry claims the copy and jumps to its node's Task.
          const start = JSON.parse(String(input.input)) as CopyStartInput;
          ran = await withStores((clients) =>
            createLocalRuntime({ clients })
              .prepare(workflow)
              .startThread(start.resume.envelope.threadId, {
                executionId: `${machine}:${String(input.name)}`,
                answerInteraction: async () => ({ kind: 'select', choice: 1 }),
              }),
          );
          return { executionArn: `${machine}:${String(input.name)}` };
        }
        default:
          throw new Error(`unexpected ${name}`);
      }
    });
    const onStack = (...args: string[]) =>
      runCli([...args, '--data-dir', dataDir()], { cwd: dir, services: { sfn } });

    const copied = await onStack('copy', threadId);
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim();
    // `start` takes no --data-dir (it is for a deployed stack): the stand-in's table is the directory's.
    const started = await runCli(['start', 'on-stack', '--thread', copyId], {
      cwd: dir,
      services: { sfn },
      env: { ...process.env, STEPTHREAD_DATA_DIR: dataDir() },
    });
    expect(started.stderr).toBe(`starting thread ${copyId} from node choose\n`);
    expect(started.code).toBe(0);
    const startInput = JSON.parse(
      String(sfn.sent.find((sent) => sent.name === 'StartExecutionCommand')!.input.input),
    ) as CopyStartInput;
    expect(startInput.resume).toMatchObject({ copy: true, node: { id: 'choose', type: 'USER_INTERACTION' } });
    expect(ran).toMatchObject({ status: 'COMPLETED', output: { choose: 'high' } });
  }, 90_000);
});

/** The data directory's stores, opened while `work` runs (as a stack's table and bucket). */
async function withStores<T>(work: (clients: ReturnType<typeof createAwsClients>) => Promise<T>): Promise<T> {
  const services = await openDataDir(dataDir(), { create: false });
  try {
    return await work(createAwsClients(services.target, services.names));
  } finally {
    releaseAwsClients(services.target);
    await services.close();
  }
}
