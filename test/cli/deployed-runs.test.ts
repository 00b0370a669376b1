/**
 * How `runs` and `dev --target aws` read a deployed stack, against a Step Functions stub and a table
 * stub: which requests are made (a status filter sent to ListExecutions only where it is exact, pages
 * read only until the limit is reached), how the table's status and Step Functions' combine, the
 * links between the executions of a run that continued, and the per-state timings read from an
 * execution's history. The same code against moto: test/cloud/cloud.suite.ts.
 */
import type { HistoryEvent } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { printRuns, type RunsJsonEntry } from '../../cli/commands/runs.ts';
import { stateRunsOf } from '../../cli/deployed/history.ts';
import { combinedStatus, listDeployedRuns } from '../../cli/deployed/runs.ts';
import { stepFunctionsConsoleUrl, workflowIdOfExecutionArn } from '../../cli/deployed/step-functions.ts';
import { withStateRuns } from '../../cli/dev/deployed-view.ts';
import { parseLimit, parseStatusFilter } from '../../cli/run-filters.ts';
import type { ExecutionRecord } from '../../functions/stores/execution-index.ts';
import { recordingSfn } from '../support/sfn-stub.ts';

const ARN = 'arn:aws:states:eu-west-1:123456789012';
const machineArn = (workflowId: string) => `${ARN}:stateMachine:demo-${workflowId}`;
const executionArn = (workflowId: string, name: string) => `${ARN}:execution:demo-${workflowId}:${name}`;

interface StubExecution {
  workflowId: string;
  name: string;
  status: string;
  /** Seconds after 2026-01-01T00:00:00Z. */
  start: number;
  stop?: number;
  /** The state machine version it runs (started on the `live` alias), as ListExecutions names it. */
  version?: number;
}

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);

/** ListStateMachines in pages of 2, ListExecutions newest first in pages of `maxResults`. */
function stubSfn(executions: StubExecution[], machines: { workflowId: string; type?: string }[]) {
  const sfn = recordingSfn((name, input) => {
    if (name === 'ListStateMachinesCommand') {
      const all = [
        { name: 'other-app-thing', stateMachineArn: `${ARN}:stateMachine:other-app-thing` },
        ...machines.map((m) => ({
          name: `demo-${m.workflowId}`,
          stateMachineArn: machineArn(m.workflowId),
          type: m.type ?? 'STANDARD',
        })),
      ];
      const from = Number(input.nextToken ?? 0);
      return {
        stateMachines: all.slice(from, from + 2),
        ...(from + 2 < all.length ? { nextToken: String(from + 2) } : {}),
      };
    }
    if (name === 'ListExecutionsCommand') {
      const listed = executions
        .filter((e) => machineArn(e.workflowId) === input.stateMachineArn)
        .filter((e) => input.statusFilter === undefined || e.status === input.statusFilter)
        .sort((a, b) => b.start - a.start);
      const from = Number(input.nextToken ?? 0);
      const size = Number(input.maxResults);
      return {
        executions: listed.slice(from, from + size).map((e) => ({
          executionArn: executionArn(e.workflowId, e.name),
          status: e.status,
          startDate: at(e.start),
          ...(e.stop === undefined ? {} : { stopDate: at(e.stop) }),
          ...(e.version === undefined
            ? {}
            : {
                stateMachineVersionArn: `${machineArn(e.workflowId)}:${e.version}`,
                stateMachineAliasArn: `${machineArn(e.workflowId)}:live`,
              }),
        })),
        ...(from + size < listed.length ? { nextToken: String(from + size) } : {}),
      };
    }
    throw new Error(`unexpected ${name}`);
  });
  return { sfn, sent: sfn.sent };
}

function recordOf(workflowId: string, name: string, status: ExecutionRecord['status'], extra = {}) {
  return {
    executionId: executionArn(workflowId, name),
    rootThreadId: `t-${name}`,
    workflowId,
    workflowVersion: 1,
    status,
    startTime: at(0).toISOString(),
    ...extra,
  } satisfies ExecutionRecord;
}

