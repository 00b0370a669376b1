/**
 * Features in combination, through the CLI (`run`, `resume`, `copy`, `inspect --json --events`) on the
 * embedded runtime: forks inside loops and loops inside forks, nested forks with a different
 * joinStrategy at each level, subgraphs and forks inside each other, context processors and questions
 * on fork paths, the four variable scopes (seed 000) across fork, loop and subgraph boundaries, copies
 * (seed 002) of runs that ended in or after a fork, routes inside loops, and what CODE reads after a
 * join. Each expectation is worked out from the seeds and docs/workflow-file.md (its departures table
 * included).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { runCli } from '../support/cli.ts';
import { cliProcess } from '../support/cli-process.ts';
import { chains, node, type WorkflowSpec, workflow } from './combination-workflows.ts';

let dir: string;
let dataDir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-combinations-'));
  dataDir = join(dir, 'data');
});
afterAll(() => rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));

interface Msg {
  role: string;
  content: string;
}
interface ThreadJson {
  threadId: string;
  parentThreadId?: string;
  forkPathId?: string;
  status: string;
  currentNodeId?: string;
  output: unknown;
  results: Record<string, unknown>;
  variables: { global?: Record<string, unknown>; thread?: Record<string, unknown> };
  errors: { code: string; message: string; nodeId?: string }[];
  events: { type: string; nodeId?: string; [key: string]: unknown }[];
  nodes: { nodeId: string; status: string; step?: number }[];
  children: string[];
}
interface InspectJson {
  executionStatus: string;
  rootThreadId: string;
  threads: ThreadJson[];
  conversations: { threadId: string; messages: Msg[] }[];
}

/** What a run left, read back with `inspect --json --events --all-conversations`. */
class Seen {
  constructor(
    readonly run: RunJsonResult,
    readonly report: InspectJson,
  ) {}
  get root(): ThreadJson {
    return this.thread(this.report.rootThreadId);
  }
  thread(id: string): ThreadJson {
    const found = this.report.threads.find((thread) => thread.threadId === id);
    if (!found) throw new Error(`no thread ${id}`);
    return found;
  }
  /** The threads of a fork path (runtime id `<fork>/<path>`, prefixed inside a SUBGRAPH), in run order. */
  path(runtimePathId: string): ThreadJson[] {
    return this.report.threads.filter((thread) => thread.forkPathId === runtimePathId);
  }
  one(runtimePathId: string): ThreadJson {
    const [only, ...more] = this.path(runtimePathId);
    if (!only || more.length > 0)
      throw new Error(`${this.path(runtimePathId).length} threads on ${runtimePathId}`);
    return only;
  }
  conversation(id = this.report.rootThreadId): string[] {
    const found = this.report.conversations.find((entry) => entry.threadId === id);
    if (!found) throw new Error(`no conversation of ${id}`);
    return found.messages.map((message) => `${message.role}: ${message.content}`);
  }
  /** `type node` of each event of a thread, in order. */
  events(id = this.report.rootThreadId, types?: readonly string[]): string[] {
    return this.thread(id)
      .events.filter((event) => types === undefined || types.includes(event.type))
      .map((event) => (event.nodeId ? `${event.type} ${event.nodeId}` : event.type));
  }
}

async function cli(args: string[]) {
  return runCli([...args, '--data-dir', dataDir], { cwd: dir });
}

async function inspect(id: string): Promise<InspectJson> {
  const shown = await cli(['inspect', id, '--json', '--events', '--all-conversations']);
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as InspectJson;
}

/** The workflow's file, as a user writes it. */
async function fileOf(id: string, spec: WorkflowSpec): Promise<string> {
  const file = join(dir, `${id}.json`);
  await writeFile(file, JSON.stringify(workflow(id, spec)));
  return file;
}

/**
 * `stepthread run <file> --json [...]`, then what inspect shows of it. In this process, unless
 * `process`: a run that stops at a question needs a process to exit.
 */
async function run(id: string, spec: WorkflowSpec, extra: string[] = [], process = false): Promise<Seen> {
  const file = await fileOf(id, spec);
  const args = ['run', file, '--json', ...extra];
  const done = process ? await cliProcess([...args, '--data-dir', dataDir], { cwd: dir }) : await cli(args);
  expect(done.stdout, done.stderr).not.toBe('');
  const result = JSON.parse(done.stdout) as RunJsonResult;
  return new Seen(result, await inspect(result.executionId));
}

const completed = (seen: Seen) => expect(seen.run.status, JSON.stringify(seen.run.error)).toBe('COMPLETED');
const u = (content: string) => `user: ${content}`;
const a = (content: string) => `assistant: ${content}`;
const s = (content: string) => `system: ${content}`;

describe('a FORK inside a LOOP', () => {
  it('forks and joins in every iteration; the main path’s conversation is restored each time, never the other’s', async () => {
    const seen = await run('combo-fork-in-loop', {
      variables: [
        { name: 'n', type: 'number', scope: 'thread', initial: 0 },
        { name: 'hist', type: 'array', scope: 'thread', initial: [] },
      ],
      replies: {
        intro: ['intro reply'],
        'a-llm': ['a1', 'a2', 'a3'],
        'b-llm': ['b1', 'b2', 'b3'],
      },
      nodes: [
        node.start(),
        node.llm('intro', 'intro'),
        node.loop('each', 'L', { dataSource: 3, iterationVariable: 'i' }),
        node.set('count', 'n', 'number', 'n + 1'),
        node.fork('split', ['a', 'b'], ['a-clear', 'b-llm'], 'serial'),
        node.context('a-clear', 'clear', { keepSystemMessage: false }),
        node.llm('a-llm', 'a{{n}}'),
        node.llm('b-llm', 'b{{n}}'),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'b' }),
        node.set('record', 'hist', 'array', 'concat(hist, [nodes.merge])'),
        node.loopEnd('next', 'L'),
        node.end({ n: '{{n}}', hist: '{{hist}}' }),
      ],
      edges: ['start>intro>each>count>split', 'a-clear>a-llm>merge', 'b-llm>merge', 'merge>record>next>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({
      n: 3,
      hist: [
        { a: 'a1', b: 'b1' },
        { a: 'a2', b: 'b2' },
        { a: 'a3', b: 'b3' },
      ],
    });
    expect(seen.conversation()).toEqual([
      u('intro'),
      a('intro reply'),
      u('b1'),
      a('b1'),
      u('b2'),
      a('b2'),
      u('b3'),
      a('b3'),
    ]);
    const pathA = seen.path('split/a');
    expect(pathA).toHaveLength(3);
    // Each iteration's a cleared its own copy: only its own turn.
    expect(seen.conversation(pathA[2]!.threadId)).toEqual([u('a3'), a('a3')]);
    // Each iteration's b started from the parent as the previous join left it.
    expect(seen.conversation(seen.path('split/b')[1]!.threadId)).toEqual([
      u('intro'),
      a('intro reply'),
      u('b1'),
      a('b1'),
      u('b2'),
      a('b2'),
    ]);
    expect(
      seen
        .events(undefined, ['NODE_STARTED', 'THREAD_FORKED', 'THREAD_JOINED'])
        .filter((e) => /split|merge/.test(e)),
    ).toEqual(
      Array.from({ length: 3 }, () => [
        'NODE_STARTED split',
        'THREAD_FORKED split',
        'NODE_STARTED merge',
        'THREAD_JOINED merge',
      ]).flat(),
    );
  });
});

