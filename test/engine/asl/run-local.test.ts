/**
 * Runs compiled definitions in aws-local-stepfunctions with stand-in handlers that follow the runtime
 * contract exactly (step checks, fork children, join decisions, route/loop fields), so the ASL plumbing —
 * envelopes through Pass and Parallel states, early join termination, timers, failure routing — is
 * checked without the real handlers.
 */
import { StateMachine } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import {
  type CompiledWorkflow,
  compileWorkflow,
  type IncomingEnvelope,
  type JoinBranchDescription,
  type NodeDescription,
  type TaskStateEntry,
  taskStateIndex,
} from '../../../engine/asl/index.ts';
import { isNodeRef, type NodeTable } from '../../../engine/asl/node-table.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import { loadWorkflow } from './corpus.ts';
import { everyNodeType, forkInFork, forkInLoop, routesInFork } from './workflows.ts';

interface Script {
  /** ROUTE node id → the targets it picks on successive visits (undefined: no route). */
  routes?: Record<string, (string | undefined)[]>;
  /** Loop id → iterations before LOOP_START reports the data exhausted. */
  iterations?: Record<string, number>;
  /** Node ids whose `execute` fails with stepthread.NodeFailed. */
  failing?: string[];
  /** Node ids whose first `execute` attempt throws stepthread.Transient. */
  flaky?: string[];
  /** Node ids whose handler never returns (a slow branch). */
  hanging?: string[];
}