function table(records: ExecutionRecord[]) {
  const asked: string[][] = [];
  return {
    asked,
    executions: {
      async getExecutions(ids: readonly string[]) {
        asked.push([...ids]);
        return new Map(records.filter((r) => ids.includes(r.executionId)).map((r) => [r.executionId, r]));
      },
    },
  };
}

describe('a deployed stack: the executions `runs` lists', () => {
  it('lists the newest first across the stack’s state machines, with the table’s root thread and status where it knows the outcome', async () => {
    const { sfn } = stubSfn(
      [
        { workflowId: 'triage', name: 'a', status: 'SUCCEEDED', start: 10, stop: 12 },
        { workflowId: 'triage', name: 'b', status: 'FAILED', start: 30, stop: 31 },
        { workflowId: 'report', name: 'c', status: 'RUNNING', start: 20 },
        { workflowId: 'report', name: 'd', status: 'ABORTED', start: 40, stop: 45 },
        { workflowId: 'report', name: 'e', status: 'SUCCEEDED', start: 50, stop: 55 },
        { workflowId: 'fast', name: 'x', status: 'SUCCEEDED', start: 60, stop: 61 },
      ],
      [{ workflowId: 'triage' }, { workflowId: 'report' }, { workflowId: 'fast', type: 'EXPRESS' }],
    );
    const { executions } = table([
      recordOf('triage', 'a', 'COMPLETED', { endTime: at(11).toISOString() }),
      // A thread that failed in an execution Step Functions saw fail.
      recordOf('triage', 'b', 'FAILED'),
      recordOf('report', 'c', 'RUNNING'),
      // Stopped: END never ran, the table still says RUNNING.
      recordOf('report', 'd', 'RUNNING'),
      // e: START never ran (no record).
    ]);
    const result = await listDeployedRuns({ sfn, executions, prefix: 'demo', limit: 100 });
    expect(
      result.runs.map((run) => [run.executionId.split(':').at(-1), run.status, run.stepFunctionsStatus]),
    ).toEqual([
      ['e', 'COMPLETED', 'SUCCEEDED'],
      ['d', 'ABORTED', 'ABORTED'],
      ['b', 'FAILED', 'FAILED'],
      ['c', 'RUNNING', 'RUNNING'],
      ['a', 'COMPLETED', 'SUCCEEDED'],
    ]);
    expect(result.runs[0]).not.toHaveProperty('rootThreadId');
    expect(result.runs[1]).toMatchObject({
      workflowId: 'report',
      rootThreadId: 't-d',
      startTime: at(40).toISOString(),
      endTime: at(45).toISOString(),
      consoleUrl: stepFunctionsConsoleUrl(executionArn('report', 'd')),
    });
    expect(result.runs[3]).not.toHaveProperty('endTime');
    // EXPRESS executions cannot be listed: the machine is reported, not read.
    expect(result.skipped.map((m) => m.workflowId)).toEqual(['fast']);
    expect(result.stateMachines.map((m) => m.workflowId)).toEqual(['fast', 'report', 'triage']);
  });

  it('shows the state machine version each execution runs (pinned), a VERSION column in the table', async () => {
    const { sfn } = stubSfn(
      [
        { workflowId: 'triage', name: 'old', status: 'RUNNING', start: 10, version: 3 },
        { workflowId: 'triage', name: 'new', status: 'SUCCEEDED', start: 20, stop: 21, version: 4 },
        // Started on the state machine itself (before pinning): no version.
        { workflowId: 'triage', name: 'unpinned', status: 'SUCCEEDED', start: 5, stop: 6 },
      ],
      [{ workflowId: 'triage' }],
    );
    const result = await listDeployedRuns({
      sfn,
      executions: table([]).executions,
      prefix: 'demo',
      limit: 10,
    });
    expect(result.runs.map((run) => [run.executionId.split(':').at(-1), run.stateMachineVersion])).toEqual([
      ['new', 4],
      ['old', 3],
      ['unpinned', undefined],
    ]);
    let out = '';
    printRuns(
      result.runs.map((run) => ({ ...run, durationMs: 1000 })),
      false,
      { stdout: (text) => (out += text), stderr: () => {}, readFile: async () => '' },
    );
    const [header, ...rows] = out.trimEnd().split('\n');
    expect(header!.split(/\s{2,}/)).toEqual([
      'EXECUTION',
      'WORKFLOW',
      'VERSION',
      'STATUS',
      'STARTED',
      'DURATION',
      'ROOT THREAD',
    ]);
    expect(rows.map((row) => row.split(/\s{2,}/)[2])).toEqual(['4', '3', '-']);
  });

  it('sends a status filter to ListExecutions only where it selects exactly, and reads pages only until the limit', async () => {
    const many: StubExecution[] = Array.from({ length: 250 }, (_, i) => ({
      workflowId: 'triage',
      name: `n${i}`,
      status: i % 50 === 0 ? 'RUNNING' : 'SUCCEEDED',
      start: i,
      ...(i % 50 === 0 ? {} : { stop: i + 1 }),
    }));
    const { sfn, sent } = stubSfn(many, [{ workflowId: 'triage' }]);
    const { executions, asked } = table([]);
    const running = await listDeployedRuns({ sfn, executions, prefix: 'demo', status: 'RUNNING', limit: 2 });
    expect(running.runs.map((run) => run.executionId.split(':').at(-1))).toEqual(['n200', 'n150']);
    const filters = sent.filter((c) => c.name === 'ListExecutionsCommand').map((c) => c.input.statusFilter);
    expect(filters.sort()).toEqual(['PENDING_REDRIVE', 'RUNNING']);

    sent.length = 0;
    asked.length = 0;
    // COMPLETED depends on the table: no filter is sent, one page of 100 suffices for 3.
    const completed = await listDeployedRuns({
      sfn,
      executions,
      prefix: 'demo',
      status: 'COMPLETED',
      limit: 3,
    });
    expect(completed.runs.map((run) => run.executionId.split(':').at(-1))).toEqual(['n249', 'n248', 'n247']);
    const lists = sent.filter((c) => c.name === 'ListExecutionsCommand');
    expect(lists).toHaveLength(1);
    expect(lists[0]!.input).not.toHaveProperty('statusFilter');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toHaveLength(100);

    // Few matches: every page is read.
    sent.length = 0;
    const aborted = await listDeployedRuns({ sfn, executions, prefix: 'demo', status: 'FAILED', limit: 5 });
    expect(aborted.runs).toEqual([]);
    expect(sent.filter((c) => c.name === 'ListExecutionsCommand')).toHaveLength(3);
  });

  it('reads only the state machines of --workflow', async () => {
    const { sfn, sent } = stubSfn(
      [
        { workflowId: 'triage', name: 'a', status: 'SUCCEEDED', start: 1, stop: 2 },
        { workflowId: 'report', name: 'b', status: 'SUCCEEDED', start: 3, stop: 4 },
      ],
      [{ workflowId: 'triage' }, { workflowId: 'report' }],
    );
    const { executions } = table([]);
    const result = await listDeployedRuns({
      sfn,
      executions,
      prefix: 'demo',
      workflowIds: ['triage'],
      limit: 10,
    });
    expect(result.runs.map((run) => run.workflowId)).toEqual(['triage']);
    expect(
      sent.filter((c) => c.name === 'ListExecutionsCommand').map((c) => c.input.stateMachineArn),
    ).toEqual([machineArn('triage')]);
  });

  it('links the executions of a run that continued (continue-as-new): each is a row, naming the one before and after', async () => {
    const { sfn } = stubSfn(
      [
        { workflowId: 'chat', name: 'first', status: 'SUCCEEDED', start: 1, stop: 5 },
        { workflowId: 'chat', name: 't-1-40', status: 'SUCCEEDED', start: 5, stop: 9 },
      ],
      [{ workflowId: 'chat' }],
    );
    const first = executionArn('chat', 'first');
    const second = executionArn('chat', 't-1-40');
    const { executions } = table([
      recordOf('chat', 'first', 'CONTINUED', { continuedAs: second }),
      recordOf('chat', 't-1-40', 'COMPLETED', { continuedFrom: first }),
    ]);
    const { runs } = await listDeployedRuns({ sfn, executions, prefix: 'demo', limit: 10 });
    expect(runs).toEqual([
      expect.objectContaining({ executionId: second, status: 'COMPLETED', continuedFrom: first }),
      expect.objectContaining({ executionId: first, status: 'CONTINUED', continuedAs: second }),
    ]);
    let out = '';
    printRuns(
      runs.map((run) => ({ ...run, durationMs: 4000 }) satisfies RunsJsonEntry),
      false,
      { stdout: (text) => (out += text), stderr: () => {}, readFile: async () => '' },
    );
    expect(out).toContain(`  ↳ continues ${first}\n`);
    expect(out).toContain(`  ↳ continued in ${second}\n`);
  });

  it('takes the table’s outcome over Step Functions’, and Step Functions’ where the table has none', () => {
    expect(combinedStatus('COMPLETED', 'RUNNING')).toBe('COMPLETED');
    expect(combinedStatus('FAILED', 'SUCCEEDED')).toBe('FAILED');
    expect(combinedStatus('CONTINUED', 'SUCCEEDED')).toBe('CONTINUED');
    expect(combinedStatus('RUNNING', 'TIMED_OUT')).toBe('TIMED_OUT');
    expect(combinedStatus('RUNNING', 'FAILED')).toBe('FAILED');
    expect(combinedStatus(undefined, 'SUCCEEDED')).toBe('COMPLETED');
    expect(combinedStatus(undefined, 'PENDING_REDRIVE')).toBe('RUNNING');
  });

  it('refuses a status or limit it does not know with INVALID_RUNS_FILTER', () => {
    expect(parseStatusFilter('aborted', 'deployed')).toBe('ABORTED');
    expect(parseStatusFilter('succeeded', 'deployed')).toBe('SUCCEEDED');
    expect(parseStatusFilter('interrupted', 'local')).toBe('INTERRUPTED');
    for (const [status, where] of [
      ['DONE', 'deployed'],
      ['INTERRUPTED', 'deployed'],
      ['SUCCEEDED', 'local'],
      ['ABORTED', 'local'],
    ] as const) {
      expect(() => parseStatusFilter(status, where), status).toThrow(
        expect.objectContaining({ code: 'INVALID_RUNS_FILTER' }),
      );
    }
    expect(parseLimit('20')).toBe(20);
    for (const bad of ['0', '-1', '1.5', 'ten', '']) {
      expect(() => parseLimit(bad), bad).toThrow(expect.objectContaining({ code: 'INVALID_RUNS_FILTER' }));
    }
  });

  it('names the workflow of an execution ARN from its state machine', () => {
    expect(workflowIdOfExecutionArn(executionArn('support-triage', 'x'), 'demo')).toBe('support-triage');
    expect(workflowIdOfExecutionArn(`${ARN}:execution:other-app-thing:x`, 'demo')).toBeUndefined();
    expect(workflowIdOfExecutionArn('3c75d5cf-599a-403b-9f78-ca14c9c493ed', 'demo')).toBeUndefined();
  });
});

