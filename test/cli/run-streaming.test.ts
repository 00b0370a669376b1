/**
 * `stepthread run` shows an LLM node's reply as it streams: a real process against an
 * OpenAI-compatible stand-in that holds its last chunk back until the test lets it go. The first
 * words are on stderr, under the node's progress line, while the server still holds the end of the
 * reply; what the run commits is byte for byte what a run with no watcher (`--json`, a plain
 * request) commits, tool calls sent in pieces included. The scripted provider's `streamChunkMs`
 * streams through `run` and `resume` the same way.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldBeforeLastWord, textReply, toolCallReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess, runningCli } from '../support/cli-process.ts';

const REPLY = 'Streams are lists over time, read as they come.';

let dir: string;
let model: ScriptedServer;
beforeAll(async () => {
  [dir, model] = await Promise.all([mkdtemp(join(tmpdir(), 'stepthread-stream-')), startScriptedServer()]);
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

const dataDir = () => join(dir, 'data');
const cli = (...args: string[]) =>
  runCli([...args, '--data-dir', dataDir()], { cwd: dir, env: { STEPTHREAD_DATA_DIR: dataDir() } });

/** start → explain (an LLM node that may call `echo`) → end, on the stand-in. */
async function openAiWorkflow(): Promise<string> {
  const file = join(dir, 'explain.json');
  await writeFile(
    file,
    JSON.stringify({
      id: 'explain',
      version: 1,
      profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
      tools: { echo: { description: 'Says it back', handler: { kind: 'builtin', name: 'echo' } } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'explain', type: 'LLM', config: { prompt: 'What is a stream?', tools: ['echo'] } },
        { id: 'end', type: 'END', config: { output: '{{nodes.explain}}' } },
      ],
      edges: [
        { from: 'start', to: 'explain' },
        { from: 'explain', to: 'end' },
      ],
    }),
  );
  return file;
}

interface Inspected {
  threads: { results: Record<string, unknown> }[];
  conversation: { messages: unknown[] };
}

/** What the run committed: the node results and the conversation, as `inspect --json` reads them. */
async function committed(executionId: string): Promise<string> {
  const { stdout, code } = await cli('inspect', executionId, '--json');
  expect(code).toBe(0);
  const report = JSON.parse(stdout) as Inspected;
  return JSON.stringify({ results: report.threads[0]!.results, messages: report.conversation.messages });
}

const executionOf = (stderr: string) => /started execution (\S+)/.exec(stderr)![1]!;

describe('stepthread run: streamed replies', () => {
  it('prints the first words before the server sends the last chunk, and commits what a plain run commits', async () => {
    const workflow = await openAiWorkflow();
    const reply = textReply(REPLY, { prompt: 11, completion: 9 });
    const held = heldBeforeLastWord(REPLY, { prompt: 11, completion: 9 });
    model.reply(held.reply);
    const run = runningCli(['run', workflow, '--data-dir', dataDir()], { cwd: dir });
    // The first words, under the node's line, while the server holds the end of the reply back.
    await run.after(1, /^ {4}explain │ Streams/gmu);
    expect(held.lastSent()).toBe(false);
    expect(run.stderr()).toMatch(/^ {2}→ explain\n {4}explain │ Streams/mu);
    held.release();
    expect((await run.exited).code).toBe(0);
    const stderr = run.stderr();
    expect(stderr).toContain(`    explain │ ${REPLY}\n  ✓ explain`);
    // Plain text and newlines only: no cursor movement or colour on a stderr that is no terminal.
    expect(stderr).not.toMatch(/[^\P{Cc}\n]/u);
    expect(model.requests.at(-1)?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });

    // The same reply to a run nobody watches: one plain request, the same commit.
    model.reply(reply);
    const plain = await cli('run', workflow, '--json');
    expect(plain.code).toBe(0);
    expect(model.requests.at(-1)?.body).not.toHaveProperty('stream');
    const plainId = (JSON.parse(plain.stdout) as { executionId: string }).executionId;
    expect(await committed(executionOf(stderr))).toBe(await committed(plainId));
  });

  it('assembles tool calls streamed in pieces as a plain request gets them', async () => {
    const workflow = await openAiWorkflow();
    const calls = [
      { id: 'call_1', name: 'echo', arguments: { words: ['a', 'stream'], n: 2 } },
      { id: 'call_2', name: 'echo', arguments: { note: 'second' } },
    ];
    const script = () =>
      model.reply(
        toolCallReply(calls, { prompt: 20, completion: 7 }, 'Echoing first.'),
        textReply('Both echoed.', { prompt: 40, completion: 3 }),
      );
    script();
    const streamed = await cli('run', workflow);
    expect(streamed.code).toBe(0);
    // Each reply of the request on lines of its own.
    expect(streamed.stderr).toContain(
      '    explain │ Echoing first.\n    explain │ Both echoed.\n  ✓ explain',
    );
    script();
    const plain = await cli('run', workflow, '--json');
    const plainId = (JSON.parse(plain.stdout) as { executionId: string }).executionId;
    const streamedCommit = await committed(executionOf(streamed.stderr));
    expect(streamedCommit).toBe(await committed(plainId));
    expect(streamedCommit).toContain('"arguments":{"words":["a","stream"],"n":2}');
  });
});

/** start → ask (a question) → answer (an LLM node whose scripted reply streams) → end. */
async function scriptedWorkflow(): Promise<string> {
  const file = join(dir, 'scripted.json');
  await writeFile(
    file,
    JSON.stringify({
      id: 'scripted-stream',
      version: 1,
      profiles: {
        default: {
          provider: 'scripted',
          streamChunkMs: 5,
          byNode: { answer: ['Scripted replies\nstream too.'] },
        },
      },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'ask_for_approval', showMessage: 'Go on?' },
        },
        { id: 'answer', type: 'LLM', config: { prompt: 'Say something.' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.answer}}' } },
      ],
      edges: [
        { from: 'start', to: 'ask' },
        { from: 'ask', to: 'answer' },
        { from: 'answer', to: 'end' },
      ],
    }),
  );
  return file;
}

describe('the scripted provider streamChunkMs', () => {
  it('streams through run, and through resume after a question', async () => {
    const workflow = await scriptedWorkflow();
    const answered = await cli('run', workflow, '--answers', JSON.stringify({ ask: true }));
    expect(answered.code).toBe(0);
    expect(answered.stderr).toContain(
      '  → answer\n    answer │ Scripted replies\n    answer │ stream too.\n  ✓ answer',
    );

    // A process with no terminal stops at the question, resumably; resume streams the reply.
    const stopped = await cliProcess(['run', workflow, '--data-dir', dataDir()], { cwd: dir });
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).not.toContain('answer │');
    const resumed = await cliProcess(
      [
        'resume',
        executionOf(stopped.stderr),
        '--answers',
        JSON.stringify({ ask: true }),
        '--data-dir',
        dataDir(),
      ],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('    answer │ Scripted replies\n    answer │ stream too.\n  ✓ answer');
  });

  it('prints nothing of it with --json, whose output is the same', async () => {
    const workflow = await scriptedWorkflow();
    const { stdout, stderr, code } = await cli(
      'run',
      workflow,
      '--json',
      '--answers',
      JSON.stringify({ ask: true }),
    );
    expect(code).toBe(0);
    expect(stderr).not.toContain('│');
    expect((JSON.parse(stdout) as { output: unknown }).output).toBe('Scripted replies\nstream too.');
  });
});