interface Call {
  state: string;
  action: string;
  thread: string;
  step?: number;
}

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** The state machine's side of every handler, kept in memory. */
function fakeRuntime({ definition, nodeTable }: CompiledWorkflow, script: Script = {}) {
  // What the dispatch does first: a node's Tasks name it in the compiled node table.
  const { nodes } = JSON.parse(nodeTable.json) as NodeTable;
  const described = (node: unknown) => (isNodeRef(node) ? nodes[node.id] : node);
  const steps = new Map<string, number>();
  const calls: Call[] = [];
  const seen: Record<string, IncomingEnvelope[]> = {};
  const loopCounts = new Map<string, number>();
  const routeVisits = new Map<string, number>();
  const outcomes = new Map<string, Map<number, 'COMPLETED' | 'FAILED'>>();
  const attempts = new Map<string, number>();

  const advance = (envelope: Envelope, nodeId: string, extra: Partial<Envelope> = {}): Envelope => {
    const { executionId, workflowId, workflowVersion, rootThreadId, threadId, step, maxSteps } = envelope;
    if (steps.get(threadId) !== step)
      throw new Error(`${nodeId}: thread ${threadId} is at ${steps.get(threadId)}, envelope at ${step}`);
    steps.set(threadId, step + 1);
    return {
      executionId,
      workflowId,
      workflowVersion,
      rootThreadId,
      threadId,
      step: step + 1,
      maxSteps,
      last: { nodeId, status: 'COMPLETED' },
      ...extra,
    };
  };

  const execute = (
    node: Exclude<NodeDescription, { type: 'START' }>,
    envelope: IncomingEnvelope,
  ): Envelope => {
    const attempt = (attempts.get(`${envelope.threadId}#${envelope.step}`) ?? 0) + 1;
    attempts.set(`${envelope.threadId}#${envelope.step}`, attempt);
    if (script.flaky?.includes(node.id) && attempt === 1) throw named('stepthread.Transient', 'throttled');
    if (script.failing?.includes(node.id)) {
      throw named(
        'stepthread.NodeFailed',
        JSON.stringify({ code: 'NODE_EXECUTION_FAILED', message: `${node.id} broke` }),
      );
    }
    switch (node.type) {
      case 'ROUTE': {
        const visit = routeVisits.get(node.id) ?? 0;
        routeVisits.set(node.id, visit + 1);
        const picks = script.routes?.[node.id];
        const route = picks ? picks[Math.min(visit, picks.length - 1)] : node.config.routes[0]?.targetNodeId;
        return advance(envelope, node.id, route === undefined ? {} : { route });
      }
      case 'LOOP_START': {
        const key = `${envelope.threadId}:${node.config.loopId}`;
        const count = (loopCounts.get(key) ?? 0) + 1;
        const limit = Math.min(
          node.config.maxIterations,
          script.iterations?.[node.config.loopId] ?? Infinity,
        );
        if (count > limit) loopCounts.delete(key);
        else loopCounts.set(key, count);
        return advance(envelope, node.id, { loop: { exit: count > limit } });
      }
      case 'LOOP_END':
        return advance(envelope, node.id, { loop: { exit: false } });
      case 'FORK': {
        const children = node.authorForkPathIds.map(
          (path) => `${envelope.threadId}>${node.id}@${envelope.step}/${path}`,
        );
        for (const child of children) steps.set(child, 0);
        return advance(envelope, node.id, { fork: { children } });
      }
      default:
        return advance(envelope, node.id);
    }
  };

  const report = (
    node: JoinBranchDescription,
    envelope: IncomingEnvelope,
    status: 'COMPLETED' | 'FAILED',
  ) => {
    const instance = `${envelope.threadId.slice(0, envelope.threadId.lastIndexOf('/'))}`;
    const recorded = outcomes.get(instance) ?? new Map<number, 'COMPLETED' | 'FAILED'>();
    outcomes.set(instance, recorded);
    recorded.set(node.path.index, status);
    const values = [...recorded.values()];
    const all = recorded.size === node.paths;
    // Deciding at the last report also covers "a timer exists and every path has reported".
    const decided = node.config.joinStrategy === 'ANY_COMPLETED' ? values.includes('COMPLETED') || all : all;
    // A decision is the report's result: the Choice after it fails the path with JoinDecided.
    if (decided) return { ...envelope, joinDecided: `${node.id} decided by ${node.path.authorPathId}` };
    return envelope;
  };

  const handle = async (entry: TaskStateEntry, raw: unknown): Promise<unknown> => {
    const event = (entry.invocation === 'waitForTaskToken' ? (raw as { Payload: unknown }).Payload : raw) as {
      action?: string;
      node: NodeDescription | JoinBranchDescription;
      envelope: IncomingEnvelope;
      executionId: string;
      input: unknown;
      taskToken?: string;
      /** A path's last node reports the path itself. */
      report?: JoinBranchDescription;
    };
    event.node = described(event.node) as NodeDescription | JoinBranchDescription;
    // A node's own Task names no action: execute is the default, as in the dispatch.
    event.action ??= 'execute';
    if (entry.invocation === 'waitForTaskToken') expect(event.taskToken).toBe('local-token');
    if (event.node.type === 'START' && event.action === 'execute') {
      calls.push({ state: entry.stateName, action: 'execute', thread: 'root', step: 0 });
      steps.set('root', 1);
      const { workflow } = event.node;
      return {
        executionId: event.executionId,
        workflowId: workflow.id,
        workflowVersion: workflow.version,
        rootThreadId: 'root',
        threadId: 'root',
        step: 1,
        maxSteps: workflow.maxSteps,
      } satisfies Envelope;
    }
    const { envelope } = event;
    calls.push({
      state: entry.stateName,
      action: event.action,
      thread: envelope.threadId,
      step: envelope.step,
    });
    seen[entry.stateName] = [...(seen[entry.stateName] ?? []), envelope];
    if (script.hanging?.includes(event.node.id)) return new Promise(() => {});
    // The token's result lands at $.answer; the `answer` Task commits the step.
    if (entry.invocation === 'waitForTaskToken') return { reply: { kind: 'approve' } };
    switch (event.action) {
      case 'answer': {
        const { answer, ...rest } = envelope as IncomingEnvelope & { answer?: unknown };
        if (JSON.stringify(answer) !== JSON.stringify({ reply: { kind: 'approve' } }))
          throw new Error(`${entry.stateName}: no answer at $.answer`);
        return advance(rest, event.node.id);
      }
      case 'execute': {
        const next = execute(event.node as Exclude<NodeDescription, { type: 'START' }>, envelope);
        // The path's last node: its step also reports the path to the JOIN, as `branch-done` would.
        return event.report ? report(event.report, next, 'COMPLETED') : next;
      }
      case 'branch-done':
        return report(event.node as JoinBranchDescription, envelope, 'COMPLETED');
      case 'branch-failed':
        return report(event.node as JoinBranchDescription, envelope, 'FAILED');
      case 'timeout':
        return envelope;
      case 'fail':
        return { ignored: true };
      default:
        throw new Error(`unknown action ${event.action}`);
    }
  };

  const handlers = Object.fromEntries(
    taskStateIndex(definition).map((entry) => [entry.stateName, (raw: unknown) => handle(entry, raw)]),
  );
  return { handlers, calls, seen };
}

