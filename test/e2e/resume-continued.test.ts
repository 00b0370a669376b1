/**
 * Exact resume across continue-as-new: a 120-item counting loop run with `--continue-after-events 100`
 * (about 24 executions) is killed with SIGKILL ten times — at chosen points of its continuations (the
 * process kills itself as it writes a progress line: test/e2e/kill-on-lines.mjs) and at random ones —
 * each time resumed by another process (`resume` with the first execution's id, a middle one's, the one
 * `runs` lists as INTERRUPTED, or `run --thread` on the root thread), and the final state (output,
 * conversation, variables, node records, events, the chain of executions and their names) must equal a
 * fault-free run's with the same threshold. After every kill, `runs` lists the run once as INTERRUPTED.
 *
 * test/functions/local/resume-chain.test.ts stops runs in-process at every phase deterministically.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunJsonResult } from '../../cli/commands/run.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { pendingSuccessor, successorName } from '../../functions/local/resume-chain.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { executionChainOf, threadsOfChain } from '../../functions/stores/execution-chain.ts';
import type { ExecutionRecord } from '../../functions/stores/execution-index.ts';
import { fullThread } from '../functions/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { type RunningCli, runningCli } from '../support/cli-process.ts';
import { generator } from '../support/seeded-random.ts';
import { idsByRole, plain, threadOutcome } from './helpers.ts';
import { countingLoop } from './workflows.ts';

const HOOK = pathToFileURL(join(import.meta.dirname, 'kill-on-lines.mjs')).href;
const SEED = Number(process.env.STEPTHREAD_RESUME_SEED ?? 20261125);
const THRESHOLD = 100;
const ITEMS = 120;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-resume-continued-'));
  await writeFile(join(dir, 'count.json'), JSON.stringify(COUNT_WORKFLOW));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const COUNT_WORKFLOW = countingLoop('counter + item');

const random = generator(SEED);

const cli = (...args: string[]) => runCli(args, { cwd: dir });

/** The CLI in a child process with the kill hook; it kills itself on the `killOn` lines, when given. */
function spawnCli(args: readonly string[], killOn?: readonly (readonly [string, number])[]): RunningCli {
  return runningCli(args, {
    cwd: dir,
    nodeArgs: ['--import', HOOK],
    env: {
      STEPTHREAD_DATA_DIR: '',
      ...(killOn ? { STEPTHREAD_TEST_KILL_ON: JSON.stringify(killOn) } : {}),
    },
  });
}

async function withStores<T>(
  dataDir: string,
  work: (runtime: ReturnType<typeof createLocalRuntime>) => Promise<T>,
): Promise<T> {
  const services = await openDataDir(dataDir);
  try {
    return await work(createLocalRuntime({ clients: createAwsClients(services.target, services.names) }));
  } finally {
    await services.close();
  }
}

/** Everything about a run that must not depend on faults, over all its executions; ids named by role. */
function finalState(dataDir: string, firstExecutionId: string): Promise<unknown> {
  return withStores(dataDir, async (runtime) => {
    const { stores } = runtime;
    const chain = await executionChainOf(stores.executions, firstExecutionId);
    const rootThreadId = chain[0]!.rootThreadId;
    const ids = new Set([
      rootThreadId,
      ...(await threadsOfChain(stores.threads, chain)).map((e) => e.thread.id),
    ]);
    const threads: Thread[] = [];
    for (const id of ids) threads.push((await fullThread(stores.threads, id)).thread);
    const described = [];
    for (const thread of threads) {
      described.push({
        ...threadOutcome(thread),
        errors: thread.errors.map((error) => error.code),
        events: (thread.events ?? []).map((event) =>
          event.type === 'THREAD_CONTINUED' ? `${event.type} ${event.step}` : event.type,
        ),
        metadata: { continuations: thread.metadata.continuations },
        conversation: plain(await runtime.conversationOf(thread)),
      });
    }
    const executions = chain.map((record, i) => ({
      status: record.status,
      step: record.continuedFromStep,
      history: record.continuedFromHistory,
      named: i === 0 || record.executionId === successorName(rootThreadId, record.continuedFromStep!),
      linked: [
        record.continuedFrom === chain[i - 1]?.executionId,
        record.continuedAs === chain[i + 1]?.executionId,
      ],
    }));
    return idsByRole({ executions, threads: described }, threads);
  });
}

