/**
 * Approval of one tool call from the CLI: a run with no terminal stops at the question and `resume
 * --answers` answers it; `respond` answers the run waiting at its prompt in another process; the
 * terminal prompt shows the tool, its arguments and the model's message. The model is the openai
 * provider against a local chat-completions stand-in and the tool an http server on loopback, both
 * counting their requests across the processes.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PendingJson } from '../../cli/commands/pending.ts';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { textReply, toolCallReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { cliProcess } from '../support/cli-process.ts';

let dir: string;
let workflow: string;
let shop: ScriptedServer;
let model: ScriptedServer;
beforeAll(async () => {
  [dir, shop, model] = await Promise.all([
    mkdtemp(join(tmpdir(), 'stepthread-approval-')),
    startScriptedServer(),
    startScriptedServer(),
  ]);
  workflow = join(dir, 'refund.json');
  await writeFile(
    workflow,
    JSON.stringify({
      id: 'refund',
      version: 1,
      profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
      tools: {
        refund: {
          description: 'Refunds an order',
          parameters: {
            type: 'object',
            properties: { order: { type: 'string' }, amount: { type: 'number' } },
            required: ['order', 'amount'],
          },
          handler: { kind: 'http', url: `${shop.url}/refund`, method: 'POST', allowPrivateNetwork: true },
          requiresApproval: 'args.amount > 100',
        },
      },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'agent', type: 'LLM', config: { prompt: 'Refund {{input.order}}.', tools: ['refund'] } },
        { id: 'end', type: 'END', config: { output: '{{nodes.agent}}' } },
      ],
      edges: [
        { from: 'start', to: 'agent' },
        { from: 'agent', to: 'end' },
      ],
    }),
  );
});
afterAll(async () => {
  await Promise.all([shop.close(), model.close(), rm(dir, { recursive: true, force: true })]);
});
beforeEach(() => {
  shop.requests.length = 0;
  model.requests.length = 0;
});

const CALL = { id: 'call_1', name: 'refund', arguments: { order: 'A-1', amount: 250 } };

/** The model asks for the refund (saying so), then answers with `final` once it has the result. */
function scriptModel(final: string): void {
  model.reply(toolCallReply([CALL], undefined, 'Refunding 250 EUR for A-1.'), textReply(final));
}

const run = (dataDir: string, extra: string[] = []) =>
  cliProcess(['run', workflow, '--input', '{"order":"A-1"}', '--data-dir', dataDir, ...extra], { cwd: dir });

/** The tool result messages the model received in its last request. */
function lastToolResults(): string[] {
  const body = model.requests.at(-1)?.body as { messages?: { role: string; content: string }[] } | undefined;
  return (body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content);
}