async function run(
  workflow: Workflow,
  script: Script = {},
  overrides: { waits?: Record<string, number> } = {},
) {
  const compiled = compileWorkflow(workflow);
  const { definition } = compiled;
  const runtime = fakeRuntime(compiled, script);
  // Validated separately by asl-validator; placeholders need the ARN check on to pass the library's schema.
  const machine = new StateMachine(definition as never, { validationOptions: { noValidate: true } });
  const execution = machine.run({ input: { topic: 't' } } as never, {
    overrides: {
      taskResourceLocalHandlers: runtime.handlers as never,
      retryIntervalOverrides: Object.fromEntries(Object.keys(runtime.handlers).map((name) => [name, 0])),
      ...(overrides.waits ? { waitTimeOverrides: overrides.waits } : {}),
    },
    context: { Execution: { Id: 'exec-1' }, Task: { Token: 'local-token' } } as never,
  });
  let output: unknown;
  let error: { name: string; message: string } | undefined;
  try {
    output = await execution.result;
  } catch (caught) {
    const cause =
      (caught as Error).cause instanceof Error ? ((caught as Error).cause as Error) : (caught as Error);
    error = { name: cause.name, message: cause.message };
  }
  return { ...runtime, output, error };
}

const trace = (calls: Call[]) => calls.map((call) => `${call.state}@${call.thread}#${call.step}`);