describe('a LOOP inside a fork branch', () => {
  it('iterates on the branch’s own thread: its loop variables, its thread copy, the shared global', async () => {
    const seen = await run('combo-loop-in-branch', {
      variables: [
        { name: 'g', type: 'number', scope: 'global', initial: 0 },
        { name: 't', type: 'array', scope: 'thread', initial: [] },
        { name: 'lv', type: 'number', scope: 'loop', initial: 100 },
      ],
      replies: { 'a-chat': ['r1', 'r2', 'r3'], 'b-llm': ['b reply'], pre: ['pre reply'] },
      nodes: [
        node.start(),
        node.llm('pre', 'pre'),
        node.set('seed', 't', 'array', '[0]'),
        node.fork('split', ['a', 'b'], ['a-loop', 'b-llm']),
        node.loop('a-loop', 'A', { dataSource: [1, 2, 3], iterationVariable: 'x' }),
        node.llm('a-chat', 'a {{x}} {{index}}'),
        node.set('a-acc', 't', 'array', 'concat(t, [x * 10 + lv])'),
        node.set('a-lv', 'lv', 'number', 'lv + 1'),
        node.set('a-g', 'g', 'number', 'g + 1'),
        node.loopEnd('a-end', 'A'),
        node.set('a-after', 'res', 'array', 't'),
        node.llm('b-llm', 'b {{len(t)}}'),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'a' }),
        node.code(
          'code',
          "return { keys: Object.keys(input.m), t: input.t, res: input.res ?? 'none', g: input.g }",
          {
            inputs: { m: 'nodes.merge' },
          },
        ),
        node.end({ t: '{{t}}', g: '{{g}}', code: '{{nodes.code}}' }),
      ],
      edges: [
        'start>pre>seed>split',
        'a-loop>a-chat>a-acc>a-lv>a-g>a-end>a-after>merge',
        'b-llm>merge',
        'merge>code>end',
      ],
    });
    completed(seen);
    expect(seen.run.output).toEqual({
      t: [0],
      g: 3,
      code: { keys: ['a', 'b'], t: [0], res: 'none', g: 3 },
    });
    expect(seen.root.results.merge).toEqual({ a: [0, 110, 120, 130], b: 'b reply' });
    expect(seen.conversation()).toEqual([
      u('pre'),
      a('pre reply'),
      u('a 1 0'),
      a('r1'),
      u('a 2 1'),
      a('r2'),
      u('a 3 2'),
      a('r3'),
    ]);
    expect(seen.conversation(seen.one('split/b').threadId)).toEqual([
      u('pre'),
      a('pre reply'),
      u('b 1'),
      a('b reply'),
    ]);
    expect(seen.one('split/a').variables.thread).toEqual({ t: [0, 110, 120, 130], res: [0, 110, 120, 130] });
  });
});

describe('nested forks, a different joinStrategy at each level', () => {
  // k fails (a CODE throw); the inner join needs 2 of 3, serial, main j; the outer all, main x.
  const nested = (inner: Record<string, unknown>, outer: Record<string, unknown>): WorkflowSpec => ({
    replies: {
      intro: ['intro reply'],
      'x-work': ['x reply'],
      'i-work': ['i reply'],
      'j-work': ['j reply'],
      'x-after': ['x after reply'],
      'y-work': ['y reply'],
    },
    nodes: [
      node.start(),
      node.llm('intro', 'intro'),
      node.fork('outer', ['x', 'y'], ['x-work', 'y-work'], (outer.forkStrategy as 'serial') ?? 'parallel'),
      node.llm('x-work', 'x'),
      node.fork(
        'inner',
        ['k', 'i', 'j'],
        ['k-work', 'i-work', 'j-work'],
        (inner.forkStrategy as 'serial') ?? 'serial',
      ),
      node.code('k-work', "throw new Error('k broke')"),
      node.llm('i-work', 'i'),
      node.llm('j-work', 'j'),
      node.join(
        'inner-merge',
        ['k', 'i', 'j'],
        inner.joinStrategy as string,
        inner.join as Record<string, unknown>,
      ),
      node.llm('x-after', 'x after'),
      node.llm('y-work', 'y'),
      node.join(
        'outer-merge',
        ['x', 'y'],
        outer.joinStrategy as string,
        outer.join as Record<string, unknown>,
      ),
      node.code('after', 'return { inner: input.inner, outer: input.outer }', {
        inputs: { inner: "nodes['inner-merge']", outer: "nodes['outer-merge']" },
      }),
      node.end('{{nodes.after}}'),
    ],
    edges: [
      'start>intro>outer',
      'x-work>inner',
      'k-work>inner-merge',
      'i-work>inner-merge',
      'j-work>inner-merge',
      'inner-merge>x-after>outer-merge',
      'y-work>outer-merge',
      'outer-merge>after>end',
    ],
  });

  it('inner SUCCESS_COUNT_THRESHOLD 2 (serial, one failure) inside an outer ALL_COMPLETED', async () => {
    const seen = await run(
      'combo-nested-threshold',
      nested(
        { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', join: { threshold: 2, mainPathId: 'j', timeout: 30 } },
        { joinStrategy: 'ALL_COMPLETED', join: { mainPathId: 'x' } },
      ),
    );
    completed(seen);
    expect(seen.run.output).toEqual({
      inner: { i: 'i reply', j: 'j reply' },
      outer: { x: 'x after reply', y: 'y reply' },
    });
    // The inner join restored j into x, the outer x into the root.
    const expected = [
      u('intro'),
      a('intro reply'),
      u('x'),
      a('x reply'),
      u('j'),
      a('j reply'),
      u('x after'),
      a('x after reply'),
    ];
    expect(seen.conversation()).toEqual(expected);
    expect(seen.conversation(seen.one('outer/x').threadId)).toEqual(expected);
    const k = seen.one('inner/k');
    expect(k.status).toBe('FAILED');
    expect(k.errors.at(-1)).toMatchObject({ code: 'CODE_ERROR', nodeId: 'k-work' });
    expect(k.parentThreadId).toBe(seen.one('outer/x').threadId);
  });

  it('inner ALL_FAILED (parallel, every path failing) inside an outer ANY_FAILED (serial): empty merges, own conversations', async () => {
    const spec = nested(
      { joinStrategy: 'ALL_FAILED', forkStrategy: 'parallel', join: { mainPathId: 'i' } },
      { joinStrategy: 'ANY_FAILED', forkStrategy: 'serial', join: { mainPathId: 'y' } },
    );
    // Every inner path fails, and so does y: outer ANY_FAILED then has x completed and y failed.
    spec.nodes = spec.nodes.map((n) =>
      n.id === 'i-work' || n.id === 'j-work'
        ? node.code(n.id, `throw new Error('${n.id} broke')`)
        : n.id === 'y-work'
          ? node.code('y-work', "throw new Error('y broke')")
          : n,
    );
    const seen = await run('combo-nested-all-failed', spec);
    completed(seen);
    // Inner: all failed, nothing completed → {}; outer: one completed branch (x) → its output, not keyed.
    expect(seen.run.output).toEqual({ inner: {}, outer: 'x after reply' });
    // Inner: the main path i failed, so x kept its own; outer: the main path y failed, so the root its own.
    expect(seen.conversation(seen.one('outer/x').threadId)).toEqual([
      u('intro'),
      a('intro reply'),
      u('x'),
      a('x reply'),
      u('x after'),
      a('x after reply'),
    ]);
    expect(seen.conversation()).toEqual([u('intro'), a('intro reply')]);
    expect(seen.one('outer/y').status).toBe('FAILED');
  });

  it('inner ANY_COMPLETED inside an outer SUCCESS_COUNT_THRESHOLD 1: each merges exactly one branch', async () => {
    const seen = await run(
      'combo-nested-any',
      nested(
        { joinStrategy: 'ANY_COMPLETED', forkStrategy: 'parallel', join: { mainPathId: 'i' } },
        { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', forkStrategy: 'serial', join: { threshold: 1 } },
      ),
    );
    completed(seen);
    // One merged branch: its output, not keyed; the main path's first (i; x, forkPathIds[0]).
    expect(seen.run.output).toEqual({ inner: 'i reply', outer: 'x after reply' });
    expect(seen.conversation()).toEqual([
      u('intro'),
      a('intro reply'),
      u('x'),
      a('x reply'),
      u('i'),
      a('i reply'),
      u('x after'),
      a('x after reply'),
    ]);
  });
});

describe('SUBGRAPH and FORK inside each other', () => {
  const summariser = {
    id: 'summariser',
    version: 1,
    variables: [{ name: 'doc', type: 'string', scope: 'subgraph' }],
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'sum', type: 'LLM', config: { prompt: 'summarise {{doc}}' } },
      {
        id: 'mark',
        type: 'VARIABLE',
        config: { variableName: 'g', variableType: 'number', expression: 'g + 1' },
      },
      { id: 'end', type: 'END', config: { output: { summary: '{{nodes.sum}}', doc: '{{doc}}' } } },
    ],
    edges: chains('start>sum>mark>end'),
  };

  it('a SUBGRAPH in a fork branch: its messages on the branch, its outputMapping into the branch’s thread scope', async () => {
    const seen = await run(
      'combo-subgraph-in-branch',
      {
        variables: [
          { name: 'g', type: 'number', scope: 'global', initial: 0 },
          { name: 'text', type: 'string', scope: 'thread', initial: '' },
        ],
        replies: { 'sub.sum': ['short'], 'b-llm': ['b reply'] },
        nodes: [
          node.start(),
          node.set('pick', 'text', 'string', 'input.text'),
          node.fork('split', ['a', 'b'], ['sub', 'b-llm']),
          node.subgraph('sub', summariser, {
            inputMapping: { doc: 'text' },
            outputMapping: { summary: 'output.summary' },
          }),
          node.set('a-use', 'kept', 'string', "summary + '!'"),
          node.llm('b-llm', 'b {{text}}'),
          node.join('merge', ['a', 'b'], 'ALL_COMPLETED'),
          node.end({
            merged: '{{nodes.merge}}',
            summary: "{{summary ?? 'none'}}",
            g: '{{g}}',
            sub: '{{nodes.sub}}',
          }),
        ],
        edges: ['start>pick>split', 'sub>a-use>merge', 'b-llm>merge', 'merge>end'],
      },
      ['--input', '{"text": "a long text"}'],
    );
    completed(seen);
    expect(seen.run.output).toEqual({
      merged: { a: 'short!', b: 'b reply' },
      // summary was mapped into branch a's own thread scope: the parent never had it.
      summary: 'none',
      g: 1,
      sub: { summary: 'short', doc: 'a long text' },
    });
    expect(seen.conversation()).toEqual([u('summarise a long text'), a('short')]);
    expect(seen.one('split/a').variables.thread).toMatchObject({
      summary: 'short',
      kept: 'short!',
      text: 'a long text',
    });
  });

  it('a FORK inside a SUBGRAPH inside a fork branch: both joins restore their main paths, ids made unique', async () => {
    const inner = {
      id: 'inner',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['p', 'q'], forkStrategy: 'parallel', childNodeIds: ['p-llm', 'q-llm'] },
        },
        { id: 'p-llm', type: 'LLM', config: { prompt: 'p' } },
        { id: 'q-llm', type: 'LLM', config: { prompt: 'q' } },
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['p', 'q'], joinStrategy: 'ALL_COMPLETED', mainPathId: 'q' },
        },
        { id: 'end', type: 'END', config: { output: '{{nodes.merge}}' } },
      ],
      edges: chains('start>split, p-llm>merge, q-llm>merge, merge>end'),
    };
    const seen = await run('combo-fork-in-subgraph-in-branch', {
      replies: {
        'sub.p-llm': ['p reply'],
        'sub.q-llm': ['q reply'],
        'b-llm': ['b reply'],
        'a-after': ['a after reply'],
      },
      nodes: [
        node.start(),
        node.fork('split', ['a', 'b'], ['sub', 'b-llm'], 'serial'),
        node.subgraph('sub', inner),
        node.llm('a-after', 'a after'),
        node.llm('b-llm', 'b'),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED'),
        node.end({ merged: '{{nodes.merge}}', sub: '{{nodes.sub}}' }),
      ],
      edges: ['start>split', 'sub>a-after>merge', 'b-llm>merge', 'merge>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({
      merged: { a: 'a after reply', b: 'b reply' },
      sub: { p: 'p reply', q: 'q reply' },
    });
    expect(seen.conversation()).toEqual([u('q'), a('q reply'), u('a after'), a('a after reply')]);
    const branchA = seen.one('split/a');
    expect(seen.one('sub.split/q').parentThreadId).toBe(branchA.threadId);
  });
});

