/**
 * Crash injection: for every write a scenario makes (S3 append, thread create/update, execution
 * record, join record, child creation), a run where that write succeeds and the handler then dies,
 * followed by a retry of the same Task input, ends in exactly the state of a fault-free run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../../engine/thread/types.ts';
import type { HandlerStores } from '../../../functions/handlers/deps.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { JOIN_KEY } from '../../../functions/nodes/fork.ts';
import { branchEnvelope, forkNode, joinNode } from './fork-fixtures.ts';
import { crashingStores, fixedEnv, type Harness, startEvent, startHarness, withRetry } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('crash');
});
afterAll(() => h.close());

type Call = (event: unknown, expectError?: string) => Promise<Envelope>;

/** A scenario drives tasks through `call` and returns the ids its state lives under. */
type Scenario = (
  call: Call,
  executionId: string,
) => Promise<{ threadIds: string[]; executionIds?: string[] }>;

const profile = {
  provider: 'scripted' as const,
  responses: ['r0', 'r1', 'r2'],
  byNode: { a1: ['from a'], b1: ['from b'] },
};
const llm = (id: string, extra: Record<string, unknown> = {}): TaskNode => ({
  id,
  type: 'LLM',
  config: { prompt: `prompt of ${id} {{count}}`, ...extra },
  profile,
});
const exec = (node: TaskNode, envelope: Envelope, action = 'execute') => ({ action, node, envelope });

const linear: Scenario = async (call, executionId) => {
  let env = await call(
    startEvent(executionId, { items: [1, 2] }, [{ name: 'count', type: 'number', initial: 0 }]),
  );
  env = await call(exec(llm('ask', { outputVariable: 'said' }), env));
  env = await call(
    exec(
      {
        id: 'ins',
        type: 'CONTEXT_PROCESSOR',
        config: {
          operation: 'insert',
          insert: { position: 0, messages: [{ role: 'system', content: 'be brief' }] },
        },
      },
      env,
    ),
  );
  const loopStart: TaskNode = {
    id: 'ls',
    type: 'LOOP_START',
    config: { loopId: 'L', dataSource: '{{input.items}}', maxIterations: 5 },
  };
  const body: TaskNode = {
    id: 'inc',
    type: 'VARIABLE',
    config: { variableName: 'count', variableType: 'number', expression: 'count + item' },
  };
  const loopEnd: TaskNode = { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } };
  for (;;) {
    env = await call(exec(loopStart, env));
    if (env.loop?.exit) break;
    env = await call(exec(body, env));
    env = await call(exec(llm('again'), env));
    env = await call(exec(loopEnd, env));
  }
  env = await call(
    exec(
      { id: 'pick', type: 'ROUTE', config: { routes: [{ condition: 'count > 2', targetNodeId: 'end' }] } },
      env,
    ),
  );
  env = await call(
    exec({ id: 'end', type: 'END', config: { output: { count: '{{count}}', said: '{{said}}' } } }, env),
  );
  return { threadIds: [env.threadId] };
};

const forkJoin: Scenario = async (call, executionId) => {
  let env = await call(
    startEvent(executionId, {}, [{ name: 'shared', type: 'number', scope: 'global', initial: 1 }]),
  );
  env = await call(exec(llm('intro'), env));
  const forkEnv = await call(exec(forkNode(), env));
  const join = joinNode('ALL_COMPLETED');
  let a = await call(exec(llm('a1'), branchEnvelope(forkEnv, 0)));
  a = await call(
    exec(
      {
        id: 'a2',
        type: 'VARIABLE',
        config: { variableName: 'shared', variableType: 'number', expression: 'shared * 10' },
      },
      a,
    ),
  );
  const b = await call(exec(llm('b1'), branchEnvelope(forkEnv, 1)));
  await call(exec(join, a, 'branch-done'));
  // b's report decides the join: a result (joinDecided), not an error.
  await call(exec(join, b, 'branch-done'));
  env = await call(exec(join, { ...forkEnv, joinEnd: { Error: 'stepthread.JoinDecided' } } as Envelope));
  await call(exec({ id: 'end', type: 'END', config: { output: '{{nodes.merge}}' } }, env));
  return { threadIds: [env.threadId, ...forkEnv.fork!.children] };
};

