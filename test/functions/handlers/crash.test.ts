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
type Scenario = (call: Call, executionId: string) => Promise<{ threadIds: string[] }>;

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
  await call(exec(join, b, 'branch-done'), 'stepthread.JoinDecided');
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
async function finalState(executionId: string, threadIds: string[]): Promise<string> {
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
  let text = JSON.stringify({ threads, conversations, joins, execution });
  for (const [i, id] of [executionId, ...threadIds].entries()) text = text.split(id).join(`<id${i}>`);
  return text;
}

const scenarios: [string, Scenario][] = [
  ['linear (START, LLM, CONTEXT_PROCESSOR, LOOP, VARIABLE, ROUTE, END)', linear],
  ['fork/join (FORK, branch nodes, global write, branch-done, JOIN, END)', forkJoin],
  ['failure (CODE fails, fail action)', failing],
];

describe('crash injection', () => {
  for (const [name, scenario] of scenarios) {
    it(`${name}: a crash after any write, then a retry, leaves the fault-free state`, async () => {
      const counting = crashingStores(h.stores, 0);
      const refId = `${name.split(' ')[0]}-ref`;
      const ref = await scenario(caller(counting), refId);
      const expected = await finalState(refId, ref.threadIds);
      const writes = counting.writes();
      expect(writes).toBeGreaterThan(5);
      for (let n = 1; n <= writes; n += 1) {
        const executionId = `${name.split(' ')[0]}-crash-${n}`;
        const crashing = crashingStores(h.stores, n);
        const result = await scenario(caller(crashing), executionId);
        expect(crashing.writes(), `crash at write ${n}`).toBeGreaterThanOrEqual(n);
        expect(await finalState(executionId, result.threadIds), `crash at write ${n}`).toBe(expected);
      }
    });
  }
});