describe('CONTEXT_PROCESSOR on fork paths', () => {
  // Before the fork: a system message and three turns (m1 … r3).
  const before = [
    node.context('sys', 'insert', { position: -1, messages: [{ role: 'system', content: 'root rules' }] }),
    node.llm('t1', 'm1'),
    node.llm('t2', 'm2'),
    node.llm('t3', 'm3'),
  ];
  const replies = {
    t1: ['r1'],
    t2: ['r2'],
    t3: ['r3'],
    'a-llm': ['a reply'],
    'b-llm': ['b reply'],
    'c-llm': ['c reply'],
  };
  const branches = (mainPathId: string, after: ReturnType<typeof node.context>[]): WorkflowSpec => ({
    replies,
    nodes: [
      node.start(),
      ...before,
      node.fork('split', ['a', 'b', 'c'], ['a-cut', 'b-add', 'c-users']),
      node.context('a-cut', 'truncate', { keepLast: 2 }),
      node.llm('a-llm', 'a'),
      node.context('b-add', 'insert', { position: 0, messages: [{ role: 'system', content: 'b rules' }] }),
      node.context('b-swap', 'replace', { index: 2, message: { role: 'user', content: 'm1 edited by b' } }),
      node.llm('b-llm', 'b'),
      node.context('c-users', 'filter', { roles: ['user'] }),
      node.llm('c-llm', 'c'),
      node.join('merge', ['a', 'b', 'c'], 'ALL_COMPLETED', { mainPathId }),
      ...after,
      node.end('{{nodes.merge}}'),
    ],
    edges: [
      'start>sys>t1>t2>t3>split',
      'a-cut>a-llm>merge',
      'b-add>b-swap>b-llm>merge',
      'c-users>c-llm>merge',
      `merge>${[...after.map((n) => n.id), 'end'].join('>')}`,
    ],
  });
  const full = [s('root rules'), u('m1'), a('r1'), u('m2'), a('r2'), u('m3'), a('r3')];

  it('each path edits its own copy; after the join the parent has the main path’s (truncate), then edits it', async () => {
    const seen = await run(
      'combo-context-main-truncate',
      branches('a', [
        node.context('after-replace', 'replace', {
          index: 0,
          message: { role: 'user', content: 'replaced' },
        }),
      ]),
    );
    completed(seen);
    expect(seen.run.output).toEqual({ a: 'a reply', b: 'b reply', c: 'c reply' });
    expect(seen.conversation(seen.one('split/a').threadId)).toEqual([u('m3'), a('r3'), u('a'), a('a reply')]);
    expect(seen.conversation(seen.one('split/b').threadId)).toEqual([
      s('b rules'),
      s('root rules'),
      u('m1 edited by b'),
      ...full.slice(2),
      u('b'),
      a('b reply'),
    ]);
    expect(seen.conversation(seen.one('split/c').threadId)).toEqual([
      u('m1'),
      u('m2'),
      u('m3'),
      u('c'),
      a('c reply'),
    ]);
    expect(seen.conversation()).toEqual([u('replaced'), a('r3'), u('a'), a('a reply')]);
    expect(seen.root.results['after-replace']).toEqual({
      operation: 'replace',
      messageCount: expect.any(Number),
      visibleCount: 4,
    });
  });

  it('main path filtered: a clear after the join shows the parent’s system messages, never those another path added', async () => {
    const seen = await run(
      'combo-context-main-filter',
      branches('c', [node.context('after-clear', 'clear', { keepSystemMessage: true })]),
    );
    completed(seen);
    expect(seen.conversation()).toEqual([s('root rules')]);
  });

  it('main path b: its replace and insert reach the parent; a later clear shows the system messages of its log', async () => {
    const seen = await run(
      'combo-context-main-replace',
      branches('b', [node.context('after-clear', 'clear', { keepSystemMessage: true })]),
    );
    completed(seen);
    // b's log holds "b rules" and "root rules", in log order.
    expect(seen.conversation()).toEqual([s('root rules'), s('b rules')]);
  });
});

