/**
 * `stepthread rerun --failed --from <node> --stack` (issue 28) against a Step Functions stand-in whose
 * state machine is the workflow compiled as deploy compiles it and whose StartExecution runs the
 * execution input on the embedded runtime the way a deployed state machine does (`startThread`: the
 * definition's entry claims the copy and jumps to its node). The failed runs are local runs the
 * stand-in lists as the state machine's executions; the table is the data directory's.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RerunJson } from '../../cli/commands/rerun.ts';
import type { RunsJsonEntry } from '../../cli/commands/runs.ts';
import type { CopyStartInput } from '../../engine/asl/copy-start.ts';
import { compileWorkflow } from '../../engine/asl/index.ts';
import { createAwsClients, releaseAwsClients } from '../../functions/aws/clients.ts';
import { openDataDir } from '../../functions/local/data-dir-server.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { putNodeTable } from '../../functions/stores/node-tables.ts';
import { runCli } from '../support/cli.ts';
import { recordingSfn } from '../support/sfn-stub.ts';
import { sizeCheck } from '../support/size-check.ts';

const RUNS = 3;
const MACHINE = 'arn:aws:states:us-east-1:123456789012:stateMachine:stepthread-size-check';

let dir: string;
let failed: RunsJsonEntry[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-rerun-stack-'));
  const file = join(dir, 'size-check.json');
  await writeFile(file, JSON.stringify(sizeCheck));
  for (let size = 2; size < 2 + RUNS; size += 1) {
    expect((await cli('run', file, '--input', JSON.stringify({ size }))).code).toBe(1);
  }
  failed = JSON.parse((await cli('runs', '--json')).stdout);
  expect(failed.map((run) => run.status)).toEqual(Array(RUNS).fill('FAILED'));
  // The stack's bucket holds the node table the definition names, as a deploy stores it.
  const services = await openDataDir(dataDir(), { create: false });
  try {
    const clients = createAwsClients(services.target, services.names);
    await putNodeTable(clients.s3, clients.bucketName, compileWorkflow(sizeCheck).nodeTable);
  } finally {
    releaseAwsClients(services.target);
    await services.close();
  }
}, 300_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const dataDir = () => join(dir, 'data');
const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir()], { cwd: dir });

/**
 * The stand-in stack: one state machine (sizeCheck as compiled), the failed local runs as its
 * executions, and a StartExecution that runs the copy through the definition's entry on the data
 * directory's stores, as the deployed state machine would.
 */
function stack() {
  const definition = JSON.stringify(compileWorkflow(sizeCheck).definition);
  const ended = new Map<string, string>();
  const sfn = recordingSfn(async (name, input) => {
    switch (name) {
      case 'ListStateMachinesCommand':
        return {
          stateMachines: [{ name: 'stepthread-size-check', stateMachineArn: MACHINE, type: 'STANDARD' }],
        };
      case 'ListExecutionsCommand':
        return {
          executions: failed.map((run) => ({
            executionArn: run.executionId,
            status: 'FAILED',
            startDate: new Date(run.startTime),
          })),
        };
      case 'DescribeStateMachineCommand':
        return { definition };
      case 'StartExecutionCommand': {
        const executionArn = `${MACHINE.replace(':stateMachine:', ':execution:')}:${String(input.name)}`;
        const start = JSON.parse(String(input.input)) as CopyStartInput;
        const services = await openDataDir(dataDir(), { create: false });
        try {
          const runtime = createLocalRuntime({ clients: createAwsClients(services.target, services.names) });
          const outcome = await runtime
            .prepare(sizeCheck)
            .startThread(start.resume.envelope.threadId, { executionId: executionArn });
          ended.set(executionArn, outcome.execution.status);
        } finally {
          releaseAwsClients(services.target);
          await services.close();
        }
        return { executionArn };
      }
      case 'DescribeExecutionCommand': {
        const arn = String(input.executionArn);
        return {
          executionArn: arn,
          stateMachineArn: MACHINE,
          status: ended.get(arn) ?? 'RUNNING',
          startDate: new Date(),
        };
      }
      default:
        throw new Error(`unexpected ${name}`);
    }
  });
  return sfn;
}