/** Where a killed run stopped, from what its stores hold. */
function phaseOf(dataDir: string, firstExecutionId: string, workflow: Workflow): Promise<string> {
  return withStores(dataDir, async (runtime) => {
    const { stores } = runtime;
    const chain = await executionChainOf(stores.executions, firstExecutionId);
    const { thread } = await stores.threads.getThread(chain[0]!.rootThreadId);
    const find = (id: string | undefined) => chain.find((record) => record.executionId === id);
    const claimed: ExecutionRecord | undefined = find(thread.metadata.executionId);
    const handedOver = thread.lastEnvelope?.executionId !== thread.metadata.executionId;
    if (claimed === undefined) return 'a successor claimed the thread, no record yet';
    if (handedOver) {
      return find(claimed.continuedFrom)?.status === 'CONTINUED'
        ? 'a successor claimed the thread, before its first node'
        : 'a successor recorded, its predecessor not CONTINUED yet';
    }
    const prepared = runtime.prepare(workflow, { continueAfterEvents: THRESHOLD });
    if (pendingSuccessor(prepared.definition, thread)) return 'at a continuation, successor not started';
    if (claimed.continuedFrom !== undefined) return 'in the middle of a successor';
    return 'in the middle of the first execution';
  });
}

type Resumer = 'resume first' | 'resume middle' | 'resume interrupted' | 'run --thread';

interface Kill {
  command: 'run' | Resumer;
  /** Lines the process kills itself at (kill-on-lines.mjs), else SIGKILL from here after random lines. */
  on?: readonly (readonly [string, number])[];
}

const KILLS: Kill[] = [
  // In the middle of the third execution.
  {
    command: 'run',
    on: [
      ['⤷', 2],
      ['✓ inc', 2],
    ],
  },
  // An execution ended CONTINUED; its successor never started.
  { command: 'resume first', on: [['⤷', 1]] },
  // The successor claimed the thread (and recorded itself); its first node did not commit.
  { command: 'resume interrupted', on: [['✓ resume at ', 1]] },
  // A successor started, its claim under way.
  {
    command: 'run --thread',
    on: [
      ['⤷', 1],
      ['→ resume at ', 1],
    ],
  },
  { command: 'resume interrupted' },
  {
    command: 'resume middle',
    on: [
      ['⤷', 1],
      ['✓ resume at ', 1],
    ],
  },
  { command: 'resume first', on: [['⤷', 2]] },
  {
    command: 'run --thread',
    on: [
      ['⤷', 1],
      ['✓ inc', 3],
    ],
  },
  { command: 'resume middle' },
  // The LOOP_END committed and its Choice went to `:continue`.
  {
    command: 'resume interrupted',
    on: [
      ['⤷', 1],
      ['→ continue-as-new at next', 1],
    ],
  },
];

function runArgs(dataDir: string): string[] {
  return [
    'run',
    join(dir, 'count.json'),
    '--input',
    JSON.stringify({ items: Array.from({ length: ITEMS }, (_, i) => i) }),
    '--continue-after-events',
    String(THRESHOLD),
    '--data-dir',
    dataDir,
  ];
}