describe('USER_INTERACTION on fork paths', () => {
  const approvalInBranch: WorkflowSpec = {
    variables: [{ name: 'ok', type: 'boolean', scope: 'thread', initial: false }],
    replies: { 'b-llm': ['b reply'], 'a-after': ['a after reply'] },
    nodes: [
      node.start(),
      node.fork('split', ['a', 'b'], ['ask', 'b-llm']),
      node.ask('ask', 'ask_for_approval', {
        showMessage: 'Go on with {{input.what}}?',
        outputVariable: 'ok',
      }),
      node.llm('a-after', 'a after {{ok}}'),
      node.llm('b-llm', 'b'),
      node.join('merge', ['a', 'b'], 'ALL_COMPLETED'),
      node.end({ merged: '{{nodes.merge}}', ok: '{{ok}}', answer: '{{nodes.ask}}' }),
    ],
    edges: ['start>split', 'ask>a-after>merge', 'b-llm>merge', 'merge>end'],
  };

  it('the run stops at the branch’s question; pending names it; resume answers it and the join completes', async () => {
    const stopped = await run(
      'combo-ask-in-branch',
      approvalInBranch,
      ['--input', '{"what": "the refund"}'],
      true,
    );
    expect(stopped.run.status, JSON.stringify(stopped.run.error)).toBe('INTERRUPTED');
    expect(stopped.run.error?.code).toBe('USER_INPUT_REQUIRED');
    const pending = await cli(['pending', stopped.run.executionId, '--json']);
    const open = JSON.parse(pending.stdout) as { threadId: string; nodeId: string; message: string }[];
    expect(open).toEqual([
      expect.objectContaining({
        nodeId: 'ask',
        message: 'Go on with the refund?',
        threadId: stopped.one('split/a').threadId,
      }),
    ]);
    // A copy of the stopped run (seed 002) stands at the FORK whose branch asked: it asks again.
    const copied = await cli(['copy', stopped.run.threadId]);
    expect(copied.code, copied.stderr).toBe(0);
    const copyId = copied.stdout.trim();
    const resumed = await cliProcess(
      ['resume', stopped.run.executionId, '--answers', '{"ask": true}', '--json', '--data-dir', dataDir],
      { cwd: dir },
    );
    const result = JSON.parse(resumed.stdout) as RunJsonResult;
    expect(result.status, resumed.stderr).toBe('COMPLETED');
    // ok was set on branch a's thread copy: the parent keeps its own (false).
    expect(result.output).toEqual({
      merged: { a: 'a after reply', b: 'b reply' },
      ok: false,
      answer: { approved: true },
    });
    const seen = new Seen(result, await inspect(result.executionId));
    expect(seen.conversation()).toEqual([u('Approved.'), u('a after true'), a('a after reply')]);
    expect(seen.one('split/a').variables.thread).toEqual({ ok: true });
    const copyRun = await cli([
      'run',
      join(dir, 'combo-ask-in-branch.json'),
      '--thread',
      copyId,
      '--answers',
      '{"ask": false}',
      '--json',
    ]);
    const copyResult = JSON.parse(copyRun.stdout) as RunJsonResult;
    expect(copyResult.status, copyRun.stderr).toBe('COMPLETED');
    expect(copyResult.output).toEqual({
      merged: { a: 'a after reply', b: 'b reply' },
      ok: false,
      answer: { approved: false },
    });
    expect(copyResult.conversation.map((m) => `${m.role}: ${m.content}`)).toEqual([
      u('Rejected.'),
      u('a after false'),
      a('a after reply'),
    ]);
    expect(
      seen.events(seen.one('split/a').threadId).filter((e) => e.startsWith('NODE_') || e.startsWith('USER_')),
    ).toEqual([
      'NODE_STARTED ask',
      'USER_INTERACTION_REQUESTED ask',
      'USER_INTERACTION_RESPONDED ask',
      'NODE_COMPLETED ask',
      'NODE_STARTED a-after',
      'NODE_COMPLETED a-after',
    ]);
  });

  it('a run waiting at its terminal prompt on two parallel paths: respond from other processes answers each, the join completes', async () => {
    const file = await fileOf('combo-respond-branches', {
      variables: [{ name: 'note', type: 'string', scope: 'thread', initial: '' }],
      replies: { 'a-llm': ['a reply'] },
      nodes: [
        node.start(),
        node.fork('split', ['a', 'b'], ['a-ask', 'b-pick']),
        node.ask('a-ask', 'ask_for_input', { showMessage: 'Note for a?', outputVariable: 'note' }),
        node.llm('a-llm', 'a {{note}}'),
        node.ask('b-pick', 'ask_for_selection', { showMessage: 'Pick for b', options: ['low', 'high'] }),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED'),
        node.end('{{nodes.merge}}'),
      ],
      edges: ['start>split', 'a-ask>a-llm>merge', 'b-pick>merge', 'merge>end'],
    });
    const waitingData = join(dir, 'respond-data');
    let stdout = '';
    let stderr = '';
    let prompted: () => void = () => {};
    const asked = new Promise<void>((resolve) => {
      prompted = resolve;
    });
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
      // Nobody types: only respond, from other processes, answers.
      prompt: (_question, signal) => {
        prompted();
        return new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      },
    };
    const running = main(['node', 'stepthread', 'run', file, '--json', '--data-dir', waitingData], io);
    await asked;
    const other = (args: string[]) => cliProcess([...args, '--data-dir', waitingData], { cwd: dir });
    let open: { interactionId: string; nodeId: string }[] = [];
    while (open.length < 2) {
      open = JSON.parse((await other(['pending', '--json'])).stdout) as typeof open;
    }
    const id = (nodeId: string) => open.find((entry) => entry.nodeId === nodeId)!.interactionId;
    const picked = await other(['respond', id('b-pick'), '--select', 'high']);
    expect(picked.code, picked.stderr).toBe(0);
    const noted = await other(['respond', id('a-ask'), '--input', 'urgent']);
    expect(noted.code, noted.stderr).toBe(0);
    expect(await running, stderr).toBe(0);
    const result = JSON.parse(stdout) as RunJsonResult;
    expect(result.status).toBe('COMPLETED');
    expect(result.output).toEqual({ a: 'a reply', b: { index: 1, option: 'high' } });
    expect(result.conversation.map((m) => `${m.role}: ${m.content}`)).toEqual([
      u('urgent'),
      u('a urgent'),
      a('a reply'),
    ]);
  }, 60_000);

  it('questions in a loop on one path and in a SUBGRAPH on the other, answered up front (serial)', async () => {
    const confirm = {
      id: 'confirm',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'pick',
          type: 'USER_INTERACTION',
          config: {
            userInteractionType: 'ask_for_selection',
            options: ['red', 'blue'],
            showMessage: 'Colour?',
          },
        },
        { id: 'end', type: 'END', config: { output: '{{nodes.pick.option}}' } },
      ],
      edges: chains('start>pick>end'),
    };
    const seen = await run(
      'combo-asks-loop-subgraph',
      {
        variables: [
          { name: 'got', type: 'array', scope: 'thread', initial: [] },
          { name: 'answer', type: 'any', scope: 'thread' },
        ],
        nodes: [
          node.start(),
          node.fork('split', ['a', 'b'], ['each', 'sub'], 'serial'),
          node.loop('each', 'L', { dataSource: 2 }),
          node.ask('ask', 'ask_for_input', { showMessage: 'Item {{index}}?', outputVariable: 'answer' }),
          node.set('keep', 'got', 'array', 'concat(got, [answer])'),
          node.loopEnd('next', 'L'),
          node.set('a-done', 'done', 'array', 'got'),
          node.subgraph('sub', confirm),
          node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'b' }),
          node.end('{{nodes.merge}}'),
        ],
        edges: ['start>split', 'each>ask>keep>next>a-done>merge', 'sub>merge', 'merge>end'],
      },
      ['--answers', '{"ask": ["first", {"n": 2}], "sub.pick": "blue"}'],
    );
    completed(seen);
    expect(seen.run.output).toEqual({ a: ['first', { n: 2 }], b: 'blue' });
    expect(seen.conversation()).toEqual([u('blue')]);
    expect(seen.conversation(seen.one('split/a').threadId)).toEqual([u('first'), u('{"n":2}')]);
  });
});

