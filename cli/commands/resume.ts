/**
 * `stepthread resume <executionId|threadId> [--json] [--answers …] [--workflow <file>] [--data-dir <dir>]`:
 * runs an interrupted local run (killed, Ctrl-C) to its end: the execution that was in flight runs
 * again under its own id (any execution id of a run that continued leads to it). Steps its threads
 * committed replay from their records — nothing is applied twice, no model called again — and the
 * run goes on from the step that was in flight. Output as `run`.
 */
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import { commandLine } from '../../functions/local/interaction-hints.ts';
import { executionToResume } from '../../functions/local/resume-chain.ts';
import { getLocalRun } from '../../functions/local/run-registry.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { checkAnswers } from '../answers.ts';
import { continueAfterEventsOf, reportThresholdRefused } from '../continuation.ts';
import { answersGivenOnce } from '../given-once.ts';
import type { CliIo } from '../io.ts';
import { commandForm, dataDirArgument, loadValidWorkflow, withStores } from '../local-session.ts';
import {
  answerSourceFor,
  type RunCommandOptions,
  refuseAnswers,
  reportAnswersRefused,
  resumeExecution,
  runOptionsFor,
} from './run.ts';

export interface ResumeCommandOptions extends Omit<RunCommandOptions, 'input' | 'thread'> {
  workflow?: string;
}

export async function runResume(id: string, options: ResumeCommandOptions, io: CliIo): Promise<number> {
  const answers = await answerSourceFor(options, io);
  if (!answers.ok) return reportAnswersRefused(answers, io);
  const threshold = continueAfterEventsOf(options, io);
  if (!threshold.ok) return reportThresholdRefused(threshold, io);
  let workflow: Awaited<ReturnType<typeof loadValidWorkflow>> | undefined;
  if (options.workflow !== undefined) {
    workflow = await loadValidWorkflow(options.workflow, io);
    if (!workflow.ok) return workflow.exitCode;
    const bad = answers.data === undefined ? [] : checkAnswers(answers.data, workflow.workflow);
    if (bad.length > 0) return refuseAnswers(io, bad, { resumable: true });
  }
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot resume ${id}` : 'cannot open the local stores'),
    async (session) => {
      const runtime = createLocalRuntime({
        clients: session.clients,
        ...(threshold.value === undefined ? {} : { continueAfterEvents: threshold.value }),
      });
      const executionId = (await getLocalRun(session.clients, id))
        ? id
        : await executionIdOf(runtime, id, commandLine(commandForm(io, dataDirArgument(options)), 'runs'));
      return resumeExecution(runtime, session, executionId, options, io, {
        ...runOptionsFor(options, io, answers.sourceFor(runtime)),
        ...(answers.data === undefined ? {} : { answers: answers.data }),
        ...(options.continueAfterEvents === undefined ? {} : { continueAfterEvents: threshold.value }),
        ...(workflow?.ok ? { workflow: workflow.workflow } : {}),
        ...(options.workflow === undefined ? {} : { file: options.workflow }),
      });
    },
  );
}

/**
 * An execution id as given, or the execution a thread (root or fork child) runs in — for a root
 * thread of a run that continued, the one in flight.
 */
async function executionIdOf(
  runtime: ReturnType<typeof createLocalRuntime>,
  id: string,
  runsCommand: string,
): Promise<string> {
  try {
    return (await runtime.stores.executions.getExecution(id)).executionId;
  } catch (error) {
    if (!(error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND')) throw error;
  }
  let thread: Awaited<ReturnType<typeof runtime.stores.threads.getThread>>['thread'];
  try {
    thread = (await runtime.stores.threads.getThread(id)).thread;
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'THREAD_NOT_FOUND') {
      throw new StepthreadError(
        'EXECUTION_NOT_FOUND',
        `execution or thread ${id} not found (${runsCommand} lists the executions here)`,
      );
    }
    throw error;
  }
  const executionId = await executionToResume(runtime.stores.executions, thread);
  if (executionId === undefined) {
    throw new StepthreadError('RUN_NOT_RESUMABLE', `thread ${id} has not run in any execution`);
  }
  return executionId;
}

export function registerResume(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('resume')
    .description(
      'run an interrupted local execution to its end from the step it stopped at (committed steps are not run again)',
    )
    .argument('<id>', 'an execution id, or a thread id of the run')
    .option('--json', 'print only the result, as run --json does')
    .option(
      '--answers <json|file>',
      'answers to USER_INTERACTION nodes still to come: a JSON object keyed by node id, inline or in a file',
      answersGivenOnce,
    )
    .option(
      '--workflow <file>',
      'the workflow to resume with (default: the one recorded when the run started)',
    )
    .option(
      '--continue-after-events <n|off>',
      'the continue-as-new threshold (default: the one the run started with; a different one changes where it continues)',
    )
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .action(async (id: string, options: ResumeCommandOptions) => {
      setExit(await runResume(id, options, io));
    });
}