describe('rerun --failed --stack', () => {
  it('a dry run checks each copy and its start against the deployed definition, starting nothing', async () => {
    const sfn = stack();
    const dry = await runCli(
      ['rerun', '--failed', '--from', 'check', '--set', 'limit=100', '--json', '--data-dir', dataDir()],
      { cwd: dir, services: { sfn } },
    );
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    const report: RerunJson = JSON.parse(dry.stdout);
    expect(report.dryRun).toBe(true);
    expect(report.runs.map((run) => [run.status, run.error?.code, run.skipped])).toEqual(
      Array(RUNS).fill(['FAILED', 'CODE_ERROR', undefined]),
    );
    expect(sfn.sent.map((sent) => sent.name)).not.toContain('StartExecutionCommand');
    // A node the deployed workflow does not have is refused for each run, at copy time.
    const refused = await runCli(
      [
        'rerun',
        '--failed',
        '--from',
        'check',
        '--node-config',
        'chek.code="1"',
        '--json',
        '--data-dir',
        dataDir(),
      ],
      { cwd: dir, services: { sfn: stack() } },
    );
    expect(refused.code).toBe(1);
    expect((JSON.parse(refused.stdout) as RerunJson).runs.map((run) => run.skipped?.code)).toEqual(
      Array(RUNS).fill('NODE_NOT_FOUND'),
    );
  });

  it('--yes copies each failed run from the node with the fix, starts the copies on the live alias, and prints old → new', async () => {
    const sfn = stack();
    const done = await runCli(
      ['rerun', '--failed', '--from', 'check', '--set', 'limit=100', '--yes', '--data-dir', dataDir()],
      { cwd: dir, services: { sfn } },
    );
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^EXECUTION +WORKFLOW +OLD → NEW +COPY +NEW EXECUTION\n/);
    expect(
      done.stdout.match(/ size-check {2}FAILED → COMPLETED {2}t-[0-9a-f]{32} {2}arn:\S+\n/g),
    ).toHaveLength(RUNS);
    expect(done.stdout).toMatch(
      /\n3 runs copied from check with 1 edit and started on the stack: 3 COMPLETED\n$/,
    );
    expect(done.stderr.match(/^rerun \d\/3: \S+ → COMPLETED$/gm)).toHaveLength(RUNS);
    const starts = sfn.sent.filter((sent) => sent.name === 'StartExecutionCommand');
    expect(starts).toHaveLength(RUNS);
    for (const start of starts) {
      expect(start.input.stateMachineArn).toBe(`${MACHINE}:live`);
      const input = JSON.parse(String(start.input.input)) as CopyStartInput;
      expect(input.resume).toMatchObject({ copy: true, at: 'check', node: { id: 'check', type: 'CODE' } });
    }
  });
});

describe('start --thread', () => {
  it('starts a copy from its node on the live alias; a copy that ran, --input, or another workflow is refused', async () => {
    const copied = await cli('copy', failed[0]!.rootThreadId!, '--from', 'check', '--set', 'limit=100');
    expect([copied.code, copied.stderr]).toEqual([0, '']);
    const copyId = copied.stdout.trim();
    const sfn = stack();
    const start = (...args: string[]) =>
      // `start` takes no --data-dir (it is for a deployed stack): the stand-in's table is the directory's.
      runCli(['start', ...args], {
        cwd: dir,
        services: { sfn },
        env: { ...process.env, STEPTHREAD_DATA_DIR: dataDir() },
      });
    const started = await start('size-check', '--thread', copyId);
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(
      /^arn:aws:states:us-east-1:123456789012:execution:stepthread-size-check:\S+\n$/,
    );
    expect(started.stderr).toBe(`starting thread ${copyId} from node check\n`);
    const inspected = JSON.parse((await cli('inspect', copyId, '--json')).stdout).threads[0];
    const source = JSON.parse((await cli('inspect', failed[0]!.rootThreadId!, '--json')).stdout).threads[0];
    expect(inspected).toMatchObject({ status: 'COMPLETED', output: { accepted: source.input.size } });
    const again = await start('size-check', '--thread', copyId);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /INVALID_STATUS_TRANSITION: thread \S+ is COMPLETED: only a copy that has not run starts/,
    );
    const other = await start('another', '--thread', copyId);
    expect(other.stderr).toMatch(
      /INVALID_TASK_INPUT: thread \S+ belongs to workflow size-check, not another/,
    );
    const withInput = await start('size-check', '--thread', copyId, '--input', '{}');
    expect([withInput.code, withInput.stderr]).toEqual([
      2,
      'stepthread: USAGE_ERROR: --input and --thread do not go together (a thread keeps its own input)\n',
    ]);
    expect(sfn.sent.filter((sent) => sent.name === 'StartExecutionCommand')).toHaveLength(1);
  });
});
