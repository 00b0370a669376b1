/**
 * More features in combination, through the CLI on the embedded runtime (see combinations.test.ts for
 * the first round): a SUBGRAPH inside a SUBGRAPH, LLM tools in fork branches and loops, budgets across
 * forks and subgraphs, copies from inside a loop, context processors in loops, and a fork in a loop
 * that continues as new. Each expectation is worked out from the seeds and docs/workflow-file.md.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';
import { startMcpServer } from '../support/mcp-server.ts';
import { node, type WorkflowSpec, workflow } from './combination-workflows.ts';

let dir: string;
let dataDir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-combinations-2-'));
  dataDir = join(dir, 'data');
});
afterAll(() => rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));

interface Msg {
  role: string;
  content: string;
}
interface ThreadJson {
  threadId: string;
  forkPathId?: string;
  status: string;
  output: unknown;
  results: Record<string, unknown>;
  variables: { global?: Record<string, unknown>; thread?: Record<string, unknown> };
  errors: { code: string; message: string; nodeId?: string }[];
  events: { type: string; nodeId?: string; [key: string]: unknown }[];
  nodes: { nodeId: string; status: string; step?: number }[];
}
interface InspectJson {
  executionStatus: string;
  rootThreadId: string;
  threads: ThreadJson[];
  conversations: { threadId: string; messages: Msg[] }[];
}

async function cli(args: string[]) {
  return runCli([...args, '--data-dir', dataDir], { cwd: dir });
}

async function inspect(id: string): Promise<InspectJson> {
  const shown = await cli(['inspect', id, '--json', '--events', '--all-conversations']);
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as InspectJson;
}

async function fileOf(id: string, spec: WorkflowSpec): Promise<string> {
  const file = join(dir, `${id}.json`);
  await writeFile(file, JSON.stringify(workflow(id, spec)));
  return file;
}

/**
 * `stepthread run <file> --json [...]`: its result and what inspect shows of it. In this process,
 * unless `process`: a run that stops at a question needs a process to exit.
 */
async function run(id: string, spec: WorkflowSpec, extra: string[] = [], process = false) {
  const file = await fileOf(id, spec);
  const args = ['run', file, '--json', ...extra];
  const done = process ? await cliProcess([...args, '--data-dir', dataDir], { cwd: dir }) : await cli(args);
  expect(done.stdout, done.stderr).not.toBe('');
  const result = JSON.parse(done.stdout) as RunJsonResult;
  const report = await inspect(result.executionId);
  const root = report.threads.find((thread) => thread.threadId === report.rootThreadId)!;
  const conversation = (threadId = report.rootThreadId) =>
    report.conversations
      .find((entry) => entry.threadId === threadId)!
      .messages.map((message) => `${message.role}: ${message.content}`);
  return { file, code: done.code, result, report, root, conversation };
}