describe('serial and parallel forks with a threshold and a timeout, inside a loop', () => {
  // c is slow (its model takes 20 s): a threshold of 2 is reached by a and b in every iteration, so
  // c is stopped (parallel) or never started (serial), and its global increment never lands.
  const thresholdLoop = (forkStrategy: 'parallel' | 'serial'): WorkflowSpec => ({
    variables: [
      { name: 'g', type: 'number', scope: 'global', initial: 0 },
      { name: 'hist', type: 'array', scope: 'thread', initial: [] },
    ],
    profiles: {
      default: { provider: 'scripted', responses: ['fast'] },
      slow: { provider: 'scripted', responses: ['slow'], delayMs: 20_000 },
    },
    nodes: [
      node.start(),
      node.loop('each', 'L', { dataSource: 2 }),
      node.fork('split', ['a', 'b', 'c'], ['a-g', 'b-g', 'c-llm'], forkStrategy),
      node.set('a-g', 'g', 'number', 'g + 1'),
      node.set('a-mark', 'mine', 'string', "'a'"),
      node.set('b-g', 'g', 'number', 'g + 1'),
      node.set('b-mark', 'mine', 'string', "'b'"),
      node.llm('c-llm', 'c', { profileId: 'slow' }),
      node.set('c-g', 'g', 'number', 'g + 1'),
      node.join('merge', ['a', 'b', 'c'], 'SUCCESS_COUNT_THRESHOLD', {
        threshold: 2,
        timeout: 60,
        mainPathId: 'b',
      }),
      node.set('record', 'hist', 'array', 'concat(hist, [nodes.merge])'),
      node.loopEnd('next', 'L'),
      node.end({ g: '{{g}}', hist: '{{hist}}' }),
    ],
    edges: [
      'start>each>split',
      'a-g>a-mark>merge',
      'b-g>b-mark>merge',
      'c-llm>c-g>merge',
      'merge>record>next>end',
    ],
  });
  for (const strategy of ['parallel', 'serial'] as const) {
    it(`${strategy}: decided by a and b in each iteration; c stopped, its write never lands`, async () => {
      const seen = await run(`combo-threshold-loop-${strategy}`, thresholdLoop(strategy));
      completed(seen);
      expect(seen.run.output).toEqual({
        g: 4,
        hist: [
          { a: 'a', b: 'b' },
          { a: 'a', b: 'b' },
        ],
      });
      expect(seen.path('split/c').map((c) => c.status)).toEqual(['CANCELLED', 'CANCELLED']);
    });
  }

  it('a threshold not reached before the timeout fails the join with JOIN_TIMEOUT in the first iteration', async () => {
    const spec = thresholdLoop('parallel');
    spec.nodes = spec.nodes.map((n) =>
      n.id === 'merge'
        ? node.join('merge', ['a', 'b', 'c'], 'SUCCESS_COUNT_THRESHOLD', { threshold: 3, timeout: 1 })
        : n,
    );
    const seen = await run('combo-threshold-timeout', spec);
    expect(seen.run.status).toBe('FAILED');
    expect(seen.run.error).toMatchObject({ code: 'JOIN_TIMEOUT', nodeId: 'merge' });
    expect(seen.run.error?.message).toContain('(c)');
    expect(seen.path('split/a')).toHaveLength(1);
    expect(seen.root.variables.global).toEqual({ g: 2 });
  });
});

