/**
 * `run`'s progress lines, from the local runtime's state events as aws-local-stepfunctions sends them,
 * and as runs of the examples print them.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { progressPrinter } from '../../cli/commands/run.ts';
import { stateRolesOf } from '../../cli/state-roles.ts';
import { compileWorkflow } from '../../engine/asl/compile.ts';
import { ASL_ERRORS } from '../../engine/asl/task-input.ts';
import type { LocalEvent, LocalEventType } from '../../functions/local/state-machine.ts';
import { runCli } from '../support/cli.ts';

/** A whole progress line. */
const PROGRESS_LINE_TEXT = /^ {2}[→✓⚠✗↻⇥].*$/gmu;

function printed(events: readonly [LocalEventType, string, string, Partial<LocalEvent>?][]): string[] {
  let out = '';
  const print = progressPrinter({
    stdout: () => {},
    stderr: (text) => {
      out += text;
    },
    readFile: async () => '',
  });
  events.forEach(([type, stateName, stateType, rest], i) => {
    print({
      type,
      stateName,
      stateType,
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
      ...rest,
    });
  });
  return out.split('\n').filter(Boolean);
}

describe('run progress', () => {
  it('a failure a Catch takes shows once, as ✗, not also as ✓ when the state exits to its Catch', () => {
    expect(
      printed([
        ['StateEntered', 'ask', 'Task'],
        [
          'StateFailed',
          'ask',
          'Task',
          {
            error: 'stepthread.NodeFailed',
            cause: JSON.stringify({
              code: 'LLM_PROVIDER_ERROR',
              message: 'node ask: 503\nretry later',
              nodeId: 'ask',
            }),
          },
        ],
        ['StateCaught', 'ask', 'Task'],
        ['StateExited', 'ask', 'Task'],
        ['StateEntered', ':fail', 'Task'],
        ['StateExited', ':fail', 'Task'],
      ]),
    ).toEqual([
      '  → ask',
      // The node's coded error, on one line (the code was only in the run's last line).
      '  ✗ ask (1 ms): LLM_PROVIDER_ERROR: node ask: 503',
      // The task that records the failure is not shown: its ✓ read as if something succeeded.
    ]);
  });

  it('a failure retried, then a success: ✗, ↻ and ✓', () => {
    expect(
      printed([
        ['StateEntered', 'llm', 'Task'],
        ['StateFailed', 'llm', 'Task', { error: 'Lambda.ServiceException' }],
        ['StateRetried', 'llm', 'Task', { retryAttempt: 1 }],
        ['StateExited', 'llm', 'Task'],
      ]),
    ).toEqual(['  → llm', '  ✗ llm (1 ms): Lambda.ServiceException', '  ↻ llm: retry 1', '  ✓ llm (3 ms)']);
  });

  it('a join decided ends the branch (⇥) and the Parallel (✓) by design, not as failures', () => {
    expect(
      printed([
        ['StateEntered', 'split:paths', 'Parallel'],
        ['StateEntered', 'merge:b', 'Task'],
        // The report decided: its result says so, and the path's Fail state raises JoinDecided.
        ['StateExited', 'merge:b', 'Task', { output: { joinDecided: 'ALL_COMPLETED' } }],
        ['StateEntered', 'merge:b:reported', 'Choice'],
        ['StateExited', 'merge:b:reported', 'Choice'],
        ['StateFailed', 'merge:b:decides', 'Fail', { error: ASL_ERRORS.joinDecided }],
        ['StateFailed', 'split:paths', 'Parallel', { error: ASL_ERRORS.joinDecided }],
        ['StateCaught', 'split:paths', 'Parallel'],
        ['StateExited', 'split:paths', 'Parallel'],
      ]),
    ).toEqual([
      '  → split:paths',
      '  → merge:b',
      '  ⇥ merge:b (1 ms): join decided',
      '  ✓ split:paths (8 ms)',
    ]);
  });
});