describe('a SUBGRAPH inside a SUBGRAPH', () => {
  const inner = {
    id: 'inner',
    version: 1,
    variables: [{ name: 'b', type: 'number', scope: 'thread' }],
    nodes: [
      node.start(),
      {
        ...node.llm('ask', 'inner b={{b}} a={{a}} t={{t}}'),
        hooks: [{ hookType: 'AFTER_EXECUTE', eventName: 'ask-after' }],
      },
      node.set('bump', 'g', 'number', 'g + b'),
      node.end('{{b}}-{{nodes.ask}}'),
    ],
    edges: [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'bump' },
      { from: 'bump', to: 'end' },
    ],
  };
  const outer = {
    id: 'outer',
    version: 1,
    variables: [
      { name: 'a', type: 'number', scope: 'thread' },
      { name: 'fromInner', type: 'string', scope: 'thread' },
    ],
    nodes: [
      node.start(),
      node.llm('pre', 'outer a={{a}} t={{t}}'),
      {
        ...node.subgraph('inner', inner, {
          inputMapping: { b: 'a * 10' },
          outputMapping: { fromInner: 'output' },
        }),
        hooks: [
          { hookType: 'AFTER_EXECUTE', eventName: 'inner-after', eventPayload: { o: '{{result.output}}' } },
        ],
      },
      node.end({ r: '{{fromInner}}|{{a}}' }),
    ],
    edges: [
      { from: 'start', to: 'pre' },
      { from: 'pre', to: 'inner' },
      { from: 'inner', to: 'end' },
    ],
  };
  const spec: WorkflowSpec = {
    variables: [
      { name: 'g', type: 'number', scope: 'global', initial: 0 },
      { name: 't', type: 'string', scope: 'thread', initial: 'root' },
      { name: 'res', type: 'string', scope: 'thread' },
    ],
    replies: { 'outer.pre': ['outer reply'], 'outer.inner.ask': ['inner reply'] },
    nodes: [
      node.start(),
      {
        ...node.subgraph('outer', outer, {
          inputMapping: { a: 'input.x + 1' },
          outputMapping: { res: 'output.r' },
        }),
        hooks: [
          { hookType: 'BEFORE_EXECUTE', eventName: 'outer-before' },
          { hookType: 'AFTER_EXECUTE', eventName: 'outer-after', eventPayload: { o: '{{result.output}}' } },
        ],
      },
      node.end({ res: '{{res}}', g: '{{g}}', outer: '{{nodes.outer}}' }),
    ],
    edges: ['start>outer>end'],
  };

  it('maps at each level; the inner child reads its caller’s variables; ids and hooks are `<outer>.<inner>.<node>`', async () => {
    const seen = await run('nested-subgraphs', spec, ['--input', '{"x": 2}']);
    expect(seen.result.status).toBe('COMPLETED');
    // The inner child reads `a`, which the outer child's inputMapping set (validation accepts it).
    expect(seen.conversation()).toEqual([
      'user: outer a=3 t=root',
      'assistant: outer reply',
      'user: inner b=30 a=3 t=root',
      'assistant: inner reply',
    ]);
    expect(seen.result.output).toEqual({ res: '30-inner reply|3', g: 30, outer: { r: '30-inner reply|3' } });
    // Only outputMappings and globals carry values out: neither child's variables reach the thread.
    expect(seen.root.variables.thread).toEqual({ t: 'root', res: '30-inner reply|3' });
    expect(seen.root.variables.global).toEqual({ g: 30 });
    expect(seen.root.nodes.map((entry) => entry.nodeId)).toEqual([
      'start',
      'outer',
      'outer.start',
      'outer.pre',
      'outer.inner',
      'outer.inner.start',
      'outer.inner.ask',
      'outer.inner.bump',
      'outer.inner.end',
      'outer.end',
      'end',
    ]);
    const hooks = seen.root.events
      .filter((event) => event.type === 'HOOK_TRIGGERED')
      .map((event) => `${event.nodeId} ${String(event.eventName)} ${JSON.stringify(event.payload)}`);
    expect(hooks).toEqual([
      'outer.start outer-before {}',
      'outer.inner.ask ask-after {}',
      'outer.inner.end inner-after {"o":"30-inner reply"}',
      'outer.end outer-after {"o":{"r":"30-inner reply|3"}}',
    ]);
  });
  it('copy --from a node of the inner child, with --set: the copy holds both frames and runs to the end', async () => {
    const seen = await run('nested-subgraphs-copy', spec, ['--input', '{"x": 2}']);
    const copied = await cli([
      'copy',
      seen.result.threadId,
      '--from',
      'outer.inner.ask',
      '--set',
      't="edited"',
    ]);
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim().split('\n').at(-1)!;
    // A child's variable is no thread or global variable of the workflow: --set refuses it.
    const refused = await cli(['copy', seen.result.threadId, '--from', 'outer.inner.ask', '--set', 'a=5']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('UNKNOWN_VARIABLE_REFERENCE');
    const ran = await cli(['run', seen.file, '--thread', copyId, '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    const result = JSON.parse(ran.stdout) as RunJsonResult & { conversation: Msg[] };
    expect(result.output).toEqual({ res: '30-inner reply|3', g: 30, outer: { r: '30-inner reply|3' } });
    expect(result.conversation.map((message) => message.content)).toEqual([
      'outer a=3 t=root',
      'outer reply',
      'inner b=30 a=3 t=edited',
      'inner reply',
    ]);
  });
});

interface NodeUsage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
}
interface CostJson {
  executionId: string;
  cost: { modelCalls: number; tokens: number; toolCalls: number };
  threads: { forkPathId?: string; nodes: { nodeId: string; usage?: NodeUsage }[] }[];
}

async function costOf(executionId: string): Promise<CostJson> {
  const shown = await cli(['inspect', executionId, '--json']);
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as CostJson;
}

/** Each LLM step's usage as `<path>:<node> <calls> calls <tokens>`, and their sum. */
function stepUsages(report: CostJson) {
  const rows: string[] = [];
  let tokens = 0;
  let calls = 0;
  for (const thread of report.threads) {
    for (const entry of thread.nodes) {
      if (!entry.usage) continue;
      rows.push(`${thread.forkPathId ?? 'root'}:${entry.nodeId} ${entry.usage.modelCalls} calls`);
      tokens += entry.usage.inputTokens + entry.usage.outputTokens;
      calls += entry.usage.modelCalls;
    }
  }
  return { rows, tokens, calls };
}

const tools = {
  double: {
    description: 'Doubles a number',
    parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    handler: { kind: 'code', code: 'return { d: input.n * 2 }' },
  },
  refund: {
    description: 'Refunds an amount',
    parameters: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    handler: { kind: 'code', code: 'return { refunded: input.amount }' },
    requiresApproval: 'args.amount > 50',
  },
};

describe('LLM tools in fork branches and in a loop', () => {
  const spec: WorkflowSpec = {
    tools,
    replies: {
      a: [{ toolCalls: [{ name: 'double', arguments: { n: 4 } }] }, 'a done'],
      b: [
        {
          toolCalls: [
            { name: 'refund', arguments: { amount: 10 } },
            { name: 'refund', arguments: { amount: 80 } },
          ],
        },
        'b done',
      ],
      l: [
        { toolCalls: [{ name: 'double', arguments: { n: 1 } }] },
        'l0',
        { toolCalls: [{ name: 'double', arguments: { n: 2 } }] },
        'l1',
      ],
    },
    nodes: [
      node.start(),
      node.fork('fork', ['pa', 'pb'], ['a', 'b']),
      node.llm('a', 'A', { tools: ['double'] }),
      node.llm('b', 'B', { tools: ['refund'] }),
      node.join('join', ['pa', 'pb'], 'ALL_COMPLETED'),
      node.loop('loop', 'L', { dataSource: 2 }),
      node.llm('l', 'L{{index}}', { tools: ['double'] }),
      node.loopEnd('le', 'L'),
      node.end({ join: '{{nodes.join}}', l: '{{nodes.l}}' }),
    ],
    edges: ['start>fork', 'fork>a>join', 'fork>b>join', 'join>loop>l>le>end'],
  };

  it('a held call in a branch is answered by --answers; each step counts every model call of its turn, those before the question too', async () => {
    const seen = await run('tools-in-branches', spec, [
      '--answers',
      '{"b": {"reject": true, "reason": "too much"}}',
    ]);
    expect(seen.result.status).toBe('COMPLETED');
    expect(seen.result.output).toEqual({ join: { pa: 'a done', pb: 'b done' }, l: 'l1' });
    const pathB = seen.report.threads.find((thread) => thread.forkPathId === 'fork/pb')!;
    expect(seen.conversation(pathB.threadId).slice(2)).toEqual([
      'tool: {"refunded":10}',
      'tool: Rejected: a person did not approve this call of refund, so the tool did not run. Reason: too much',
      'assistant: b done',
    ]);
    // The main path's conversation goes on into the loop, where each iteration's tool call is its own.
    expect(seen.conversation().filter((line) => line.startsWith('tool:'))).toEqual([
      'tool: {"d":8}',
      'tool: {"d":2}',
      'tool: {"d":4}',
    ]);
    const report = await costOf(seen.result.executionId);
    // The rejected call never ran, so it is no tool call.
    expect(report.cost).toMatchObject({ modelCalls: 8, toolCalls: 4 });
    const steps = stepUsages(report);
    expect(steps.rows.sort()).toEqual([
      'fork/pa:a 2 calls',
      'fork/pb:b 2 calls',
      'root:l 2 calls',
      'root:l 2 calls',
    ]);
    expect({ calls: steps.calls, tokens: steps.tokens }).toEqual({
      calls: report.cost.modelCalls,
      tokens: report.cost.tokens,
    });
  });
});

describe('a run’s budget across forks and subgraphs', () => {
  it('maxToolCalls counts the calls of every branch and of a SUBGRAPH’s nodes; the call past it is refused there', async () => {
    const seen = await run('budget-tool-calls', {
      budget: { maxToolCalls: 3 },
      tools: { double: tools.double },
      replies: {
        a: [{ toolCalls: [{ name: 'double', arguments: { n: 1 } }] }, 'a done'],
        b: [{ toolCalls: [{ name: 'double', arguments: { n: 2 } }] }, 'b done'],
        'sub.x': [
          {
            toolCalls: [
              { name: 'double', arguments: { n: 3 } },
              { name: 'double', arguments: { n: 4 } },
            ],
          },
          'x done',
        ],
      },
      nodes: [
        node.start(),
        node.fork('fork', ['pa', 'pb'], ['a', 'b'], 'serial'),
        node.llm('a', 'A', { tools: ['double'] }),
        node.llm('b', 'B', { tools: ['double'] }),
        node.join('join', ['pa', 'pb'], 'ALL_COMPLETED'),
        node.subgraph('sub', {
          id: 's',
          version: 1,
          nodes: [node.start(), node.llm('x', 'X', { tools: ['double'] }), node.end('{{nodes.x}}')],
          edges: [
            { from: 'start', to: 'x' },
            { from: 'x', to: 'end' },
          ],
        }),
        node.end(),
      ],
      edges: ['start>fork', 'fork>a>join', 'fork>b>join', 'join>sub>end'],
    });
    expect(seen.code).toBe(1);
    expect(seen.result.error).toMatchObject({ code: 'BUDGET_EXCEEDED', nodeId: 'sub.x' });
    expect(seen.result.error?.message).toContain(
      "the run's budget maxToolCalls 3 is spent (3 tool calls so far)",
    );
    const types = seen.root.events.map((event) => `${event.type} ${event.nodeId ?? ''}`.trim());
    expect(types.filter((type) => /BUDGET|FAILED/.test(type))).toEqual([
      'BUDGET_WARNING sub.x',
      'NODE_FAILED sub.x',
      'NODE_FAILED sub',
      'THREAD_FAILED',
    ]);
    expect((await costOf(seen.result.executionId)).cost.toolCalls).toBe(3);
  });

  const crossing = 'a reply long enough to take the run past its forty tokens in one call, '.repeat(3);
  const forkSpec = (joinStrategy: string): WorkflowSpec => ({
    budget: { maxTokens: 40 },
    replies: { b: [crossing], after: ['never'] },
    nodes: [
      node.start(),
      node.fork('fork', ['pb', 'pa'], ['b', 'a'], 'serial'),
      node.llm('b', 'B'),
      node.code('a', "return 'code a'"),
      node.join('join', ['pb', 'pa'], joinStrategy, { mainPathId: 'pa' }),
      node.llm('after', 'after'),
      node.end(),
    ],
    edges: ['start>fork', 'fork>b>join', 'fork>a>join', 'join>after>end'],
  });

  it('a branch that crosses maxTokens fails; ANY_COMPLETED succeeds on the other, and the next model call is refused', async () => {
    const seen = await run('budget-any-completed', forkSpec('ANY_COMPLETED'));
    expect(seen.code).toBe(1);
    expect(seen.root.results.join).toBe('code a');
    expect(seen.result.error).toMatchObject({ code: 'BUDGET_EXCEEDED', nodeId: 'after' });
    expect(seen.result.error?.message).toContain('the model call was not started');
    const pathB = seen.report.threads.find((thread) => thread.forkPathId === 'fork/pb')!;
    expect(pathB.errors[0]).toMatchObject({ code: 'BUDGET_EXCEEDED', nodeId: 'b' });
    expect(pathB.events.some((event) => event.type === 'BUDGET_WARNING')).toBe(true);
  });

  it('under ALL_COMPLETED the run fails with JOIN_FAILED, naming the branch’s BUDGET_EXCEEDED', async () => {
    const seen = await run('budget-all-completed', forkSpec('ALL_COMPLETED'));
    expect(seen.code).toBe(1);
    expect(seen.result.error).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'join' });
    expect(seen.result.error?.message).toContain('path "pb": BUDGET_EXCEEDED at node b');
  });
});