describe('a run with no terminal stops at a tool call that requires approval', () => {
  it('resume --answers true runs the call once, and the model is not asked the asking turn again', async () => {
    const dataDir = join(dir, 'resume-approve');
    scriptModel('Refunded.');
    const stopped = await run(dataDir);
    expect(stopped.code, stopped.stderr).toBe(1);
    const executionId = /started execution (\S+)/.exec(stopped.stderr)?.[1];
    expect(stopped.stderr).toContain(
      `node agent (ask_for_approval) "Approve the call of tool refund with {"order":"A-1","amount":250}?" needs an answer; the run stops here, and goes on with: stepthread resume ${executionId} --answers '{"agent":true}' --data-dir ${dataDir}`,
    );
    expect(model.requests).toHaveLength(1);
    expect(shop.requests).toHaveLength(0);

    const pendingJson = await cliProcess(['pending', executionId!, '--json', '--data-dir', dataDir], {
      cwd: dir,
    });
    const [open] = JSON.parse(pendingJson.stdout) as PendingJson[];
    expect(open).toMatchObject({
      nodeId: 'agent',
      interactionType: 'ask_for_approval',
      toolCall: {
        id: 'call_1',
        name: 'refund',
        arguments: CALL.arguments,
        message: 'Refunding 250 EUR for A-1.',
      },
    });
    const pending = await cliProcess(['pending', executionId!, '--data-dir', dataDir], { cwd: dir });
    expect(pending.stdout).toContain('  ask_for_approval at node agent of refund\n');
    expect(pending.stdout).toContain(
      '  tool refund (call call_1), arguments: {"order":"A-1","amount":250}\n',
    );
    expect(pending.stdout).toContain('  the model said: "Refunding 250 EUR for A-1."\n');

    const resumed = await cliProcess(
      ['resume', executionId!, '--answers', '{"agent": true}', '--json', '--data-dir', dataDir],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    const result = JSON.parse(resumed.stdout) as RunJsonResult;
    expect(result).toMatchObject({ executionId, status: 'COMPLETED', output: 'Refunded.' });
    expect(shop.requests.map((r) => r.body)).toEqual([CALL.arguments]);
    // Once for the asking turn (before the stop), once for the final reply.
    expect(model.requests).toHaveLength(2);
    expect(result.conversation.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const after = await cliProcess(['pending', executionId!, '--json', '--data-dir', dataDir], { cwd: dir });
    expect(JSON.parse(after.stdout)).toEqual([]);
  }, 120_000);

  it('resume --answers {"reject": true, "reason": …} never calls the tool and hands the model the reason', async () => {
    const dataDir = join(dir, 'resume-reject');
    scriptModel('No refund then.');
    const stopped = await run(dataDir);
    expect(stopped.code, stopped.stderr).toBe(1);
    const executionId = /started execution (\S+)/.exec(stopped.stderr)?.[1];
    const resumed = await cliProcess(
      [
        'resume',
        executionId!,
        '--answers',
        '{"agent": {"reject": true, "reason": "over the refund limit"}}',
        '--json',
        '--data-dir',
        dataDir,
      ],
      { cwd: dir },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'COMPLETED', output: 'No refund then.' });
    expect(shop.requests).toHaveLength(0);
    expect(model.requests).toHaveLength(2);
    const [refusal] = lastToolResults();
    expect(refusal).toContain('did not approve');
    expect(refusal).toContain('over the refund limit');
  }, 120_000);

  it('a call the expression does not hold runs without asking', async () => {
    model.reply(
      toolCallReply([{ ...CALL, arguments: { order: 'A-1', amount: 20 } }]),
      textReply('Refunded 20.'),
    );
    const done = await run(join(dir, 'small-refund'), ['--json']);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ status: 'COMPLETED', output: 'Refunded 20.' });
    expect(shop.requests).toHaveLength(1);
  }, 60_000);
});

/** `run` in this process at a prompt nobody types into; `asked` resolves when it asks. */
function runAtPrompt(dataDir: string) {
  let asked: () => void = () => {};
  const question = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const out = { stdout: '', stderr: '' };
  const io: CliIo = {
    stdout: (text) => {
      out.stdout += text;
    },
    stderr: (text) => {
      out.stderr += text;
    },
    readFile: (path) => readFile(path, 'utf8'),
    env: {},
    cwd: dir,
    prompt: (_question, signal) => {
      asked();
      return new Promise((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    },
  };
  const code = main(
    ['node', 'stepthread', 'run', workflow, '--input', '{"order":"A-1"}', '--json', '--data-dir', dataDir],
    io,
  );
  return { question, code, out };
}

describe('stepthread respond to a run waiting at a tool call’s approval', () => {
  for (const [flags, shopCalls, output] of [
    [['--approve'], 1, 'Refunded.'],
    [['--reject', '--reason', 'not this month'], 0, 'No refund.'],
  ] as const) {
    it(`respond ${flags.join(' ')}: the waiting run takes it and completes`, async () => {
      const dataDir = join(dir, `respond-${flags[0].slice(2)}`);
      scriptModel(output);
      const waiting = runAtPrompt(dataDir);
      await waiting.question;
      // The prompt shows the question with the tool, its arguments and the model's message.
      expect(waiting.out.stderr).toContain(
        '? Approve the call of tool refund with {"order":"A-1","amount":250}?  [agent, ask_for_approval]\n',
      );
      expect(waiting.out.stderr).toContain(
        '  tool refund (call call_1), arguments: {"order":"A-1","amount":250}\n',
      );
      expect(waiting.out.stderr).toContain('  the model said: "Refunding 250 EUR for A-1."\n');
      const pending = await cliProcess(['pending', '--data-dir', dataDir], { cwd: dir });
      const hint = /stepthread respond (\S+) --approve/.exec(pending.stdout);
      expect(hint, pending.stdout).not.toBeNull();
      const responded = await cliProcess(['respond', hint![1]!, ...flags, '--data-dir', dataDir], {
        cwd: dir,
      });
      expect(responded.code, responded.stderr).toBe(0);
      expect(await waiting.code, waiting.out.stderr).toBe(0);
      expect(JSON.parse(waiting.out.stdout)).toMatchObject({ status: 'COMPLETED', output });
      expect(shop.requests).toHaveLength(shopCalls);
      expect(model.requests).toHaveLength(2);
      if (shopCalls === 0) expect(lastToolResults()[0]).toContain('not this month');
    }, 60_000);
  }
});