describe('run progress names nodes, and where in a fork or loop they run', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'stepthread-progress-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');
  /** The progress lines of a run of an example (its order among parallel paths varies). */
  async function progressOf(example: string, ...args: string[]): Promise<string[]> {
    const run = await runCli(['run', join(EXAMPLES, example), ...args, '--data-dir', join(dir, 'data')], {
      cwd: dir,
    });
    expect(run.code, run.stderr).toBe(0);
    return (run.stderr.match(PROGRESS_LINE_TEXT) ?? []).map((line) => line.replace(/\d+ ms/, 'N ms'));
  }
  /** A compiler state (`split:paths`, `merge:facts`, `approve:answer`, …): never a line of its own. */
  const INTERNAL = /^ {2}\S+ [\w-]+:[\w-]+/;

  it('a list FORK: its Map is the FORK node, each item’s lines say which item', async () => {
    const input = JSON.stringify({
      documents: [
        { id: 'q1', text: 'Revenue up.' },
        { id: 'q2', text: 'Costs flat.' },
        { id: 'q3', text: 'Churn down.' },
      ],
    });
    const lines = await progressOf('map-reduce.json', '--input', input);
    expect(lines.filter((line) => INTERNAL.test(line))).toEqual([]);
    expect(lines.filter((line) => line.includes('summarise')).sort()).toEqual([
      '  → summarise [item 0]',
      '  → summarise [item 1]',
      '  → summarise [item 2]',
      '  ✓ summarise [item 0] (N ms)',
      '  ✓ summarise [item 1] (N ms)',
      '  ✓ summarise [item 2] (N ms)',
    ]);
    expect(lines.filter((line) => !line.includes('[item'))).toEqual([
      '  → start',
      '  ✓ start (N ms)',
      '  → each-doc',
      '  ✓ each-doc (N ms)',
      '  → merge',
      '  ✓ merge (N ms)',
      '  → reduce',
      '  ✓ reduce (N ms)',
      '  → end',
      '  ✓ end (N ms)',
    ]);
  });

  it('a FORK’s paths: each line names its path; the path that decides the join says so once', async () => {
    const lines = await progressOf('fork-join-research.json', '--input', '{"topic": "our payments API"}');
    expect(lines.filter((line) => INTERNAL.test(line))).toEqual([]);
    expect(lines.filter((line) => line.includes('[path')).sort()).toEqual([
      '  → facts [path facts]',
      '  → risks [path risks]',
      '  → summary [path summary]',
      expect.stringMatching(/^ {2}⇥ merge \[path (facts|risks|summary)\]: join decided$/),
      '  ✓ facts [path facts] (N ms)',
      '  ✓ risks [path risks] (N ms)',
      '  ✓ summary [path summary] (N ms)',
    ]);
  });

  it('a loop: each line of an iteration says which', async () => {
    const lines = await progressOf(
      'route-loop.json',
      '--input',
      '{"tickets": ["Printer jams", "Site down"]}',
    );
    expect(lines.filter((line) => INTERNAL.test(line))).toEqual([]);
    expect(lines.filter((line) => line.includes('classify') || line.includes('each-ticket'))).toEqual([
      '  → each-ticket',
      '  ✓ each-ticket (iteration 1, N ms)',
      '  → classify (iteration 1)',
      '  ✓ classify (iteration 1, N ms)',
      '  → each-ticket',
      '  ✓ each-ticket (iteration 2, N ms)',
      '  → classify (iteration 2)',
      '  ✓ classify (iteration 2, N ms)',
      // The loop is done: no iteration.
      '  → each-ticket',
      '  ✓ each-ticket (N ms)',
    ]);
    expect(lines.at(-1)).toBe('  ✓ end (N ms)');
  });

  it('a USER_INTERACTION is one node: no line for the Task that commits its answer', async () => {
    const ticket = { ticket: { subject: 'Charged twice this month', customer: 'Ada', monthlyFee: 30 } };
    const lines = await progressOf(
      'support-triage.json',
      '--input',
      JSON.stringify(ticket),
      '--answers',
      '{"approve-credit": true}',
    );
    expect(lines.filter((line) => INTERNAL.test(line))).toEqual([]);
    expect(lines.filter((line) => line.includes('approve-credit'))).toEqual([
      '  → approve-credit',
      '  ✓ approve-credit (N ms)',
    ]);
  });
});

describe('stateRolesOf', () => {
  it("reads a FORK's, JOIN's and failure's states from the compiled definition", async () => {
    const workflow = JSON.parse(
      await readFile(join(import.meta.dirname, '..', '..', 'examples', 'fork-join-research.json'), 'utf8'),
    );
    const { definition, nodeTable } = compileWorkflow(workflow);
    const roles = stateRolesOf(definition, JSON.parse(nodeTable.json));
    expect(Object.fromEntries(roles)).toMatchObject({
      split: { kind: 'node', nodeId: 'split', nodeType: 'FORK' },
      'split:paths': { kind: 'fork', forkId: 'split', joinId: 'merge' },
      'split:facts': { kind: 'path', pathId: 'facts', item: false },
      // The path's last node reports the path to its JOIN: no `branch-done` Task.
      facts: { kind: 'node', nodeId: 'facts', reportsTo: 'merge' },
      'merge:facts:failed': { kind: 'hidden' },
      merge: { kind: 'node', nodeId: 'merge' },
      ':fail': { kind: 'hidden' },
    });
    expect(roles.has('merge:facts')).toBe(false);
  });

  it("reads a node's type and loop from the node table its Tasks name", async () => {
    const workflow = JSON.parse(
      await readFile(join(import.meta.dirname, '..', '..', 'examples', 'route-loop.json'), 'utf8'),
    );
    const { definition, nodeTable } = compileWorkflow(workflow);
    const roles = stateRolesOf(definition, JSON.parse(nodeTable.json));
    expect(roles.get('each-ticket')).toEqual({
      kind: 'node',
      nodeId: 'each-ticket',
      nodeType: 'LOOP_START',
      loopId: 'tickets',
      enters: true,
      exits: true,
    });
  });
});