describe('the four variable scopes across loop, SUBGRAPH and fork boundaries (seed 000)', () => {
  it('global shared by reference, thread copied, loop and subgraph scopes emptied in the branches', async () => {
    const inner = {
      id: 'inner',
      version: 1,
      variables: [{ name: 'sv', type: 'number', scope: 'subgraph' }],
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['p', 'q'], forkStrategy: 'serial', childNodeIds: ['p-read', 'q-t'] },
        },
        {
          id: 'p-read',
          type: 'VARIABLE',
          config: {
            variableName: 'seen',
            variableType: 'array',
            expression: "[sv ?? 'none', lv ?? 'none', it ?? 'none', index ?? 'none', t, g]",
          },
        },
        {
          id: 'p-g',
          type: 'VARIABLE',
          config: { variableName: 'g', variableType: 'number', expression: 'g + 1' },
        },
        {
          id: 'p-t',
          type: 'VARIABLE',
          config: { variableName: 't', variableType: 'string', expression: "'p'" },
        },
        {
          id: 'q-t',
          type: 'VARIABLE',
          config: { variableName: 't', variableType: 'string', expression: "t + ' q'" },
        },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['p', 'q'], joinStrategy: 'ALL_COMPLETED' } },
        {
          id: 's-read',
          type: 'VARIABLE',
          config: { variableName: 'out', variableType: 'array', expression: '[sv, lv, it, t, nodes.merge]' },
        },
        { id: 'end', type: 'END', config: { output: '{{out}}' } },
      ],
      edges: chains('start>split, p-read>p-g>p-t>merge, q-t>merge, merge>s-read>end'),
    };
    const seen = await run('combo-scopes', {
      variables: [
        { name: 'g', type: 'number', scope: 'global', initial: 0 },
        { name: 't', type: 'string', scope: 'thread', initial: 'root' },
        { name: 'lv', type: 'number', scope: 'loop', initial: 1 },
        { name: 'log', type: 'array', scope: 'thread', initial: [] },
      ],
      nodes: [
        node.start(),
        node.loop('each', 'L', { dataSource: [1, 2], iterationVariable: 'it' }),
        node.set('bump', 'lv', 'number', 'lv + it'),
        node.subgraph('sub', inner, {
          inputMapping: { sv: 'lv * 10' },
          outputMapping: { fromSub: 'output' },
        }),
        node.set('record', 'log', 'array', 'concat(log, [fromSub])'),
        node.loopEnd('next', 'L'),
        node.end({
          g: '{{g}}',
          t: '{{t}}',
          log: '{{log}}',
          out: "{{out ?? 'none'}}",
          lv: "{{lv ?? 'none'}}",
        }),
      ],
      edges: ['start>each>bump>sub>record>next>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({
      g: 2,
      t: 'root',
      log: [
        [20, 2, 1, 'root', { p: 'p', q: 'root q' }],
        [30, 3, 2, 'root', { p: 'p', q: 'root q' }],
      ],
      out: 'none',
      lv: 'none',
    });
    const p = seen.path('sub.split/p');
    expect(p.map((thread) => thread.variables.thread?.seen)).toEqual([
      ['none', 'none', 'none', 'none', 'root', 0],
      ['none', 'none', 'none', 'none', 'root', 1],
    ]);
    expect(p.map((thread) => thread.variables.thread?.t)).toEqual(['p', 'p']);
  });

  it('readonly: a thread variable is set once per branch copy; a global once in the whole run', async () => {
    const seen = await run('combo-readonly', {
      variables: [
        { name: 'once', type: 'string', scope: 'thread', readonly: true },
        { name: 'gonce', type: 'string', scope: 'global', readonly: true },
      ],
      nodes: [
        node.start(),
        node.fork('split', ['a', 'b'], ['a-once', 'b-once'], 'serial'),
        node.set('a-once', 'once', 'string', "'a'"),
        node.set('a-g', 'gonce', 'string', "'a'"),
        node.set('b-once', 'once', 'string', "'b'"),
        node.set('b-g', 'gonce', 'string', "'b'"),
        node.join('merge', ['a', 'b'], 'ANY_FAILED', { mainPathId: 'a' }),
        node.set('root-once', 'once', 'string', "'root'"),
        node.end({ once: '{{once}}', gonce: '{{gonce}}', merged: '{{nodes.merge}}' }),
      ],
      edges: ['start>split', 'a-once>a-g>merge', 'b-once>b-g>merge', 'merge>root-once>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({ once: 'root', gonce: 'a', merged: 'a' });
    const b = seen.one('split/b');
    expect(b.status).toBe('FAILED');
    expect(b.errors.at(-1)).toMatchObject({ code: 'READONLY_VARIABLE', nodeId: 'b-g' });
    expect(b.variables.thread).toEqual({ once: 'b' });
  });
});

describe('ROUTE in loops and branches', () => {
  it('a ROUTE in a loop picks a node by the loop counter and leaves for END once a counter says so', async () => {
    const seen = await run('combo-route-loop', {
      variables: [
        { name: 'c', type: 'number', scope: 'thread', initial: 0 },
        { name: 'evens', type: 'array', scope: 'thread', initial: [] },
        { name: 'odds', type: 'array', scope: 'thread', initial: [] },
      ],
      nodes: [
        node.start(),
        node.loop('each', 'L', {}),
        node.set('inc', 'c', 'number', 'c + 1'),
        node.route(
          'pick',
          [
            { condition: 'c >= 4', targetNodeId: 'end', priority: 10 },
            { condition: 'index % 2 == 0', targetNodeId: 'even' },
          ],
          'odd',
        ),
        node.set('even', 'evens', 'array', 'concat(evens, [index])'),
        node.set('odd', 'odds', 'array', 'concat(odds, [index])'),
        node.loopEnd('next', 'L'),
        node.end({ c: '{{c}}', evens: '{{evens}}', odds: '{{odds}}', last: "{{nodes.next ?? 'none'}}" }),
      ],
      edges: ['start>each>inc>pick', 'even>next', 'odd>next', 'next>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({ c: 4, evens: [0, 2], odds: [1], last: expect.anything() });
    expect(seen.root.nodes.filter((n) => n.nodeId === 'pick')).toHaveLength(4);
    expect(seen.root.nodes.filter((n) => n.nodeId === 'next')).toHaveLength(3);
  });

  it('a ROUTE inside each fork branch, inside a loop: each branch takes its own way to the JOIN', async () => {
    const seen = await run('combo-route-branch-loop', {
      variables: [
        { name: 'turn', type: 'number', scope: 'thread', initial: 0 },
        { name: 'hist', type: 'array', scope: 'thread', initial: [] },
      ],
      nodes: [
        node.start(),
        node.loop('each', 'L', { dataSource: ['x', 'yy', 'zzz'], iterationVariable: 'word' }),
        node.set('keep', 'turn', 'number', 'len(word)'),
        node.fork('split', ['a', 'b'], ['a-route', 'b-route']),
        node.route('a-route', [{ condition: 'turn > 1', targetNodeId: 'a-long' }], 'a-short'),
        node.set('a-long', 'v', 'string', "'long'"),
        node.set('a-short', 'v', 'string', "'short'"),
        node.route('b-route', [{ condition: 'turn == 2', targetNodeId: 'b-two' }], 'merge'),
        node.set('b-two', 'v', 'string', "'two'"),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED'),
        node.set('record', 'hist', 'array', 'concat(hist, [nodes.merge])'),
        node.loopEnd('next', 'L'),
        node.end('{{hist}}'),
      ],
      edges: [
        'start>each>keep>split',
        'a-long>merge',
        'a-short>merge',
        'b-two>merge',
        'merge>record>next>end',
      ],
    });
    completed(seen);
    // A branch that went straight from its ROUTE to the JOIN has the ROUTE's output.
    expect(seen.run.output).toEqual([
      { a: 'short', b: seen.path('split/b')[0]!.results['b-route'] },
      { a: 'long', b: 'two' },
      { a: 'long', b: seen.path('split/b')[2]!.results['b-route'] },
    ]);
  });
});

describe('CODE after a JOIN (seed 000: one child → its output; several → keyed per child)', () => {
  it('reads the merged outputs, the globals a branch set, and never a branch’s thread variables', async () => {
    const seen = await run(
      'combo-code-after-join',
      {
        variables: [
          { name: 'g', type: 'object', scope: 'global', initial: {} },
          { name: 'mine', type: 'string', scope: 'thread', initial: 'root' },
        ],
        replies: { 'one-llm': ['only reply'], 'x-llm': ['x reply'] },
        nodes: [
          node.start(),
          node.fork('solo', ['one'], ['one-llm'], 'serial'),
          node.llm('one-llm', 'one'),
          node.join('solo-merge', ['one'], 'ALL_COMPLETED'),
          node.fork('split', ['x', 'y'], ['x-llm', 'y-code']),
          node.llm('x-llm', 'x'),
          node.code('y-code', 'return { doubled: input.n * 2 }', { inputs: { n: 'input.n' } }),
          node.set('y-g', 'g', 'object', "nodes['y-code']"),
          node.set('y-mine', 'mine', 'string', "'y'"),
          node.join('merge', ['x', 'y'], 'ALL_COMPLETED'),
          node.code(
            'after',
            'return { solo: input.solo, merged: input.merged, g: input.g, mine: input.mine, xNode: input.xNode, yCode: input.yCode }',
            {
              inputs: {
                solo: "nodes['solo-merge']",
                merged: 'nodes.merge',
                xNode: "nodes['x-llm']",
                yCode: "nodes['y-code']",
              },
            },
          ),
          node.end('{{nodes.after}}'),
        ],
        edges: [
          'start>solo',
          'one-llm>solo-merge>split',
          'x-llm>merge',
          'y-code>y-g>y-mine>merge',
          'merge>after>end',
        ],
      },
      ['--input', '{"n": 21}'],
    );
    completed(seen);
    expect(seen.run.output).toEqual({
      solo: 'only reply',
      merged: { x: 'x reply', y: 'y' },
      g: { doubled: 42 },
      mine: 'root',
      xNode: 'x reply',
      yCode: { doubled: 42 },
    });
  });
});

describe('copies (seed 002) of runs that ended in or after a fork', () => {
  const failingJoin: WorkflowSpec = {
    variables: [{ name: 'g', type: 'number', scope: 'global', initial: 0 }],
    profiles: {
      default: { provider: 'scripted', byNode: { intro: ['intro reply'], 'a-llm': ['a reply'] } },
      broken: { provider: 'scripted', responses: [] },
    },
    nodes: [
      node.start(),
      node.llm('intro', 'intro'),
      node.fork('split', ['a', 'b'], ['a-llm', 'b-g']),
      node.llm('a-llm', 'a'),
      node.set('b-g', 'g', 'number', 'g + 1'),
      node.llm('b-llm', 'b', { profileId: 'broken' }),
      node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'b' }),
      node.end({ merged: '{{nodes.merge}}', g: '{{g}}' }),
    ],
    edges: ['start>intro>split', 'a-llm>merge', 'b-g>b-llm>merge', 'merge>end'],
  };

  it('a copy of a run that failed at its JOIN stands at the FORK, holds what the source ended with, and runs the branches again', async () => {
    const source = await run('combo-copy-failed-join', failingJoin);
    expect(source.run.error).toMatchObject({ code: 'JOIN_FAILED', nodeId: 'merge' });
    const made = await cli([
      'copy',
      source.run.threadId,
      '--profile',
      'broken={"provider": "scripted", "responses": ["fixed"]}',
    ]);
    expect(made.code, made.stderr).toBe(0);
    const copyId = made.stdout.trim();
    const before = (await inspect(copyId)).threads[0]!;
    expect(before).toMatchObject({
      status: 'CREATED',
      currentNodeId: 'split',
      variables: { global: { g: 1 } },
    });
    const ran = await cli(['run', join(dir, 'combo-copy-failed-join.json'), '--thread', copyId, '--json']);
    const result = JSON.parse(ran.stdout) as RunJsonResult;
    expect(result.status, ran.stderr).toBe('COMPLETED');
    // g was 1 when the source failed; b's increment ran again in the copy's run.
    expect(result.output).toEqual({ merged: { a: 'a reply', b: 'fixed' }, g: 2 });
    expect(result.conversation.map((m) => `${m.role}: ${m.content}`)).toEqual([
      u('intro'),
      a('intro reply'),
      u('b'),
      a('fixed'),
    ]);
    // The source is still the failed run it was.
    const after = await inspect(source.run.executionId);
    expect(after.threads.find((t) => t.threadId === source.run.threadId)).toMatchObject({
      status: 'FAILED',
      variables: { global: { g: 1 } },
    });
  });

  it('time travel in a loop of forks: copies from before the FORK and from after the JOIN of the last iteration reach the source’s output', async () => {
    const spec: WorkflowSpec = {
      variables: [{ name: 'hist', type: 'array', scope: 'thread', initial: [] }],
      replies: { 'a-llm': ['a1', 'a2', 'a3'], 'b-llm': ['b1', 'b2', 'b3'] },
      nodes: [
        node.start(),
        node.loop('each', 'L', { dataSource: 3 }),
        node.fork('split', ['a', 'b'], ['a-llm', 'b-llm']),
        node.llm('a-llm', 'a{{len(hist)}}'),
        node.llm('b-llm', 'b{{len(hist)}}'),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'b' }),
        node.set('record', 'hist', 'array', 'concat(hist, [nodes.merge])'),
        node.loopEnd('next', 'L'),
        node.end('{{hist}}'),
      ],
      edges: ['start>each>split', 'a-llm>merge', 'b-llm>merge', 'merge>record>next>end'],
    };
    const source = await run('combo-copy-loop-forks', spec);
    completed(source);
    const want = [
      { a: 'a1', b: 'b1' },
      { a: 'a2', b: 'b2' },
      { a: 'a3', b: 'b3' },
    ];
    expect(source.run.output).toEqual(want);
    const forkSteps = source.root.nodes.filter((n) => n.nodeId === 'split').map((n) => n.step);
    for (const from of ['split', 'record', String(forkSteps[1])]) {
      const made = await cli(['copy', source.run.threadId, '--from', from]);
      expect(made.code, made.stderr).toBe(0);
      const ran = await cli([
        'run',
        join(dir, 'combo-copy-loop-forks.json'),
        '--thread',
        made.stdout.trim(),
        '--json',
      ]);
      const result = JSON.parse(ran.stdout) as RunJsonResult;
      expect(result.status, `${from}: ${ran.stderr}`).toBe('COMPLETED');
      expect(result.output, from).toEqual(want);
      expect(
        result.conversation.map((m) => `${m.role}: ${m.content}`),
        from,
      ).toEqual(source.run.conversation.map((m) => `${m.role}: ${m.content}`));
    }
  });
});

