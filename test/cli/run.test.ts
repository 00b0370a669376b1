/**
 * The compile / run / inspect / copy commands in-process (real embedded services in a temp data
 * dir), plus one real spawn of bin/stepthread.js in a temp working directory.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import { forkWorkflow } from '../e2e/workflows.ts';
import { runCli } from '../support/cli.ts';
import { cliProcessSync, envWithoutTarget } from '../support/cli-process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'examples', 'fork-join-research.json');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-cli-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli(args, { cwd: dir });

const dataDir = () => ['--data-dir', join(dir, 'data')];

describe('stepthread compile', () => {
  it('prints the ASL of a valid workflow', async () => {
    const { code, stdout } = await cli('compile', EXAMPLE);
    expect(code).toBe(0);
    const definition = JSON.parse(stdout);
    // The entry: START for a new run, a copied thread's node or a continuing run's Choice otherwise.
    expect(definition.StartAt).toBe('stepthread:dispatch');
    expect(definition.States['stepthread:dispatch'].Default).toBe('start');
    expect(definition.States.split.Type).toBe('Task');
    expect(definition.States['split:paths'].Type).toBe('Parallel');
  });

  it('reports the definition size on stderr and, with --node-table, writes the table its Tasks name', async () => {
    const { code, stdout, stderr } = await cli('compile', EXAMPLE, '--node-table', 'table.json');
    expect(code).toBe(0);
    const match =
      /^stepthread: definition ([\d,]+) bytes of Step Functions' 1,048,576 \(function ARNs at their longest\); node table ([0-9a-f]{12}): ([\d,]+) bytes$/m.exec(
        stderr,
      );
    expect(match).not.toBeNull();
    const definition = JSON.parse(stdout);
    expect(definition.States.split.Parameters.node).toEqual({ id: 'split', ref: match![2] });
    const table = JSON.parse(await readFile(join(dir, 'table.json'), 'utf8'));
    expect(table.nodes.split).toMatchObject({ id: 'split', type: 'FORK' });
    expect(Number(match![3]!.replaceAll(',', ''))).toBe(Buffer.byteLength(JSON.stringify(table)));
  });

  it('exits 1 with coded errors for an invalid workflow, 2 for a missing file', async () => {
    const invalid = await cli('compile', join(ROOT, 'test/fixtures/invalid/dead-end.json'));
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toMatch(/NO_PATH_TO_END/);
    expect((await cli('compile', join(dir, 'missing.json'))).code).toBe(2);
  });
});

describe('continue-as-new from the CLI', () => {
  const LOOP = join(ROOT, 'examples', 'route-loop.json');
  const input = ['--input', '{"tickets": ["a", "b", "c", "d", "e"]}'];

  it('compile puts the continuation in (with its threshold) or leaves it out (off)', async () => {
    const on = JSON.parse((await cli('compile', LOOP, '--continue-after-events', '500')).stdout);
    expect(on.StartAt).toBe('stepthread:dispatch');
    expect(JSON.stringify(on.States['next-ticket:choice'])).toContain('"NumericGreaterThanEquals":500');
    const off = JSON.parse((await cli('compile', LOOP, '--continue-after-events', 'off')).stdout);
    expect(JSON.stringify(off)).not.toMatch(/NumericGreaterThanEquals|startExecution|historyEvents/);
    const bad = await cli('compile', LOOP, '--continue-after-events', '10');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--continue-after-events: .*from 100 to 24000/);
  });

  it('run follows the chain to the end and inspect of its first execution shows all of it', async () => {
    const run = await cli('run', LOOP, ...input, '--continue-after-events', '100', ...dataDir());
    expect(run.code).toBe(0);
    const continued = [
      ...run.stderr.matchAll(/⤷ execution (\S+) continues as (\S+) \((\d+) history events\)/g),
    ];
    expect(continued.length).toBeGreaterThanOrEqual(1);
    const first = continued[0]![1]!;
    const last = continued.at(-1)![2]!;
    expect(run.stdout).toContain(`execution ${last}\n`);
    expect(run.stdout).toContain(`run       ${continued.length + 1} executions, continued from ${first}\n`);
    const { stdout } = await cli('inspect', first, '--json', ...dataDir());
    const report = JSON.parse(stdout);
    expect(report.executionStatus).toBe('CONTINUED');
    expect(report.executions.map((e: { executionId: string }) => e.executionId)).toEqual([
      first,
      ...continued.map((match) => match[2]),
    ]);
    expect(report.executions.at(-1).status).toBe('COMPLETED');
    const root = report.threads[0];
    expect(root.status).toBe('COMPLETED');
    expect(root.nodes.at(0).nodeId).toBe('start');
    expect(root.nodes.at(-1).nodeId).toBe('end');
    const text = await cli('inspect', first, ...dataDir());
    expect(text.stdout).toContain(`run in ${continued.length + 1} executions: ${first} (CONTINUED) → `);
  });
});

describe('stepthread run', () => {
  let result: RunJsonResult;

  it('--json prints exactly executionId, threadId, status, output and conversation', async () => {
    const { code, stdout, stderr } = await cli(
      'run',
      EXAMPLE,
      '--input',
      '{"topic":"queues"}',
      '--json',
      ...dataDir(),
    );
    expect(code).toBe(0);
    // Only the ids, printed as the run starts so a killed run can still be found.
    expect(stderr).toMatch(/^started execution \S+ \(thread \S+\)\n$/);
    result = JSON.parse(stdout);
    expect(Object.keys(result)).toEqual([
      'executionId',
      'threadId',
      'status',
      'output',
      'conversation',
      'error',
      'resume',
    ]);
    expect(result).toMatchObject({ status: 'COMPLETED', error: null, resume: null });
    expect(result.output).toMatchObject({ report: 'Report: ship it after adding a second region.' });
    expect(result.conversation.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Make a research plan for: queues'],
      ['assistant', 'Plan: look at facts, risks, and a one-line summary.'],
      ['user', 'Summarise queues in one line.'],
      ['assistant', 'Summary: fast today, fragile under a regional outage.'],
      [
        'user',
        'Write the report. Facts: Facts: the service handles 1,200 requests per second at peak. Risks: Risks: a single region; no load shedding.',
      ],
      ['assistant', 'Report: ship it after adding a second region.'],
    ]);
  });

  it('shows per-state progress on stderr without --json, reading --input from @file', async () => {
    const input = join(dir, 'input.json');
    await writeFile(input, '{"topic":"logs"}');
    const { code, stdout, stderr } = await cli('run', EXAMPLE, '--input', `@${input}`, ...dataDir());
    expect(code).toBe(0);
    expect(stderr).toMatch(/→ plan\n/);
    expect(stderr).toMatch(/✓ plan \(\d+ ms\)/);
    expect(stderr).toMatch(/✓ merge \(\d+ ms\)/);
    expect(stdout).toMatch(/status {4}COMPLETED/);
  });

  it('inspect after run in the same data dir shows node runs, child threads and the conversation', async () => {
    const { code, stdout } = await cli('inspect', result.executionId, '--json', ...dataDir());
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report.executionId).toBe(result.executionId);
    expect(report.executionStatus).toBe('COMPLETED');
    const root = report.threads[0];
    expect(root.threadId).toBe(result.threadId);
    // Each run with the step that recorded it, the number `copy --from` takes.
    expect(root.nodes.map((run: { nodeId: string; step: number }) => [run.step, run.nodeId])).toEqual([
      [1, 'start'],
      [2, 'plan'],
      [3, 'split'],
      [4, 'merge'],
      [5, 'report'],
      [6, 'end'],
    ]);
    expect(
      root.nodes.every(
        (run: { status: string; attempt: number }) => run.status === 'COMPLETED' && run.attempt === 1,
      ),
    ).toBe(true);
    expect(root.children).toHaveLength(3);
    expect(report.threads).toHaveLength(4);
    expect(report.conversation.messages).toEqual(result.conversation);
    // END's output is over 256 bytes, so stored by reference: inspect reads it back.
    expect(JSON.stringify(result.output).length).toBeGreaterThan(256);
    expect(root.output).toEqual(result.output);
    // A node's result is a JSON value, as input and output are (not a JSON string).
    expect(root.results.end).toEqual(result.output);
    const text = await cli('inspect', result.executionId, ...dataDir());
    expect(text.stdout).toContain(`  output: ${JSON.stringify(result.output)}\n`);
    expect(text.stdout).not.toContain('stored by reference');
    expect(text.stdout).toContain('  step 2   COMPLETED plan (LLM)');

    const child = report.threads.find((thread: { forkPathId?: string }) =>
      thread.forkPathId?.endsWith('facts'),
    );
    const byThread = await cli('inspect', child.threadId, ...dataDir());
    expect(byThread.code).toBe(0);
    expect(byThread.stdout).toMatch(/\[assistant\] Facts: the service handles/);
    expect((await cli('inspect', 'no-such-id', ...dataDir())).code).toBe(1);
  });

  it('copy prints a new thread id; run --thread runs the copy and leaves the source alone', async () => {
    const copied = await cli('copy', result.threadId, '--from', 'end', ...dataDir());
    expect(copied.code).toBe(0);
    const copyId = copied.stdout.trim();
    expect(copyId).toMatch(/^t-[0-9a-f]{32}$/);
    const rerun = await cli('run', EXAMPLE, '--thread', copyId, '--json', ...dataDir());
    expect(rerun.code).toBe(0);
    const rerunResult: RunJsonResult = JSON.parse(rerun.stdout);
    expect(rerunResult.threadId).toBe(copyId);
    expect(rerunResult.status).toBe('COMPLETED');
    expect(rerunResult.output).toEqual(result.output);
    expect(rerunResult.conversation).toEqual(result.conversation);
    const source = JSON.parse((await cli('inspect', result.threadId, '--json', ...dataDir())).stdout);
    expect(source.threads.find((t: { threadId: string }) => t.threadId === result.threadId).status).toBe(
      'COMPLETED',
    );
    // Running the finished source, or the finished copy, in place is refused: copy it instead.
    expect((await cli('run', EXAMPLE, '--thread', result.threadId, ...dataDir())).code).toBe(1);
    const again = await cli('run', EXAMPLE, '--thread', copyId, ...dataDir());
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`INVALID_STATUS_TRANSITION: thread ${copyId} is COMPLETED; copy it`);
  });

  it("a fork branch's copy is made for inspecting, and run --thread refuses it with a coded error saying why", async () => {
    const report = JSON.parse((await cli('inspect', result.executionId, '--json', ...dataDir())).stdout);
    const branch = report.threads.find((t: { threadId: string }) => t.threadId !== result.threadId);
    const copied = await cli('copy', branch.threadId, ...dataDir());
    expect(copied.code).toBe(0);
    expect(copied.stderr).toMatch(/fork branch's thread; its copy is for inspecting and comparing/);
    const run = await cli('run', EXAMPLE, '--thread', copied.stdout.trim(), ...dataDir());
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /COPY_POINT_IN_FORK_BRANCH: .*cannot run on its own; to run the branch again, copy the run's root thread from the FORK/,
    );
    expect(run.stderr).not.toMatch(/top-level/);
    // inspect calls the copy a copy, not a path of the branch, and does not list it as a fork child.
    const copyId = copied.stdout.trim();
    const ofCopy = await cli('inspect', copyId, ...dataDir());
    expect(ofCopy.stdout).toContain(`thread ${copyId}  CREATED  copy of ${branch.threadId}`);
    expect(ofCopy.stdout).not.toMatch(new RegExp(`thread ${copyId}[^\\n]*path `));
    const ofBranch = JSON.parse((await cli('inspect', branch.threadId, '--json', ...dataDir())).stdout);
    const branchReport = ofBranch.threads.find((t: { threadId: string }) => t.threadId === branch.threadId);
    expect(branchReport.children).not.toContain(copyId);
  });

  it('copy of the thread as it is, and of that copy: inspect shows their output, node results and THREAD_COPIED (seed 002)', async () => {
    const inspect = async (id: string) => {
      const report = JSON.parse((await cli('inspect', id, '--json', ...dataDir())).stdout);
      return report.threads.find((t: { threadId: string }) => t.threadId === id);
    };
    const source = await inspect(result.threadId);
    const first = (await cli('copy', result.threadId, ...dataDir())).stdout.trim();
    const second = (await cli('copy', first, ...dataDir())).stdout.trim();
    for (const [copyId, from] of [
      [first, result.threadId],
      [second, first],
    ] as const) {
      const copy = await inspect(copyId);
      expect(copy).toMatchObject({
        status: 'CREATED',
        copiedFrom: from,
        parentThreadId: from,
        copied: { type: 'THREAD_COPIED', sourceThreadId: from },
        output: source.output,
        results: source.results,
        input: source.input,
        errors: [],
        messageCount: source.messageCount,
      });
      expect(copy.endTime).toBeUndefined();
      expect(copy.startTime > source.startTime).toBe(true);
    }
    const human = await cli('inspect', second, ...dataDir());
    expect(human.stdout).toContain(`copy of ${first} (THREAD_COPIED `);
  });

  it('exits 1 with the coded error when the run fails', async () => {
    const file = join(dir, 'fails.json');
    await writeFile(
      file,
      JSON.stringify({
        id: 'fails',
        version: 1,
        profiles: { default: { provider: 'scripted', byNode: {} } },
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'ask', type: 'LLM', config: { prompt: 'hi' } },
          { id: 'end', type: 'END' },
        ],
        edges: [
          { from: 'start', to: 'ask' },
          { from: 'ask', to: 'end' },
        ],
      }),
    );
    const { code, stdout, stderr } = await cli('run', file, '--json', ...dataDir());
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({ status: 'FAILED', output: null });
    expect(stderr).toMatch(/LLM_PROVIDER_ERROR \(node ask\)/);
  });

  it('exits 1 for an invalid workflow and 2 for usage errors', async () => {
    const invalid = await cli('run', join(ROOT, 'test/fixtures/invalid/dead-end.json'), ...dataDir());
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/NO_PATH_TO_END/);
    // Code that does not compile is refused before the run starts, not when the run reaches it.
    const broken = join(dir, 'broken-code.json');
    await writeFile(
      broken,
      JSON.stringify({
        id: 'broken-code',
        version: 1,
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'calc', type: 'CODE', config: { code: 'return 1 +' } },
          { id: 'end', type: 'END' },
        ],
        edges: [
          { from: 'start', to: 'calc' },
          { from: 'calc', to: 'end' },
        ],
      }),
    );
    const refused = await cli('run', broken, ...dataDir());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /CODE_SYNTAX_ERROR \(nodes\[1\]\.config\.code, node calc\): CODE node "calc"/,
    );
    expect(refused.stderr).not.toMatch(/execution/i);
    const notJson = await cli('run', EXAMPLE, '--input', '{bad', ...dataDir());
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(
      /^stepthread: INPUT_INVALID: --input is not valid JSON \(.+\): give a JSON object, or @file to read one\n$/,
    );
    const array = await cli('run', EXAMPLE, '--input', '[1]', ...dataDir());
    expect(array.code).toBe(2);
    expect(array.stderr).toContain('INPUT_INVALID: --input must be a JSON object');
    const unread = await cli('run', EXAMPLE, '--input', `@${join(dir, 'no-input.json')}`, ...dataDir());
    expect(unread.code).toBe(2);
    expect(unread.stderr).toContain('INPUT_INVALID: cannot read --input file');
    for (const command of [
      ['run', EXAMPLE],
      ['compile', EXAMPLE],
      ['resume', 'some-id'],
    ]) {
      const threshold = await cli(...command, '--continue-after-events', 'abc');
      expect(threshold.code, command[0]).toBe(2);
      expect(threshold.stderr).toBe(
        'stepthread: CONTINUE_AFTER_EVENTS_INVALID: --continue-after-events: "abc" is not a number: give an integer from 100 to 24000, or off\n',
      );
    }
    expect((await cli('compile', EXAMPLE, '--continue-after-events', '1_000')).code).toBe(0);
    expect((await cli('run', join(dir, 'missing.json'), ...dataDir())).code).toBe(2);
    expect((await cli('run', EXAMPLE, '--no-such-flag')).code).toBe(2);
    expect((await cli('run')).code).toBe(2);
  });

  it('runs --status takes exactly the statuses a local listing shows, as --help lists them', async () => {
    const completed = await cli('runs', '--status', 'completed', '--json', ...dataDir());
    expect(JSON.parse(completed.stdout).length).toBeGreaterThan(0);
    // A Step Functions status listed nothing though runs completed: now refused, saying where it applies.
    const sfn = await cli('runs', '--status', 'SUCCEEDED', ...dataDir());
    expect(sfn.code).toBe(2);
    expect(sfn.stdout).toBe('');
    const local = 'RUNNING, COMPLETED, FAILED, CANCELLED, CONTINUED, INTERRUPTED';
    expect(sfn.stderr).toBe(
      `stepthread: INVALID_RUNS_FILTER: --status SUCCEEDED is not a status runs shows locally (SUCCEEDED is shown only for a deployed stack: --stack): use one of ${local}\n`,
    );
    const help = cliProcessSync(['runs', '--help'], { env: envWithoutTarget(), timeout: 30_000 });
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(`only runs with this status (${local};`);
  });
});

describe('data the CLI refuses instead of crashing', () => {
  it('refuses a 1,000-deep --input with VALUE_TOO_DEEP (exit 1, no lock left) and an inexact integer with INPUT_NUMBER_INEXACT', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'stepthread-deep-'));
    try {
      const deep = `${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}`;
      const child = cliProcessSync(['run', EXAMPLE, '--input', deep], {
        cwd,
        env: envWithoutTarget(),
        timeout: 30_000,
      });
      expect(child.status).toBe(1);
      expect(child.stderr).toMatch(/VALUE_TOO_DEEP/);
      expect(child.stderr).not.toMatch(/RangeError/);
      expect(existsSync(join(cwd, '.stepthread', 'stepthread.lock'))).toBe(false);
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
    const inexact = await cli('run', EXAMPLE, ...dataDir(), '--input', '{"id": 12345678901234567891}');
    expect(inexact.code).toBe(1);
    expect(inexact.stderr).toMatch(/INPUT_NUMBER_INEXACT.*12345678901234567891/);
    // 2^54 is a double exactly: accepted.
    const exact = await cli(
      'run',
      EXAMPLE,
      ...dataDir(),
      '--json',
      '--input',
      '{"topic": "x", "n": 18014398509481984}',
    );
    expect(exact.code).toBe(0);
  }, 60_000);
});

describe('bin/stepthread.js', () => {
  it('runs an example in a fresh working directory, storing under ./.stepthread, and exits', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'stepthread-spawn-'));
    try {
      const child = cliProcessSync(['run', join(ROOT, 'examples/route-loop.json'), '--json'], {
        cwd,
        env: envWithoutTarget(),
        timeout: 30_000,
      });
      expect(child.status).toBe(0);
      expect(child.stderr).not.toMatch(/NodeVersionSupportWarning/);
      const output = JSON.parse(child.stdout);
      expect(output).toMatchObject({ status: 'COMPLETED', output: { escalated: 2, routine: [0, 2] } });
      expect(existsSync(join(cwd, '.stepthread', 'dynamodb'))).toBe(true);
      // The directory's store server leaves once idle, and takes its lock and address file along.
      const leftovers = ['stepthread.lock', 'stepthread.server.json'].map((name) =>
        join(cwd, '.stepthread', name),
      );
      for (let i = 0; i < 400 && leftovers.some((path) => existsSync(path)); i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(leftovers.filter((path) => existsSync(path))).toEqual([]);
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });

  it("keeps Node's compile cache under $XDG_CACHE_HOME/stepthread, and runs where it cannot", async () => {
    const cache = await mkdtemp(join(tmpdir(), 'stepthread-cache-'));
    try {
      const env = (base: string) => ({ ...envWithoutTarget(), XDG_CACHE_HOME: base });
      const cached = cliProcessSync(['--help'], { env: env(cache), timeout: 30_000 });
      expect(cached.status).toBe(0);
      expect(readdirSync(join(cache, 'stepthread', 'compile-cache')).length).toBeGreaterThan(0);
      // A file where the cache directory would go: the command runs uncached, and says nothing of it.
      const blocked = join(cache, 'blocked');
      await writeFile(blocked, '');
      const uncached = cliProcessSync(['--help'], { env: env(blocked), timeout: 30_000 });
      expect(uncached.status).toBe(0);
      expect(uncached.stdout).toBe(cached.stdout);
      expect(uncached.stderr).toBe(cached.stderr);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });

  it('exits promptly when an ANY_COMPLETED join leaves a 30 s branch behind', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'stepthread-spawn-'));
    try {
      const file = join(cwd, 'any.json');
      const workflow = forkWorkflow('any-cli', {
        paths: ['fast', 'slow'],
        join: { joinStrategy: 'ANY_COMPLETED', mainPathId: 'fast' },
        profiles: { slow: 'sluggish' },
        extraProfiles: { sluggish: { provider: 'scripted', responses: ['slow'], delayMs: 30_000 } },
      });
      await writeFile(file, JSON.stringify(workflow));
      // The spawn's own timeout (well under the branch's 30 s) fails the test if the process lingers.
      const child = cliProcessSync(['run', file, '--json'], { cwd, timeout: 20_000 });
      expect(child.error).toBeUndefined();
      expect(child.status).toBe(0);
      expect(JSON.parse(child.stdout)).toMatchObject({
        status: 'COMPLETED',
        output: { merged: 'fast reply' },
      });
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });
});