describe('stepthread resume across continue-as-new', () => {
  it(`${KILLS.length} SIGKILLs across continuations, each resumed, end as a fault-free run (seed ${SEED})`, async () => {
    const workflow = COUNT_WORKFLOW as unknown as Workflow;
    const cleanDir = join(dir, 'clean');
    const clean = await cli(...runArgs(cleanDir), '--json');
    expect(clean.code, clean.stderr).toBe(0);
    const cleanResult = JSON.parse(clean.stdout) as RunJsonResult;
    const cleanFirst = /started execution (\S+)/.exec(clean.stderr)![1]!;
    const cleanChain = await withStores(cleanDir, (runtime) =>
      executionChainOf(runtime.stores.executions, cleanFirst),
    );
    expect(cleanChain.length).toBeGreaterThan(20);

    const faultyDir = join(dir, 'faulty');
    let first: string | undefined;
    let threadId: string | undefined;
    const log: string[] = [];
    const phases = new Set<string>();
    for (const [i, kill] of KILLS.entries()) {
      let args: string[];
      if (kill.command === 'run') args = runArgs(faultyDir);
      else if (kill.command === 'run --thread') {
        args = ['run', join(dir, 'count.json'), '--thread', threadId!, '--data-dir', faultyDir];
      } else {
        const listed = JSON.parse(
          (await cli('runs', '--json', '--data-dir', faultyDir)).stdout,
        ) as RunsJsonEntry[];
        const ofRun = listed.filter((entry) => entry.rootThreadId === threadId);
        const id =
          kill.command === 'resume first'
            ? first!
            : kill.command === 'resume middle'
              ? ofRun[Math.floor(ofRun.length / 2)]!.executionId
              : ofRun.find((entry) => entry.status === 'INTERRUPTED')!.executionId;
        args = ['resume', id, '--data-dir', faultyDir];
      }
      const process = spawnCli(args, kill.on);
      let randomLines: number | undefined;
      if (kill.on === undefined) {
        // Past the steps a resumed process replays (one execution's at most), then somewhere further.
        randomLines = 40 + random(80);
        await process.after(randomLines);
        process.child.kill('SIGKILL');
      }
      const { signal } = await process.exited;
      const stderr = process.stderr();
      expect(signal, `kill ${i} (${kill.command}) ended by itself:\n${stderr.slice(-2000)}`).toBe('SIGKILL');
      first ??= /started execution (\S+) \(thread (\S+)\)/.exec(stderr)?.[1];
      threadId ??= /started execution \S+ \(thread (\S+)\)/.exec(stderr)?.[1];
      expect(first, stderr).toBeDefined();

      // `runs` lists the run once as interrupted; every other execution of it continued.
      const listed = JSON.parse(
        (await cli('runs', '--json', '--data-dir', faultyDir)).stdout,
      ) as RunsJsonEntry[];
      const ofRun = listed.filter((entry) => entry.rootThreadId === threadId);
      const interrupted = ofRun.filter((entry) => entry.status === 'INTERRUPTED');
      expect(interrupted, JSON.stringify(ofRun)).toHaveLength(1);
      // With the data directory it was listed from, so the command as printed finds the run.
      expect(interrupted[0]!.resume).toBe(
        `stepthread resume ${interrupted[0]!.executionId} --data-dir ${faultyDir}`,
      );
      expect(ofRun.filter((entry) => entry.status !== 'INTERRUPTED').map((entry) => entry.status)).toEqual(
        ofRun.slice(1).map(() => 'CONTINUED'),
      );
      const phase = await phaseOf(faultyDir, first!, workflow);
      phases.add(phase);
      log.push(
        `${i}: ${kill.command} ${kill.on ? JSON.stringify(kill.on) : `after ${randomLines} lines`} → ${phase} (${ofRun.length} executions)`,
      );
    }
    const killed = log.join('\n');
    // The chosen kill points reach these phases whatever the timing (the others depend on it).
    for (const phase of [
      'at a continuation, successor not started',
      'a successor claimed the thread, before its first node',
      'in the middle of a successor',
    ]) {
      expect(phases, killed).toContain(phase);
    }

    const resumed = await cli('resume', first!, '--json', '--data-dir', faultyDir);
    expect(resumed.code, `${killed}\n${resumed.stderr}`).toBe(0);
    const result = JSON.parse(resumed.stdout) as RunJsonResult;
    expect(result.status).toBe(cleanResult.status);
    expect(result.output).toEqual({ counter: (ITEMS * (ITEMS - 1)) / 2 });
    expect(result.output).toEqual(cleanResult.output);
    expect(result.conversation).toEqual(cleanResult.conversation);
    expect(await finalState(faultyDir, first!), killed).toEqual(await finalState(cleanDir, cleanFirst));
    const listed = JSON.parse(
      (await cli('runs', '--json', '--data-dir', faultyDir)).stdout,
    ) as RunsJsonEntry[];
    expect(listed.filter((entry) => entry.status === 'INTERRUPTED')).toEqual([]);
    console.log(`kill points (seed ${SEED}):\n${killed}`);
  }, 600_000);
});