describe('hooks and events around a fork, its branches and its join (seed 003 §2.1)', () => {
  it('each thread records its own nodes in order; the JOIN’s AFTER hooks see the merged output', async () => {
    const hook = (hookType: string, eventName: string, extra: Record<string, unknown> = {}) => ({
      hookType,
      eventName,
      ...extra,
    });
    const spec: WorkflowSpec = {
      replies: { 'a-llm': ['a reply'] },
      nodes: [
        node.start(),
        {
          ...node.fork('split', ['a', 'b'], ['a-llm', 'b-show']),
          hooks: [hook('BEFORE_EXECUTE', 'before-split'), hook('AFTER_EXECUTE', 'after-split')],
        },
        {
          ...node.llm('a-llm', 'a'),
          hooks: [hook('AFTER_EXECUTE', 'a-done', { eventPayload: { said: '{{result.output}}' } })],
        },
        node.ask('b-show', 'show_message', { showMessage: 'shown on b' }),
        {
          ...node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'b' }),
          hooks: [
            hook('AFTER_EXECUTE', 'merged', {
              condition: "result.output.a == 'a reply'",
              eventPayload: { b: '{{result.output.b}}' },
            }),
            hook('AFTER_EXECUTE', 'never', { condition: 'result.output.a == 1' }),
          ],
        },
        node.end('{{nodes.merge}}'),
      ],
      edges: ['start>split', 'a-llm>merge', 'b-show>merge', 'merge>end'],
    };
    const seen = await run('combo-hooks', spec);
    completed(seen);
    expect(seen.run.output).toEqual({ a: 'a reply', b: 'shown on b' });
    expect(seen.conversation()).toEqual([a('shown on b')]);
    expect(seen.events()).toEqual([
      'THREAD_CREATED',
      'THREAD_STARTED',
      'NODE_STARTED start',
      'NODE_COMPLETED start',
      'NODE_STARTED split',
      'HOOK_TRIGGERED split',
      'THREAD_FORKED split',
      'HOOK_TRIGGERED split',
      'NODE_COMPLETED split',
      'NODE_STARTED merge',
      'THREAD_JOINED merge',
      'HOOK_TRIGGERED merge',
      'NODE_COMPLETED merge',
      'NODE_STARTED end',
      'NODE_COMPLETED end',
      'THREAD_COMPLETED',
    ]);
    const joinHook = seen.root.events.find((e) => e.type === 'HOOK_TRIGGERED' && e.nodeId === 'merge');
    expect(joinHook).toMatchObject({ eventName: 'merged', payload: { b: 'shown on b' } });
    const branchA = seen.one('split/a').threadId;
    expect(seen.events(branchA).filter((e) => !e.startsWith('THREAD_'))).toEqual([
      'NODE_STARTED a-llm',
      'HOOK_TRIGGERED a-llm',
      'NODE_COMPLETED a-llm',
    ]);
    expect(seen.thread(branchA).events.find((e) => e.type === 'HOOK_TRIGGERED')).toMatchObject({
      payload: { said: 'a reply' },
    });
  });
});