describe('a deployed execution: per-state timings from its history', () => {
  const t = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);
  let id = 0;
  const event = (type: string, previousEventId: number, ms: number, extra: Partial<HistoryEvent> = {}) =>
    ({ id: ++id, previousEventId, type, timestamp: t(ms), ...extra }) as HistoryEvent;
  const entered = (type: string, name: string, previous: number, ms: number, threadId?: string) =>
    event(`${type}StateEntered`, previous, ms, {
      stateEnteredEventDetails: { name, ...(threadId ? { input: JSON.stringify({ threadId }) } : {}) },
    });
  const exited = (type: string, name: string, previous: number, ms: number) =>
    event(`${type}StateExited`, previous, ms, { stateExitedEventDetails: { name } });
  const failed = (previous: number, ms: number, error: string) =>
    event('LambdaFunctionFailed', previous, ms, { lambdaFunctionFailedEventDetails: { error } });

  /** A retried Task, a fork whose branches interleave, a caught failure, a join decision, and a Task in flight. */
  function history(): HistoryEvent[] {
    id = 0;
    const events: HistoryEvent[] = [];
    const push = (e: HistoryEvent) => {
      events.push(e);
      return e.id!;
    };
    push(event('ExecutionStarted', 0, 0));
    // plan: one retry after a service error, then success.
    let last = push(entered('Task', 'plan', 1, 10, 't-root'));
    last = push(event('LambdaFunctionScheduled', last, 11));
    last = push(event('LambdaFunctionStarted', last, 12));
    last = push(failed(last, 20, 'Lambda.ServiceException'));
    last = push(event('LambdaFunctionScheduled', last, 30));
    last = push(event('LambdaFunctionStarted', last, 31));
    last = push(event('LambdaFunctionSucceeded', last, 40));
    last = push(exited('Task', 'plan', last, 42));
    const parallel = push(entered('Parallel', 'split:paths', last, 43));
    // Two branches interleaved: facts (fails, caught) and risks (decides the join).
    const facts = push(entered('Task', 'facts', parallel, 44, 't-facts'));
    const risks = push(entered('Task', 'risks', parallel, 45, 't-risks'));
    const factsScheduled = push(event('LambdaFunctionScheduled', facts, 46));
    const risksScheduled = push(event('LambdaFunctionScheduled', risks, 47));
    const factsFailed = push(failed(factsScheduled, 60, 'TOOL_FAILED'));
    push(exited('Task', 'facts', factsFailed, 61));
    const decided = push(failed(risksScheduled, 70, 'stepthread.JoinDecided'));
    last = push(event('ParallelStateFailed', decided, 71));
    last = push(exited('Parallel', 'split:paths', last, 72));
    // approve: waiting for its task token.
    last = push(entered('Task', 'approve', last, 80, 't-root'));
    last = push(event('TaskScheduled', last, 81));
    last = push(event('TaskStarted', last, 82));
    push(event('TaskSubmitted', last, 83));
    return events;
  }
  const nodes = new Map([
    ['plan', 'plan'],
    ['facts', 'facts'],
    ['risks', 'risks'],
    ['approve', 'approve'],
  ]);

  it('pairs each entry with its exit, counts attempts and tells a caught failure, a join decision and a Task in flight apart', () => {
    const runs = stateRunsOf(history(), nodes, 'RUNNING');
    expect(runs.map((run) => [run.stateName, run.status])).toEqual([
      ['plan', 'SUCCEEDED'],
      ['split:paths', 'SUCCEEDED'],
      ['facts', 'FAILED'],
      ['risks', 'SUCCEEDED'],
      ['approve', 'RUNNING'],
    ]);
    expect(runs[0]).toEqual({
      stateName: 'plan',
      nodeId: 'plan',
      stateType: 'Task',
      enteredAt: t(10).toISOString(),
      exitedAt: t(42).toISOString(),
      durationMs: 32,
      status: 'SUCCEEDED',
      attempts: 2,
      error: 'Lambda.ServiceException',
      threadId: 't-root',
    });
    expect(runs[1]).toMatchObject({ stateType: 'Parallel', durationMs: 29 });
    expect(runs[1]).not.toHaveProperty('nodeId');
    expect(runs[2]).toMatchObject({
      nodeId: 'facts',
      error: 'TOOL_FAILED',
      durationMs: 17,
      threadId: 't-facts',
    });
    expect(runs[3]).not.toHaveProperty('error');
    expect(runs[4]).toMatchObject({ nodeId: 'approve', attempts: 1 });
    expect(runs[4]).not.toHaveProperty('exitedAt');
  });

  it('shows a Task in flight when its execution was stopped as STOPPED', () => {
    const runs = stateRunsOf(history(), nodes, 'ABORTED');
    expect(runs.at(-1)).toMatchObject({ stateName: 'approve', status: 'STOPPED' });
  });

  it('adds to the node statuses the Task running now and the node the table never recorded', () => {
    const runs = stateRunsOf(history(), nodes, 'RUNNING');
    const recorded = {
      plan: { status: 'COMPLETED', durationMs: 30, attempt: 2, runs: 1, threadId: 't-root' },
    };
    expect(withStateRuns(recorded, runs)).toEqual({
      plan: recorded.plan,
      facts: { status: 'FAILED', durationMs: 17, attempt: 1, runs: 1, threadId: 't-facts' },
      approve: { status: 'RUNNING', runs: 0, threadId: 't-root' },
    });
  });
});