const failing: Scenario = async (call, executionId) => {
  let env = await call(startEvent(executionId));
  env = await call(exec(llm('ask'), env));
  await call(
    exec({ id: 'code', type: 'CODE', config: { code: 'throw new Error("x")' } }, env),
    'stepthread.NodeFailed',
  );
  const error = {
    Error: 'stepthread.NodeFailed',
    Cause: JSON.stringify({ code: 'CODE_ERROR', message: 'x', nodeId: 'code' }),
  };
  await call({ action: 'fail', node: { id: 'stepthread:fail', type: 'END' }, envelope: { ...env, error } });
  return { threadIds: [env.threadId] };
};

/**
 * Continue-as-new: a loop whose LOOP_END's Choice continues the run; the successor execution's
 * `resume` claims the thread, records itself and links its predecessor, and the loop goes on there.
 * Tasks carry the history events the compiler gives them.
 */
const continuing: Scenario = async (call, executionId) => {
  const counted = (event: object, historyEvents: number) => ({ ...event, historyEvents });
  let env = await call(
    counted(startEvent(executionId, {}, [{ name: 'count', type: 'number', initial: 0 }]), 8),
  );
  const loopStart: TaskNode = { id: 'ls', type: 'LOOP_START', config: { loopId: 'L', maxIterations: 3 } };
  const body: TaskNode = {
    id: 'inc',
    type: 'VARIABLE',
    config: { variableName: 'count', variableType: 'number', expression: 'count + 1' },
  };
  const loopEnd: TaskNode = { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } };
  env = await call(counted(exec(loopStart, env), 7));
  env = await call(counted(exec(body, env), 5));
  env = await call(counted(exec(loopEnd, env), 7));
  expect(env.history).toBe(27);
  // `le:choice` saw the threshold passed: `le:continue` started this execution with the envelope.
  const successor = `${executionId}-next`;
  env = await call({
    action: 'resume',
    node: { id: 'stepthread:resume', type: 'START', workflowId: 'wf' },
    executionId: successor,
    envelope: env,
    resume: { at: 'le:choice', node: { id: 'le', type: 'LOOP_END' } },
    historyEvents: 12,
  });
  expect(env).toMatchObject({ executionId: successor, step: 4, history: 12, resumeAt: 'le:choice' });
  for (;;) {
    env = await call(counted(exec(loopStart, env), 7));
    if (env.loop?.exit) break;
    env = await call(counted(exec(body, env), 5));
    env = await call(counted(exec(loopEnd, env), 7));
  }
  env = await call(
    counted(exec({ id: 'end', type: 'END', config: { output: { count: '{{count}}' } } }, env), 5),
  );
  expect(env).toMatchObject({ executionId: successor, step: 12 });
  return { threadIds: [env.threadId], executionIds: [successor] };
};

function caller(stores: HandlerStores): Call {
  return async (event, expectError) => {
    const deps = { ...stores, env: fixedEnv };
    return withRetry(async () => {
      try {
        const next = (await dispatch(event, deps)) as Envelope;
        if (expectError) throw new Error(`expected ${expectError}`);
        return next;
      } catch (error) {
        if (expectError && error instanceof Error && error.name === expectError) return undefined as never;
        throw error;
      }
    });
  };
}