describe('cancel of a run waiting at a question inside a SUBGRAPH or a fork branch, then a copy', () => {
  /** Cancels the run, copies its root thread (no --from) and runs the copy with `answers`. */
  async function cancelCopyRun(file: string, threadId: string, answers: unknown) {
    const cancelled = await cli(['cancel', threadId, '--reason', 'wrong prompt', '--json']);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    const copied = await cli(['copy', threadId]);
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim().split('\n').at(-1)!;
    const ran = await cli(['run', file, '--thread', copyId, '--answers', JSON.stringify(answers), '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    return {
      cancelled: JSON.parse(cancelled.stdout) as { threadsCancelled: number; interactionsClosed: number },
      copy: JSON.parse(ran.stdout) as RunJsonResult,
    };
  }

  it('in a SUBGRAPH: the copy stands at the question (sub.q), keeps the global the run changed, and asks again', async () => {
    const seen = await run(
      'cancel-in-subgraph',
      {
        variables: [
          { name: 'g', type: 'number', scope: 'global', initial: 0 },
          { name: 'answer', type: 'any' },
        ],
        nodes: [
          node.start(),
          node.set('bump', 'g', 'number', 'g + 1'),
          node.subgraph(
            'sub',
            {
              id: 's',
              version: 1,
              variables: [{ name: 'who', type: 'string' }],
              nodes: [
                node.start(),
                node.ask('q', 'ask_for_input', { showMessage: 'Name for {{who}}?' }),
                node.end('{{nodes.q}}'),
              ],
              edges: [
                { from: 'start', to: 'q' },
                { from: 'q', to: 'end' },
              ],
            },
            { inputMapping: { who: "'ada'" }, outputMapping: { answer: 'output' } },
          ),
          node.end({ answer: '{{answer}}', g: '{{g}}' }),
        ],
        edges: ['start>bump>sub>end'],
      },
      [],
      true,
    );
    expect(seen.result.status).toBe('INTERRUPTED');
    expect(seen.result.error).toMatchObject({ code: 'USER_INPUT_REQUIRED', nodeId: 'sub.q' });
    const done = await cancelCopyRun(seen.file, seen.result.threadId, { 'sub.q': 'Bob' });
    expect(done.cancelled).toMatchObject({ threadsCancelled: 1, interactionsClosed: 1 });
    expect(done.copy.status).toBe('COMPLETED');
    expect(done.copy.output).toEqual({ answer: 'Bob', g: 1 });
    const copyReport = await inspect(done.copy.executionId);
    const copyRoot = copyReport.threads.find((thread) => thread.threadId === copyReport.rootThreadId)!;
    // The copy holds its source's history; after THREAD_COPIED, bump is not run again and sub.q asks again.
    const after = copyRoot.events.slice(copyRoot.events.findIndex((event) => event.type === 'THREAD_COPIED'));
    expect(
      after
        .filter((event) => ['VARIABLE_CHANGED', 'USER_INTERACTION_REQUESTED'].includes(event.type))
        .map((event) => `${event.type} ${event.nodeId}`),
    ).toEqual(['USER_INTERACTION_REQUESTED sub.q', 'VARIABLE_CHANGED sub.end']);
  });

  it('in a fork branch: every thread is cancelled; the copy stands at the FORK and runs both branches again', async () => {
    const seen = await run(
      'cancel-in-branch',
      {
        variables: [{ name: 'g', type: 'number', scope: 'global', initial: 0 }],
        replies: { b: ['b reply', 'b reply again'] },
        nodes: [
          node.start(),
          node.fork('fork', ['pa', 'pb'], ['q', 'b']),
          node.ask('q', 'ask_for_approval', { showMessage: 'ok?' }),
          node.llm('b', 'B'),
          node.set('bump', 'g', 'number', 'g + 1'),
          node.join('join', ['pa', 'pb'], 'ALL_COMPLETED'),
          node.end({ join: '{{nodes.join}}', g: '{{g}}' }),
        ],
        edges: ['start>fork', 'fork>q>join', 'fork>b>bump>join', 'join>end'],
      },
      [],
      true,
    );
    expect(seen.result.status).toBe('INTERRUPTED');
    const done = await cancelCopyRun(seen.file, seen.result.threadId, { q: true });
    expect(done.cancelled).toMatchObject({ threadsCancelled: 3, interactionsClosed: 1 });
    expect(done.copy.status).toBe('COMPLETED');
    expect(done.copy.output).toEqual({ join: { pa: { approved: true }, pb: 1 }, g: 1 });
    const source = await inspect(seen.result.executionId);
    expect(source.threads.map((thread) => thread.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
  });
});

describe('CONTEXT_PROCESSOR in a loop, then an LLM (seed 004: the log is kept, the visible list edited)', () => {
  it('truncate keepLast and insert at 0 in each iteration, a filter by role after: each request holds the visible messages', async () => {
    const model = await startScriptedServer();
    try {
      model.reply(textReply('A0'), textReply('A1'), textReply('A2'), textReply('AF'));
      const seen = await run('context-in-loop', {
        profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
        nodes: [
          node.start(),
          node.loop('loop', 'L', { dataSource: 3 }),
          node.llm('ask', 'Q{{index}}'),
          node.context('keep', 'truncate', { keepLast: 3 }),
          node.context('note', 'insert', {
            position: 0,
            messages: [{ role: 'system', content: 'N{{index}}' }],
          }),
          node.loopEnd('le', 'L'),
          node.context('only', 'filter', { roles: ['system', 'user'] }),
          node.llm('final', 'F'),
          node.end('{{nodes.final}}'),
        ],
        edges: ['start>loop>ask>keep>note>le>only>final>end'],
      });
      expect(seen.result.status, JSON.stringify(seen.result.error)).toBe('COMPLETED');
      const sent = model.requests.map((request) =>
        (request.body as { messages: Msg[] }).messages.map(
          (message) => `${message.role}: ${message.content}`,
        ),
      );
      expect(sent).toEqual([
        ['user: Q0'],
        ['system: N0', 'user: Q0', 'assistant: A0', 'user: Q1'],
        ['system: N1', 'assistant: A0', 'user: Q1', 'assistant: A1', 'user: Q2'],
        ['system: N2', 'user: Q2', 'user: F'],
      ]);
      expect(seen.conversation()).toEqual(['system: N2', 'user: Q2', 'user: F', 'assistant: AF']);
      const counts = seen.root.events
        .filter((event) => event.type === 'CONTEXT_PROCESSED')
        .map((event) => `${event.nodeId}`);
      expect(counts).toEqual(['keep', 'note', 'keep', 'note', 'keep', 'note', 'only']);
      // messageCount is seed 003's getMessages().length: the visible messages (seed 004), not the log.
      expect(seen.root.results.only).toEqual({ operation: 'filter', messageCount: 2, visibleCount: 2 });
    } finally {
      await model.close();
    }
  });
});

describe('copy --from a node inside a loop, with --set; diff; rerun --failed', () => {
  const loopSpec: WorkflowSpec = {
    variables: [{ name: 'total', type: 'number', initial: 0 }],
    nodes: [
      node.start(),
      node.loop('loop', 'L', { dataSource: [1, 2, 3] }),
      node.set('add', 'total', 'number', 'total + item'),
      node.code(
        'check',
        "if (input.total > 5) throw new Error('too big: ' + input.total); return input.total",
      ),
      node.loopEnd('le', 'L'),
      node.end({ total: '{{total}}' }),
    ],
    edges: ['start>loop>add>check>le>end'],
  };

  it('copies from the node’s latest run (the last iteration), edited; diff parts there; rerun does the same for each failed run', async () => {
    const seen = await run('copy-in-loop', loopSpec);
    expect(seen.result.error).toMatchObject({ code: 'CODE_ERROR', nodeId: 'check' });
    const source = seen.result.threadId;
    const copied = await cli(['copy', source, '--from', 'add', '--set', 'total=0']);
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim().split('\n').at(-1)!;
    const before = (await inspect(copyId)).threads[0]!;
    // Just before add's third run: the loop frame holds the third item, total as edited.
    expect(before.nodes.map((entry) => entry.nodeId)).toEqual([
      'start',
      ...['loop', 'add', 'check', 'le'],
      ...['loop', 'add', 'check', 'le'],
      'loop',
    ]);
    expect(before.variables.thread).toEqual({ total: 0 });
    const ran = await cli(['run', seen.file, '--thread', copyId, '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    expect((JSON.parse(ran.stdout) as RunJsonResult).output).toEqual({ total: 3 });

    const diff = await cli(['diff', source, copyId, '--json']);
    expect(diff.code, diff.stderr).toBe(0);
    const report = JSON.parse(diff.stdout) as {
      sharedSteps: number;
      sameUpTo: { position: number; nodeId: string };
      partsAt: {
        reason: string;
        a: { nodeId: string; output: unknown };
        b: { nodeId: string; output: unknown };
      };
      variables: { scope: string; name: string; a?: unknown; b?: unknown }[];
    };
    expect(report.sharedSteps).toBe(10);
    expect(report.sameUpTo).toEqual({ position: 10, nodeId: 'loop' });
    expect(report.partsAt).toMatchObject({
      reason: 'output',
      a: { nodeId: 'add', output: 6 },
      b: { nodeId: 'add', output: 3 },
    });
    expect(report.variables).toContainEqual({ scope: 'thread', name: 'total', a: 6, b: 3 });

    const rerun = await cli([
      'rerun',
      '--failed',
      '--workflow',
      'copy-in-loop',
      '--from',
      'add',
      '--set',
      'total=0',
      '--yes',
      '--json',
    ]);
    expect(rerun.code, rerun.stderr).toBe(0);
    const reran = JSON.parse(rerun.stdout) as {
      runs: { rootThreadId: string; newStatus: string; newExecutionId: string }[];
    };
    expect(reran.runs).toEqual([expect.objectContaining({ rootThreadId: source, newStatus: 'COMPLETED' })]);
    const again = await inspect(reran.runs[0]!.newExecutionId);
    expect(again.threads[0]!.output).toEqual({ total: 3 });
  });
});

describe('maxSteps and continue-as-new with a FORK inside the loop', () => {
  const loopOfForks = (maxSteps: number): WorkflowSpec => ({
    maxSteps,
    variables: [{ name: 'g', type: 'number', scope: 'global', initial: 0 }],
    nodes: [
      node.start(),
      node.loop('loop', 'L', { dataSource: 15, maxIterations: 20 }),
      node.fork('fork', ['pa', 'pb'], ['a', 'b']),
      node.code('a', "return input.item ?? 'no item'"),
      node.set('b', 'g', 'number', 'g + 1'),
      node.join('join', ['pa', 'pb'], 'ALL_COMPLETED'),
      // Never true: it keeps validate from refusing maxSteps 62 for a loop whose count it knows.
      node.loopEnd('le', 'L', { breakCondition: 'index > 100' }),
      node.end({ g: '{{g}}', last: '{{nodes.join}}' }),
    ],
    edges: ['start>loop>fork', 'fork>a>join', 'fork>b>join', 'join>le>end'],
  });

  it('the run continues in new executions mid-loop; maxSteps counts the root’s steps (FORK and JOIN) across them', async () => {
    // 1 START + 15 × (LOOP_START, FORK, JOIN, LOOP_END) + the last LOOP_START + END = 63 root steps.
    const seen = await run('fork-loop-continues', loopOfForks(63), ['--continue-after-events', '100']);
    expect(seen.result.status, JSON.stringify(seen.result.error)).toBe('COMPLETED');
    // Seed 000: a branch starts with an empty loop scope; the global is shared and counted once per iteration.
    expect(seen.result.output).toEqual({ g: 15, last: { pa: 'no item', pb: 15 } });
    const continued = seen.root.events.filter((event) => event.type === 'THREAD_CONTINUED');
    expect(continued.length).toBeGreaterThan(1);
    expect((seen.report as InspectJson & { executions: unknown[] }).executions).toHaveLength(
      continued.length + 1,
    );
    expect(seen.report.threads.filter((thread) => thread.forkPathId === 'fork/pa')).toHaveLength(15);

    const over = await run('fork-loop-max-steps', loopOfForks(62), ['--continue-after-events', '100']);
    expect(over.result.error).toMatchObject({ code: 'MAX_STEPS_EXCEEDED', nodeId: 'end' });
    expect(over.result.error?.message).toContain('the run exceeded maxSteps, 62 node executions');
  });

  it('a fork path counts its own steps: a loop in a branch past maxSteps fails that branch, and says so', async () => {
    const seen = await run('branch-max-steps', {
      maxSteps: 40,
      nodes: [
        node.start(),
        node.fork('fork', ['pa', 'pb'], ['loop', 'b']),
        node.loop('loop', 'L', { maxIterations: 20 }),
        node.code('x', 'return 1'),
        node.loopEnd('le', 'L', { breakCondition: 'index > 100' }),
        node.code('b', 'return 2'),
        node.join('join', ['pa', 'pb'], 'ALL_COMPLETED'),
        node.end(),
      ],
      edges: ['start>fork', 'fork>loop>x>le>join', 'fork>b>join', 'join>end'],
    });
    expect(seen.result.error).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'join' });
    const pathA = seen.report.threads.find((thread) => thread.forkPathId === 'fork/pa')!;
    expect(pathA.errors[0]).toMatchObject({ code: 'MAX_STEPS_EXCEEDED', nodeId: 'x' });
    expect(pathA.errors[0]!.message).toMatch(
      /^fork path fork\/pa exceeded maxSteps on its own thread \(a fork path or list item counts its own steps\), 40 node executions/,
    );
  });
});

describe('MCP and module tools in fork branches inside a loop; a held MCP call answered by resume', () => {
  it('the run stops at the branch’s held call; pending names it; resume --answers approves it; every iteration’s branch calls its own', async () => {
    const mcp = await startMcpServer();
    try {
      await writeFile(
        join(dir, 'lookup.mjs'),
        'export async function lookup(args) { return { found: args.id.toUpperCase() }; }\n',
      );
      const seen = await run(
        'mcp-module-branches',
        {
          tools: {
            shop: {
              handler: { kind: 'mcp', url: mcp.url, tools: ['add'], allowPrivateNetwork: true },
              requiresApproval: true,
            },
            lookup: {
              description: 'Looks an id up',
              parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
              handler: 'module:./lookup.mjs#lookup',
            },
          },
          replies: {
            m: [
              { toolCalls: [{ name: 'shop_add', arguments: { a: 1, b: 2 } }] },
              'sum one',
              { toolCalls: [{ name: 'shop_add', arguments: { a: 3, b: 4 } }] },
              'sum two',
            ],
            k: [
              { toolCalls: [{ name: 'lookup', arguments: { id: 'a-1' } }] },
              'found one',
              { toolCalls: [{ name: 'lookup', arguments: { id: 'b-2' } }] },
              'found two',
            ],
          },
          nodes: [
            node.start(),
            node.loop('loop', 'L', { dataSource: 2 }),
            node.fork('fork', ['pm', 'pk'], ['m', 'k'], 'serial'),
            node.llm('m', 'Add', { tools: ['shop'] }),
            node.llm('k', 'Look', { tools: ['lookup'] }),
            node.join('join', ['pm', 'pk'], 'ALL_COMPLETED'),
            node.loopEnd('le', 'L'),
            node.end('{{nodes.join}}'),
          ],
          edges: ['start>loop>fork', 'fork>m>join', 'fork>k>join', 'join>le>end'],
        },
        [],
        true,
      );
      expect(seen.result.status).toBe('INTERRUPTED');
      expect(seen.result.error).toMatchObject({ code: 'USER_INPUT_REQUIRED', nodeId: 'm' });
      const pending = await cli(['pending', seen.result.executionId, '--json']);
      const listed = JSON.parse(pending.stdout) as {
        nodeId: string;
        toolCall?: { name: string; arguments: unknown };
      }[];
      expect(listed).toEqual([
        expect.objectContaining({
          nodeId: 'm',
          toolCall: expect.objectContaining({ name: 'shop_add', arguments: { a: 1, b: 2 } }),
        }),
      ]);
      expect(mcp.calls).toEqual([]);
      // Each iteration's held call is its own question: a list answers them in order.
      const resumed = await cli([
        'resume',
        seen.result.executionId,
        '--answers',
        '{"m": [true, {"reject": true, "reason": "no"}]}',
        '--json',
      ]);
      expect(resumed.code, resumed.stderr).toBe(0);
      const done = JSON.parse(resumed.stdout) as RunJsonResult;
      expect(done.status).toBe('COMPLETED');
      expect(done.output).toEqual({ pm: 'sum two', pk: 'found two' });
      expect(mcp.calls).toEqual([{ tool: 'add', args: { a: 1, b: 2 } }]);
      const report = await inspect(done.executionId);
      // Each branch's own tool result is the last of its conversation's (it starts with the parent's).
      const lastToolResults = (forkPathId: string) =>
        report.threads
          .filter((thread) => thread.forkPathId === forkPathId)
          .map((thread) => report.conversations.find((entry) => entry.threadId === thread.threadId)!.messages)
          .map((messages) => messages.findLast((message) => message.role === 'tool')!.content);
      expect(lastToolResults('fork/pk')).toEqual(['{"found":"A-1"}', '{"found":"B-2"}']);
      const sums = lastToolResults('fork/pm');
      expect(sums[0]).toContain('3');
      expect(sums[1]).toMatch(/^Rejected: a person did not approve this call of shop_add/);
      // The resumed steps count the model call made before the question, in the process that asked it.
      const cost = await costOf(done.executionId);
      expect(stepUsages(cost).rows.filter((row) => row.startsWith('fork/pm'))).toEqual([
        'fork/pm:m 2 calls',
        'fork/pm:m 2 calls',
      ]);
      expect(stepUsages(cost).calls).toBe(cost.cost.modelCalls);
    } finally {
      await mcp.close();
    }
  });
});