describe('loops and forks nested deeper', () => {
  it('a fork inside a loop inside a fork branch; a breakCondition reads the inner join’s merge', async () => {
    const seen = await run('combo-fork-loop-fork', {
      variables: [
        { name: 'g', type: 'number', scope: 'global', initial: 0 },
        { name: 'rounds', type: 'array', scope: 'thread', initial: [] },
      ],
      replies: { 'p-llm': ['go', 'go', 'stop', 'never'], 'y-llm': ['y reply'] },
      nodes: [
        node.start(),
        node.fork('outer', ['x', 'y'], ['x-loop', 'y-llm']),
        node.loop('x-loop', 'X', { maxIterations: 5 }),
        node.fork('inner', ['p', 'q'], ['p-llm', 'q-g']),
        node.llm('p-llm', 'p {{index ?? "none"}}'),
        node.set('q-g', 'g', 'number', 'g + 1'),
        node.join('inner-merge', ['p', 'q'], 'ALL_COMPLETED'),
        node.set('x-rec', 'rounds', 'array', "concat(rounds, [nodes['inner-merge'].p])"),
        node.loopEnd('x-end', 'X', { breakCondition: "nodes['inner-merge'].p == 'stop'" }),
        node.set('x-out', 'out', 'array', 'rounds'),
        node.llm('y-llm', 'y'),
        node.join('outer-merge', ['x', 'y'], 'ALL_COMPLETED'),
        node.end({ merged: "{{nodes['outer-merge']}}", g: '{{g}}', rounds: '{{rounds}}' }),
      ],
      edges: [
        'start>outer',
        'x-loop>inner',
        'p-llm>inner-merge',
        'q-g>inner-merge',
        'inner-merge>x-rec>x-end>x-out>outer-merge',
        'y-llm>outer-merge',
        'outer-merge>end',
      ],
    });
    completed(seen);
    expect(seen.run.output).toEqual({
      merged: { x: ['go', 'go', 'stop'], y: 'y reply' },
      g: 3,
      rounds: [],
    });
    // The main path x's conversation: the inner join restored p's each round.
    expect(seen.conversation()).toEqual([u('p none'), a('go'), u('p none'), a('go'), u('p none'), a('stop')]);
    expect(seen.path('inner/p')).toHaveLength(3);
    for (const p of seen.path('inner/p')) expect(p.parentThreadId).toBe(seen.one('outer/x').threadId);
  });

  it('a fork inside the inner of two nested loops; the outer index kept in a variable; a global counts every branch', async () => {
    const seen = await run('combo-nested-loops-fork', {
      variables: [
        { name: 'g', type: 'number', scope: 'global', initial: 0 },
        { name: 'outerIndex', type: 'number', scope: 'thread', initial: 0 },
        { name: 'cells', type: 'array', scope: 'thread', initial: [] },
      ],
      nodes: [
        node.start(),
        node.loop('rows', 'R', { dataSource: ['r0', 'r1'], iterationVariable: 'row' }),
        node.set('keep-row', 'outerIndex', 'number', 'index'),
        node.loop('cols', 'C', { dataSource: 2, iterationVariable: 'col' }),
        node.set('cell', 'here', 'string', "row + ':' + col"),
        node.fork('split', ['a', 'b'], ['a-g', 'b-g']),
        node.set('a-g', 'g', 'number', 'g + 1'),
        node.set('b-g', 'g', 'number', 'g + 10'),
        node.set('b-here', 'seen', 'string', "here + '@' + outerIndex + (row ?? '-')"),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED'),
        node.set('rec', 'cells', 'array', 'concat(cells, [nodes.merge.b])'),
        node.loopEnd('cols-end', 'C'),
        node.loopEnd('rows-end', 'R'),
        node.end({ g: '{{g}}', cells: '{{cells}}' }),
      ],
      edges: [
        'start>rows>keep-row>cols>cell>split',
        'a-g>merge',
        'b-g>b-here>merge',
        'merge>rec>cols-end>rows-end>end',
      ],
    });
    completed(seen);
    expect(seen.run.output).toEqual({
      g: 44,
      cells: ['r0:0@0-', 'r0:1@0-', 'r1:0@1-', 'r1:1@1-'],
    });
  });

  it('a truncate in a loop on a fork path keeps a window; the main path hands it to the parent', async () => {
    const seen = await run('combo-window-in-branch', {
      replies: { chat: ['c1', 'c2', 'c3'], 'b-llm': ['b reply'], intro: ['intro reply'] },
      nodes: [
        node.start(),
        node.llm('intro', 'intro'),
        node.fork('split', ['a', 'b'], ['each', 'b-llm']),
        node.loop('each', 'L', { dataSource: 3 }),
        node.llm('chat', 'turn {{index}}'),
        node.context('window', 'truncate', { keepLast: 3 }),
        node.loopEnd('next', 'L'),
        node.llm('b-llm', 'b'),
        node.join('merge', ['a', 'b'], 'ANY_COMPLETED', { mainPathId: 'a' }),
        node.end('{{nodes.merge}}'),
      ],
      edges: ['start>intro>split', 'each>chat>window>next>merge', 'b-llm>merge', 'merge>end'],
    });
    completed(seen);
    // ANY_COMPLETED merges one branch, the main path's: a's last node's output, the LOOP_START that
    // found no iteration left.
    expect(seen.run.output).toEqual({ exit: true, iterations: 3 });
    expect(seen.conversation()).toEqual([a('c2'), u('turn 2'), a('c3')]);
  });

  it('serial ANY_COMPLETED in a loop with the second path as main: each iteration merges the main path alone', async () => {
    const seen = await run('combo-serial-any-main-second', {
      variables: [{ name: 'hist', type: 'array', scope: 'thread', initial: [] }],
      replies: { 'a-llm': ['a1', 'a2'], 'b-llm': ['b1', 'b2'] },
      nodes: [
        node.start(),
        node.loop('each', 'L', { dataSource: 2 }),
        node.fork('split', ['a', 'b'], ['a-llm', 'b-llm'], 'serial'),
        node.llm('a-llm', 'a'),
        node.llm('b-llm', 'b'),
        node.join('merge', ['a', 'b'], 'ANY_COMPLETED', { mainPathId: 'b' }),
        node.set('record', 'hist', 'array', 'concat(hist, [nodes.merge])'),
        node.loopEnd('next', 'L'),
        node.end('{{hist}}'),
      ],
      edges: ['start>each>split', 'a-llm>merge', 'b-llm>merge', 'merge>record>next>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual(['b1', 'b2']);
    expect(seen.conversation()).toEqual([u('b'), a('b1'), u('b'), a('b2')]);
  });

  it('a FORK over a list inside a loop: each item counts from the FORK’s calls, the JOIN adds them all; mainItem’s conversation continues', async () => {
    const seen = await run('combo-list-fork-in-loop', {
      variables: [{ name: 'all', type: 'array', scope: 'thread', initial: [] }],
      replies: { sum: ['s1', 's2', 's3', 's4'] },
      nodes: [
        node.start(),
        node.loop('rounds', 'R', { dataSource: [['x', 'y'], ['z']], iterationVariable: 'batch' }),
        node.set('keep', 'docs', 'array', 'batch'),
        node.fork('each-doc', ['sum'], ['sum'], 'serial', { forEach: '{{docs}}', itemVariable: 'doc' }),
        node.llm('sum', 'sum {{doc}} {{docIndex}}'),
        node.join('merge', ['sum'], 'ALL_COMPLETED', { mainItem: 0 }),
        node.set('rec', 'all', 'array', 'concat(all, nodes.merge)'),
        node.loopEnd('next', 'R'),
        node.end('{{all}}'),
      ],
      edges: ['start>rounds>keep>each-doc', 'sum>merge', 'merge>rec>next>end'],
    });
    completed(seen);
    // Every item starts from the parent's calls (serial too), so x and y both get the first reply;
    // the second iteration's item comes after the first iteration's two calls.
    expect(seen.run.output).toEqual(['s1', 's1', 's3']);
    expect(seen.conversation()).toEqual([u('sum x 0'), a('s1'), u('sum z 0'), a('s3')]);
  });
});

describe('a JOIN’s merge handed on', () => {
  it('into a SUBGRAPH’s inputMapping after the join, and its output mapped back; an LLM outputVariable set on a path stays there', async () => {
    const report = {
      id: 'report',
      version: 1,
      variables: [{ name: 'parts', type: 'object', scope: 'subgraph' }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'write', type: 'LLM', config: { prompt: 'report on {{parts.facts}} and {{parts.risks}}' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.write}}' } },
      ],
      edges: chains('start>write>end'),
    };
    const seen = await run('combo-merge-into-subgraph', {
      variables: [
        { name: 'note', type: 'string', scope: 'thread', initial: 'none' },
        { name: 'final', type: 'string', scope: 'thread', initial: '' },
      ],
      replies: { facts: ['F'], risks: ['R'], 'rep.write': ['the report'] },
      nodes: [
        node.start(),
        node.fork('split', ['facts', 'risks'], ['facts', 'risks']),
        node.llm('facts', 'facts', { outputVariable: 'note' }),
        node.llm('risks', 'risks'),
        node.join('merge', ['facts', 'risks'], 'ALL_COMPLETED', { mainPathId: 'risks' }),
        node.subgraph('rep', report, {
          inputMapping: { parts: 'nodes.merge' },
          outputMapping: { final: 'output' },
        }),
        node.end({ final: '{{final}}', note: '{{note}}' }),
      ],
      edges: ['start>split', 'facts>merge', 'risks>merge', 'merge>rep>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({ final: 'the report', note: 'none' });
    expect(seen.conversation()).toEqual([u('risks'), a('R'), u('report on F and R'), a('the report')]);
    expect(seen.one('split/facts').variables.thread).toMatchObject({ note: 'F' });
  });
});

describe('a path with no node of its own (its FORK lists the JOIN as its first node)', () => {
  it('completes with no output: several paths keep its key, as null, beside the others', async () => {
    const seen = await run('combo-empty-path', {
      replies: { intro: ['intro reply'], 'a-llm': ['a reply'] },
      nodes: [
        node.start(),
        node.llm('intro', 'intro'),
        node.fork('split', ['a', 'b'], ['a-llm', 'merge']),
        node.llm('a-llm', 'a'),
        node.join('merge', ['a', 'b'], 'ALL_COMPLETED', { mainPathId: 'b' }),
        node.code('keys', 'return Object.keys(input.m)', { inputs: { m: 'nodes.merge' } }),
        node.end({ merged: '{{nodes.merge}}', keys: '{{nodes.keys}}' }),
      ],
      edges: ['start>intro>split', 'a-llm>merge', 'merge>keys>end'],
    });
    completed(seen);
    expect(seen.run.output).toEqual({ merged: { a: 'a reply', b: null }, keys: ['a', 'b'] });
    // b, the main path, ran nothing: the parent continues with the conversation it had.
    expect(seen.conversation()).toEqual([u('intro'), a('intro reply')]);
  });
});