describe('compiled definitions run in aws-local-stepfunctions', () => {
  it('runs a parallel fork on child threads and gives the JOIN back the parent envelope', async () => {
    const result = await run(
      loadWorkflow(`${import.meta.dirname}/../../../examples/fork-join-research.json`),
    );
    expect(result.error).toBeUndefined();
    const calls = trace(result.calls);
    expect(calls.slice(0, 3)).toEqual(['start@root#0', 'plan@root#1', 'split@root#2']);
    for (const path of ['facts', 'risks', 'summary']) {
      // The path's one node reports the path itself: no `branch-done` Task after it.
      expect(calls).toContain(`${path}@root>split@2/${path}#0`);
      expect(calls).not.toContain(`merge:${path}@root>split@2/${path}#1`);
    }
    expect(calls.slice(-3)).toEqual(['merge@root#3', 'report@root#4', 'end@root#5']);
    // An ALL_COMPLETED join: each path ends at its report, and the Parallel ends when the last one
    // has, so the JOIN gets the parent envelope with no catch output beside it.
    expect(result.seen.merge?.[0]).toMatchObject({
      threadId: 'root',
      fork: { children: ['root>split@2/facts', 'root>split@2/risks', 'root>split@2/summary'] },
    });
    expect(result.seen.merge?.[0]).not.toHaveProperty('joinEnd');
    expect(result.output).toMatchObject({
      executionId: 'exec-1',
      threadId: 'root',
      step: 6,
      last: { nodeId: 'end' },
    });
  });

  it('runs a serial fork path by path, stops at the decided join, and loops around it', async () => {
    const result = await run(forkInLoop, { iterations: { rounds: 2 } });
    expect(result.error).toBeUndefined();
    // ANY_COMPLETED: the first path decides, the second never starts.
    expect(trace(result.calls)).toEqual([
      'start@root#0',
      'round@root#1',
      'split@root#2',
      'a1@root>split@2/a#0',
      'merge@root#3',
      'next-round@root#4',
      'round@root#5',
      'split@root#6',
      'a1@root>split@6/a#0',
      'merge@root#7',
      'next-round@root#8',
      'round@root#9',
      'end@root#10',
    ]);
  });

  it('runs every node type, USER_INTERACTION through waitForTaskToken, routes and loops included', async () => {
    const result = await run(everyNodeType, { routes: { pick: ['each'] }, iterations: { l: 2 } });
    expect(result.error).toBeUndefined();
    const states = result.calls.map((call) => call.state);
    expect(states.slice(0, 12)).toEqual([
      'start',
      'count',
      'calc',
      'ask',
      'call',
      'confirm',
      'confirm:answer',
      'tidy',
      'pick',
      'each',
      'body',
      'again',
    ]);
    expect(states.slice(12, 17)).toEqual(['each', 'body', 'again', 'each', 'nested.begin']);
    expect(states.slice(-2)).toEqual(['merge', 'end']);
    expect(states).toEqual(expect.arrayContaining(['l1', 'r1', 'nested.finish']));
  });

  it('ends a fork early without waiting for the timer branch or slower paths', async () => {
    const started = Date.now();
    const result = await run(forkInFork, { hanging: ['y1'] });
    expect(result.error).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(20_000); // the outer join waits up to 30 s
    const states = result.calls.map((call) => call.state);
    expect(states).toContain('x1');
    expect(states).not.toContain('inner-join:y');
    expect(states.filter((state) => state === 'inner-join')).toHaveLength(1);
    expect(states).not.toContain('outer-join:timeout');
    expect(states.slice(-2)).toEqual(['outer-join', 'end']);
  });

  it('goes to the JOIN with JoinTimeout when the timer runs out first', async () => {
    const result = await run(
      forkInFork,
      { hanging: ['q1', 'y1', 'x1'] },
      { waits: { 'outer-join:timer': 0 } },
    );
    expect(result.error).toBeUndefined();
    expect(result.calls.map((call) => call.state)).toEqual(
      expect.arrayContaining(['outer-join:timeout', 'outer-join', 'end']),
    );
    expect(result.seen['outer-join']?.[0]?.joinEnd).toEqual({
      Error: 'stepthread.JoinTimeout',
      Cause: 'JOIN outer-join: not decided within 30 s',
    });
  });

  it('records a failing path as branch-failed and still reaches the JOIN', async () => {
    const result = await run(
      loadWorkflow(`${import.meta.dirname}/../../../examples/fork-join-research.json`),
      {
        failing: ['risks'],
      },
    );
    expect(result.error).toBeUndefined();
    const failed = result.seen['merge:risks:failed']?.[0];
    expect(failed).toMatchObject({
      threadId: 'root>split@2/risks',
      step: 0,
      error: { Error: 'stepthread.NodeFailed' },
    });
    expect(JSON.parse(failed?.error?.Cause ?? '{}')).toMatchObject({ message: 'risks broke' });
    expect(result.calls.map((call) => call.state).slice(-3)).toEqual(['merge', 'report', 'end']);
  });

  it('fails the execution through :fail with the node error when a top-level node fails', async () => {
    const result = await run(forkInLoop, { failing: ['split'] });
    expect(result.seen[':fail']?.[0]).toMatchObject({
      threadId: 'root',
      step: 2,
      error: { Error: 'stepthread.NodeFailed' },
    });
    expect(result.error?.name).toBe('stepthread.NodeFailed');
    expect(result.error?.message).toContain('split broke');
  });

  it('fails the path when a ROUTE chose nothing and has no default; retries a transient error', async () => {
    const result = await run(routesInFork, { routes: { choose: [undefined] }, flaky: ['s1'] });
    expect(result.error).toBeUndefined();
    expect(result.seen['merge:r:failed']?.[0]?.error).toMatchObject({ Error: 'stepthread.NoRoute' });
    expect(result.calls.filter((call) => call.state === 's1')).toHaveLength(2);
    expect(result.calls.map((call) => call.state).slice(-2)).toEqual(['merge', 'end']);
  });
});