/** Everything a run leaves behind, with its run-specific ids replaced by placeholders. */
async function finalState(
  executionId: string,
  threadIds: string[],
  executionIds: string[] = [],
): Promise<string> {
  const threads = await h.stores.threads.getThreads(threadIds);
  const conversations = await Promise.all(threads.map(({ thread }) => h.readMessages(thread)));
  const joinKeys = [
    ...new Set(
      threads.flatMap(({ thread }) => {
        const key = thread.metadata[JOIN_KEY];
        return typeof key === 'string' ? [key] : [];
      }),
    ),
  ];
  const joins = await Promise.all(joinKeys.map((key) => h.stores.joins.getBranchOutcomes(key)));
  const execution = await h.stores.executions.getExecution(executionId);
  const later = await Promise.all(executionIds.map((id) => h.stores.executions.getExecution(id)));
  let text = JSON.stringify({ threads, conversations, joins, execution, later });
  for (const [i, id] of [executionId, ...threadIds].entries()) text = text.split(id).join(`<id${i}>`);
  return text;
}

const scenarios: [string, Scenario][] = [
  ['linear (START, LLM, CONTEXT_PROCESSOR, LOOP, VARIABLE, ROUTE, END)', linear],
  ['fork/join (FORK, branch nodes, global write, branch-done, JOIN, END)', forkJoin],
  ['failure (CODE fails, fail action)', failing],
  ['continue-as-new (a loop continues in a new execution: resume, records, THREAD_CONTINUED)', continuing],
];

describe('crash injection', () => {
  for (const [name, scenario] of scenarios) {
    it(`${name}: a crash after any write, then a retry, leaves the fault-free state`, async () => {
      const counting = crashingStores(h.stores, 0);
      const refId = `${name.split(' ')[0]}-ref`;
      const ref = await scenario(caller(counting), refId);
      const expected = await finalState(refId, ref.threadIds, ref.executionIds);
      const writes = counting.writes();
      expect(writes).toBeGreaterThan(5);
      for (let n = 1; n <= writes; n += 1) {
        const executionId = `${name.split(' ')[0]}-crash-${n}`;
        const crashing = crashingStores(h.stores, n);
        const result = await scenario(caller(crashing), executionId);
        expect(crashing.writes(), `crash at write ${n}`).toBeGreaterThanOrEqual(n);
        expect(
          await finalState(executionId, result.threadIds, result.executionIds),
          `crash at write ${n}`,
        ).toBe(expected);
      }
    });
  }
});

/**
 * The steps that fill a tail page (turn 30) or a page (turn 32) write two objects beside their
 * record and head. A crash after any write of that step, then a retry, leaves a log that a cold read
 * (an empty cache) finds whole. Each run tags its prompts, so no run's objects stand in for another's.
 */
describe('crash injection at page fills', () => {
  const turn = (i: number): TaskNode => ({
    id: `t${i}`,
    type: 'LLM',
    config: { prompt: `{{input.tag}} turn ${i}` },
    profile,
  });

  /** START and `turns` LLM steps, the last through `last` (the others fault-free); the thread. */
  async function chat(tag: string, turns: number, last: HandlerStores) {
    const plain = caller(h.stores);
    let env = await plain(startEvent(tag, { tag }));
    for (let i = 1; i < turns; i += 1) env = await plain(exec(turn(i), env));
    env = await caller(last)(exec(turn(turns), env));
    const { thread } = await h.stores.threads.getThread(env.threadId);
    const messages = JSON.stringify(await h.readMessages(thread))
      .split(tag)
      .join('<tag>');
    return { thread, messages };
  }

  for (const turns of [30, 32]) {
    it(`turn ${turns}: a crash after any write of the filling step, then a retry, leaves the whole log`, async () => {
      const counting = crashingStores(h.stores, 0);
      const reference = await chat(`fill-${turns}-ref`, turns, counting);
      expect(reference.thread.conversation.log.length).toBe(2 * turns);
      const writes = counting.writes();
      expect(writes).toBeGreaterThanOrEqual(3);
      for (let n = 1; n <= writes; n += 1) {
        const crashed = await chat(`fill-${turns}-crash-${n}`, turns, crashingStores(h.stores, n));
        expect(crashed.thread.conversation.log.length, `crash at write ${n}`).toBe(2 * turns);
        expect(crashed.messages, `crash at write ${n}`).toBe(reference.messages);
      }
    }, 120_000);
  }
});
