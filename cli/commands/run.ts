/**
 * `stepthread run <workflow> [--input JSON|@file] [--json] [--thread <id>] [--data-dir <dir>]`:
 * executes the workflow on the embedded runtime (the state machine always runs in this process; the
 * stores follow the environment), shows per-state progress on stderr and prints the result.
 */
import { randomUUID } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_CONTINUE_AFTER_EVENTS } from '../../engine/asl/continuation.ts';
import type { Message } from '../../engine/conversation/types.ts';
import { type CodedError, type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import { inexactNumberIn, MAX_VALUE_DEPTH, valueDepth } from '../../engine/model/json-values.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { workflowForThread } from '../../engine/thread/copy-workflow-edits.ts';
import { commandLine, resumeCommand, waitingMessage } from '../../functions/local/interaction-hints.ts';
import type { LocalRunRecord } from '../../functions/local/run-registry.ts';
import type { LocalRuntime, RunOptions, RunOutcome } from '../../functions/local/runtime.ts';
import { rootThreadIdFor } from '../../functions/nodes/ids.ts';
import { type AnswerSource, checkAnswers, fileAnswers, firstAnswer, terminalAnswers } from '../answers.ts';
import { refuseMissingApiKeys } from '../api-keys.ts';
import { BUDGET_OPTION_HELP, budgetOption } from '../budget-option.ts';
import {
  CONTINUE_AFTER_HELP,
  type ContinueAfterOption,
  continueAfterEventsOf,
  reportThresholdRefused,
} from '../continuation.ts';
import { formatCodedError, visible } from '../format.ts';
import { answersGivenOnce, budgetGivenOnce, inputGivenOnce } from '../given-once.ts';
import { type CliIo, EXIT, withoutByteOrderMark } from '../io.ts';
import {
  commandForm,
  type DataDirOption,
  dataDirArgument,
  loadValidWorkflow,
  printErrors,
  type StoreSession,
  withStores,
} from '../local-session.ts';
import { nodeLogsPrinter } from '../node-logs.ts';
import { progressPrinter } from '../progress.ts';
import { streamedReplyPrinter } from '../streamed-replies.ts';

// The runtime (interpreter, handlers, SDK) and the run registry load once the stores begin to open, so a
// store server being started meanwhile starts in parallel with that work (withStores' whileOpening).
const runtimeModule = () => import('../../functions/local/runtime.ts');
const registryModule = () => import('../../functions/local/run-registry.ts');

export interface RunCommandOptions extends DataDirOption, ContinueAfterOption {
  input?: string;
  /** This run's budget, as JSON (`--budget`). */
  budget?: string;
  json?: boolean;
  thread?: string;
  /** A JSON file answering USER_INTERACTIONs by node id. */
  answers?: string;
}

/** The `--json` result: exactly these keys. */
export interface RunJsonResult {
  executionId: string;
  threadId: string;
  status: string;
  output: unknown;
  conversation: Message[];
  /** Why the run did not complete; null when it completed. */
  error: { code: string; message: string; nodeId: string | null } | null;
  /** The command that goes on with a run stopped at a question (INTERRUPTED); null otherwise. */
  resume: string | null;
}

/**
 * The `--json` result: the same fields whatever the status (the conversation so far included), those
 * a status has nothing for null, so a script reads every run alike.
 */
function runJsonResult(
  run: Pick<RunJsonResult, 'executionId' | 'threadId' | 'status' | 'conversation'> & {
    output?: unknown;
    error?: CodedError | undefined;
    resume?: string;
  },
): RunJsonResult {
  return {
    executionId: run.executionId,
    threadId: run.threadId,
    status: run.status,
    output: run.output ?? null,
    conversation: run.conversation,
    error:
      run.status !== 'COMPLETED' && run.error
        ? { code: run.error.code, message: run.error.message, nodeId: run.error.nodeId ?? null }
        : null,
    resume: run.resume ?? null,
  };
}

/** A thread's conversation as stored so far; none when the thread cannot be read. */
async function conversationSoFar(runtime: RunRuntime, threadId: string): Promise<Message[]> {
  const { thread } = await runtime.stores.threads.getThread(threadId).catch(() => ({ thread: undefined }));
  return thread ? await runtime.conversationOf(thread) : [];
}

/** What the run's output needs of the runtime: its stored threads and their conversations. */
type RunRuntime = Pick<LocalRuntime, 'stores' | 'conversationOf'>;

export type ParsedInput =
  | { ok: true; value: Record<string, unknown> }
  /**
   * INPUT_INVALID (unreadable, not JSON, not an object) is a usage error (exit 2); a JSON value the
   * run refuses (too deep, an inexact integer) exits 1.
   */
  | { ok: false; message: string; code: ErrorCode };

/** A usage error in `--input` itself: what was given cannot be an input. */
function invalidInput(message: string): ParsedInput {
  return { ok: false, code: 'INPUT_INVALID', message };
}

export async function parseInput(raw: string | undefined, io: CliIo): Promise<ParsedInput> {
  if (raw === undefined) return { ok: true, value: {} };
  let text = raw;
  if (raw.startsWith('@')) {
    try {
      text = await io.readFile(raw.slice(1));
    } catch (error) {
      return invalidInput(`cannot read --input file ${raw.slice(1)}: ${(error as Error).message}`);
    }
  }
  text = withoutByteOrderMark(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return invalidInput(
      `--input is not valid JSON (${(error as Error).message}): give a JSON object, or @file to read one`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalidInput('--input must be a JSON object, such as {"topic": "..."}');
  }
  const refused = refusedInput(text, value);
  if (refused) return { ok: false, ...refused };
  return { ok: true, value: value as Record<string, unknown> };
}

/** Says why `--input` is refused, coded; the exit code: 2 for INPUT_INVALID, else 1. */
export function reportInputRefused(input: Extract<ParsedInput, { ok: false }>, io: CliIo): number {
  io.stderr(`stepthread: ${input.code}: ${visible(input.message)}\n`);
  return input.code === 'INPUT_INVALID' ? EXIT.usage : EXIT.invalid;
}

/** An input the run would refuse or change: too deep, or a number JSON.parse would round or overflow. */
function refusedInput(text: string, value: unknown): { code: ErrorCode; message: string } | undefined {
  if (valueDepth(value) > MAX_VALUE_DEPTH) {
    return {
      code: 'VALUE_TOO_DEEP',
      message: `--input nests arrays and objects more than ${MAX_VALUE_DEPTH} levels deep`,
    };
  }
  const inexact = inexactNumberIn(text);
  if (inexact !== undefined) {
    return {
      code: 'INPUT_NUMBER_INEXACT',
      message: `--input holds the number ${inexact}, which a JSON number (a double) cannot hold exactly (an integer beyond 2^53, a number beyond ±1.8e308, or a non-zero one below 5e-324, which becomes 0); pass it as a string`,
    };
  }
  return undefined;
}

export { type ProgressPrinter, progressPrinter } from '../progress.ts';

export async function runRun(file: string, options: RunCommandOptions, io: CliIo): Promise<number> {
  const input = await parseInput(options.input, io);
  if (!input.ok) return reportInputRefused(input, io);
  if (options.thread !== undefined && options.input !== undefined) {
    io.stderr(
      'stepthread: USAGE_ERROR: --input and --thread do not go together (a thread keeps its own input)\n',
    );
    return EXIT.usage;
  }
  const answers = await answerSourceFor(options, io);
  if (!answers.ok) return reportAnswersRefused(answers, io);
  const threshold = continueAfterEventsOf(options, io);
  if (!threshold.ok) return reportThresholdRefused(threshold, io);
  const budget = budgetOption(options.budget, io);
  if (!budget.ok) return budget.exitCode;
  const loaded = await loadValidWorkflow(file, io);
  if (!loaded.ok) return loaded.exitCode;
  const badAnswers = answers.data === undefined ? [] : checkAnswers(answers.data, loaded.workflow);
  // Module tools resolve their relative paths from the workflow file's folder.
  const workflowDir = dirname(resolve(io.cwd ?? process.cwd(), file));
  if (badAnswers.length > 0) return refuseAnswers(io, badAnswers);
  // A copy's run (--thread) is checked below, with the edits it was made with.
  if (options.thread === undefined) {
    const refused = refuseMissingApiKeys(loaded.workflow, io);
    if (refused !== undefined) return refused;
  }

  let runtimeLoading: ReturnType<typeof runtimeModule> | undefined;
  return withStores(
    options,
    io,
    (session) => (session ? 'the run could not start' : 'cannot open the local stores'),
    async (session) => {
      const { createLocalRuntime, runnableStartOf } = await (runtimeLoading ?? runtimeModule());
      const runtime = createLocalRuntime({
        clients: session.clients,
        ...(threshold.value === undefined ? {} : { continueAfterEvents: threshold.value }),
      });
      const runOptions = {
        ...runOptionsFor(options, io, answers.sourceFor(runtime)),
        workflowDir,
        ...(budget.value === undefined ? {} : { budget: budget.value }),
      };
      if (options.thread !== undefined) {
        const { thread } = await runtime.stores.threads.getThread(options.thread);
        // A thread whose run was interrupted (killed, Ctrl-C, closed pipe) goes on where it stopped,
        // in whichever execution of the run was in flight.
        const { executionToResume } = await import('../../functions/local/resume-chain.ts');
        const executionId = await executionToResume(runtime.stores.executions, thread);
        if (thread.status === 'RUNNING' && executionId !== undefined) {
          return resumeExecution(runtime, session, executionId, options, io, {
            ...runOptions,
            ...(answers.data === undefined ? {} : { answers: answers.data }),
            ...(options.continueAfterEvents === undefined ? {} : { continueAfterEvents: threshold.value }),
            workflow: loaded.workflow,
            file,
          });
        }
        const startNodeId = runnableStartOf(thread);
        // A copy made with node config or profile edits runs the workflow with them.
        const workflow = workflowForThread(loaded.workflow, thread);
        const refused = refuseMissingApiKeys(workflow, io);
        if (refused !== undefined) return refused;
        const prepared = runtime.prepare(workflow, { startNodeId });
        if (!options.json) io.stderr(`running thread ${thread.id} from node ${startNodeId}\n`);
        const newExecutionId = randomUUID();
        const held = await startedRun(session, io, {
          ...(answers.data === undefined ? {} : { answers: answers.data }),
          executionId: newExecutionId,
          threadId: thread.id,
          workflow,
          file,
          continueAfterEvents: threshold.value ?? DEFAULT_CONTINUE_AFTER_EVENTS,
        });
        return finishRun(
          runtime,
          io,
          options,
          () => prepared.runThread(thread.id, { ...runOptions, executionId: newExecutionId }),
          newExecutionId,
          { session, held },
        );
      }
      const prepared = runtime.prepare(loaded.workflow);
      const executionId = randomUUID();
      const held = await startedRun(session, io, {
        ...(answers.data === undefined ? {} : { answers: answers.data }),
        executionId,
        input: input.value,
        threadId: rootThreadIdFor(executionId),
        workflow: loaded.workflow,
        file,
        continueAfterEvents: threshold.value ?? DEFAULT_CONTINUE_AFTER_EVENTS,
      });
      return finishRun(
        runtime,
        io,
        options,
        () => prepared.run(input.value, { ...runOptions, executionId }),
        executionId,
        { session, held },
      );
    },
    () => {
      runtimeLoading = runtimeModule();
      // Awaited in `work`, or never when the stores fail to open.
      runtimeLoading.catch(() => {});
      registryModule().catch(() => {});
    },
  );
}

/**
 * Progress (with what CODE nodes print and LLM replies as they stream) and continuation output as the
 * flags ask, and the answer source. `--json` prints none of them: `inspect` has the output.
 */
export function runOptionsFor(
  options: Pick<RunCommandOptions, 'json'>,
  io: CliIo,
  answerInteraction: AnswerSource,
): RunOptions {
  if (options.json) return { answerInteraction };
  // Streamed replies print under their node's progress line; every other line ends an open one first.
  let placeOf: (threadId: string) => string = () => '';
  const replies = streamedReplyPrinter(io, (threadId) => placeOf(threadId));
  const lines = replies.io;
  const onEvent = progressPrinter(lines);
  placeOf = onEvent.placeOf;
  const onContinue: RunOptions['onContinue'] = (ended, successor) =>
    lines.stderr(
      `  ⤷ execution ${ended.executionId} continues as ${successor} (${ended.historyEvents} history events)\n`,
    );
  return {
    answerInteraction,
    onEvent,
    onDefinition: onEvent.onDefinition,
    onNodeLogs: nodeLogsPrinter(lines),
    onNodeResult: (entry) => {
      replies.onNodeDone(entry.threadId, entry.result.nodeId);
      onEvent.onNodeResult(entry);
    },
    onReplyText: replies.onReplyText,
    onContinue,
  };
}

/**
 * Before the first node: the run is recorded as this process's (so `runs` tells an interrupted one
 * from a live one, and `resume` finds its workflow), and its ids go to stderr, so a run that is
 * killed can still be found.
 */
export async function startedRun(
  session: StoreSession,
  io: CliIo,
  run: {
    executionId: string;
    threadId: string;
    workflow: Workflow;
    file?: string;
    answers?: unknown;
    input?: Record<string, unknown>;
    /** The continue-as-new threshold the run is compiled with, recorded so a resume uses it again. */
    continueAfterEvents?: number | false;
    resumed?: boolean;
    /** A resume: what it found recorded at `executionId`, taken over only if no other process did meanwhile. */
    takingOver?: { held: LocalRunRecord | undefined };
  },
): Promise<LocalRunRecord> {
  const { recordLocalRun } = await registryModule();
  const held = await recordLocalRun(session.clients, {
    ...(run.input === undefined ? {} : { input: run.input }),
    ...(run.continueAfterEvents === undefined ? {} : { continueAfterEvents: run.continueAfterEvents }),
    executionId: run.executionId,
    workflow: run.workflow,
    ...(run.answers === undefined ? {} : { answers: run.answers }),
    ...(run.file === undefined ? {} : { file: resolve(io.cwd ?? process.cwd(), run.file) }),
    now: new Date().toISOString(),
    ...(run.takingOver === undefined ? {} : { takingOver: run.takingOver }),
  });
  const verb = run.resumed ? 'resuming' : 'started';
  io.stderr(`${verb} execution ${run.executionId} (thread ${run.threadId})\n`);
  return held;
}

/**
 * Runs `start` (SIGINT/SIGTERM say how to resume), lets go of the run this process `held` once it
 * returns, then prints the outcome as `run` does.
 */
export async function finishRun(
  runtime: LocalRuntime,
  io: CliIo,
  options: Pick<RunCommandOptions, 'json' | 'dataDir'>,
  start: () => Promise<RunOutcome>,
  executionId?: string,
  taken?: { session: StoreSession; held: LocalRunRecord },
): Promise<number> {
  let current = executionId;
  const undo = io.onInterrupt?.(
    () =>
      `\nstepthread: interrupted${current ? `; resume with: ${commandLine(commandForm(io, dataDirArgument(options)), `resume ${current}`)}` : ''}\n`,
  );
  let outcome: RunOutcome;
  try {
    outcome = await start();
  } finally {
    undo?.();
    if (taken) await (await registryModule()).releaseLocalRun(taken.session.clients, taken.held);
  }
  current = outcome.executionId;
  if (options.json) {
    const conversation = await conversationSoFar(runtime, outcome.threadId);
    const result = runJsonResult({ ...outcome, conversation });
    io.stdout(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    io.stdout(
      `execution ${outcome.executionId}\nthread    ${outcome.threadId}\nstatus    ${outcome.status}\n`,
    );
    if (outcome.executions.length > 1) {
      const first = outcome.executions[0]!.executionId;
      io.stdout(`run       ${outcome.executions.length} executions, continued from ${first}\n`);
    }
    if (outcome.output !== undefined) io.stdout(`output    ${JSON.stringify(outcome.output, null, 2)}\n`);
  }
  if (outcome.status !== 'COMPLETED') {
    if (outcome.error) io.stderr(`stepthread: run ${outcome.status}: ${formatCodedError(outcome.error)}\n`);
    else io.stderr(`stepthread: run ended ${outcome.status}\n`);
    return EXIT.invalid;
  }
  return EXIT.ok;
}

/**
 * Runs an interrupted run to its end (stepthread resume, run --thread), given any of its executions'
 * ids: the execution in flight runs again (a run that continued: the latest one, or the successor it
 * was due to start). Refused while the process that ran it last is alive; the workflow, answers and
 * continue-as-new threshold are those recorded with the run unless given.
 */
export async function resumeExecution(
  runtime: LocalRuntime,
  session: StoreSession,
  executionId: string,
  options: Pick<RunCommandOptions, 'json' | 'dataDir'>,
  io: CliIo,
  run: RunOptions & {
    workflow?: Workflow;
    file?: string;
    answers?: unknown;
    /** Given on the command line: overrides the recorded threshold. */
    continueAfterEvents?: number | false | undefined;
  },
): Promise<number> {
  const { detailsOfRun, executionBusy, getLocalRun, isRunnerAlive, latestLocalRun } = await registryModule();
  const asked = await getLocalRun(session.clients, executionId);
  const plan = await runtime.resumePlanOf(executionId, asked ? { workflowId: asked.workflowId } : undefined);
  const local = (await latestLocalRun(session.clients, plan.chain)) ?? asked;
  // The record this resume takes over (startedRun's conditional write): another resume started at the
  // same moment finds the same one, and only one of the two writes lands.
  const held =
    plan.executionId === executionId ? asked : await getLocalRun(session.clients, plan.executionId);
  for (const record of [local, held]) {
    if (record !== undefined && isRunnerAlive(record)) throw executionBusy(record.executionId, record);
  }
  const { workflow: given, file, answers: givenAnswers, continueAfterEvents: givenThreshold, ...rest } = run;
  const prompt = io.prompt ? terminalAnswers(io.prompt, io.stderr) : undefined;
  // Answers given now, else those the run started with (then the terminal, when there is one).
  const details = local ? await detailsOfRun(session.clients, local) : {};
  const recorded = givenAnswers === undefined ? details.answers : undefined;
  const answers = givenAnswers ?? recorded;
  let runOptions: RunOptions =
    recorded === undefined
      ? rest
      : {
          ...rest,
          answerInteraction: firstAnswer(fileAnswers(recorded), prompt, stopAtQuestion(io, options, runtime)),
        };
  const workflowFile = file === undefined ? local?.file : resolve(io.cwd ?? process.cwd(), file);
  if (workflowFile !== undefined) runOptions = { ...runOptions, workflowDir: dirname(workflowFile) };
  const baseWorkflow = given ?? details.workflow;
  if (baseWorkflow === undefined) {
    throw new StepthreadError(
      'RUN_NOT_RESUMABLE',
      `execution ${plan.executionId} has no local record of its workflow; resume it with --workflow <file>`,
    );
  }
  // A copy made with node config or profile edits goes on with them, whichever workflow was given.
  const { thread: root } = await runtime.stores.threads.getThread(plan.rootThreadId).catch(() => ({
    thread: undefined,
  }));
  const workflow = root === undefined ? baseWorkflow : workflowForThread(baseWorkflow, root);
  // Before the run is recorded again: a refused resume must leave its recorded workflow as it was.
  const { refuseOtherWorkflow } = await runtimeModule();
  refuseOtherWorkflow(executionId, plan, workflow.id);
  // Checked before anything runs, as `run` checks them: a wrong answer would fail the run for good.
  const badAnswers = givenAnswers === undefined ? [] : checkAnswers(givenAnswers, workflow);
  if (badAnswers.length > 0) return refuseAnswers(io, badAnswers, { resumable: true });
  const refused = refuseMissingApiKeys(workflow, io);
  if (refused !== undefined) return refused;
  // The run continues (continue-as-new) at the same steps only with the threshold it ran with.
  const threshold = givenThreshold ?? local?.continueAfterEvents;
  const prepared = runtime.prepare(workflow, {
    ...(plan.startNodeId === undefined ? {} : { startNodeId: plan.startNodeId }),
    ...(threshold === undefined ? {} : { continueAfterEvents: threshold }),
  });
  const { input } = details;
  const taken = await startedRun(session, io, {
    executionId: plan.executionId,
    threadId: plan.rootThreadId,
    workflow,
    ...((file ?? local?.file) ? { file: (file ?? local?.file)! } : {}),
    ...(answers === undefined ? {} : { answers }),
    ...(input === undefined ? {} : { input }),
    ...(threshold === undefined ? {} : { continueAfterEvents: threshold }),
    resumed: true,
    takingOver: { held },
  });
  return finishRun(
    runtime,
    io,
    options,
    () => prepared.resume(plan.executionId, runOptions, input),
    plan.executionId,
    { session, held: taken },
  );
}

/**
 * `--answers` that do not fit the workflow (a key naming no USER_INTERACTION node, an answer of the
 * wrong kind): input refused before anything runs, so a usage error (exit 2), from `run` and `resume`
 * alike and with the same coded lines. A resume refused so leaves its run as it was.
 */
export function refuseAnswers(
  io: CliIo,
  errors: readonly CodedError[],
  options: { resumable?: boolean } = {},
): number {
  const headline = `the answers do not fit the workflow, so nothing ran${options.resumable ? ' and the run can still be resumed' : ''}`;
  printErrors(io, headline, errors);
  return EXIT.usage;
}

type AnswerSetup =
  /** `sourceFor`: the source once the runtime is there (a run stopped at a question reads its conversation). */
  | { ok: true; sourceFor: (runtime: RunRuntime) => AnswerSource; data?: unknown }
  | { ok: false; code: ErrorCode; message: string };

/** Says why `--answers` is refused, coded (a usage error: nothing ran). */
export function reportAnswersRefused(answers: Extract<AnswerSetup, { ok: false }>, io: CliIo): number {
  io.stderr(`stepthread: ${answers.code}: ${visible(answers.message)}\n`);
  return EXIT.usage;
}

const ANSWERS_EXAMPLE = `a JSON object keyed by node id, such as --answers '{"approve": true}', or a file holding one`;

/**
 * `--answers` as JSON text: inline like --input (an object; an array is inline too, to be refused as
 * not one), or a file (optionally written @file).
 */
async function readAnswersOption(
  raw: string,
  io: CliIo,
): Promise<{ ok: true; text: string } | { ok: false; code: ErrorCode; message: string }> {
  if (/^\s*[{[]/.test(raw)) return { ok: true, text: raw };
  const path = raw.replace(/^@/, '');
  try {
    return { ok: true, text: await io.readFile(path) };
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const why = code === 'ENOENT' ? `there is no file ${path}` : message;
    return {
      ok: false,
      code: 'INVALID_INTERACTION_ANSWER',
      message: `--answers ${raw} is neither inline JSON nor a file that can be read (${why}): give ${ANSWERS_EXAMPLE}`,
    };
  }
}

/** `--answers` first, then the terminal when stdin is one; neither → the run stops at the first question. */
export async function answerSourceFor(options: RunCommandOptions, io: CliIo): Promise<AnswerSetup> {
  let fromFile: AnswerSource | undefined;
  let data: unknown;
  if (options.answers !== undefined) {
    const read = await readAnswersOption(options.answers, io);
    if (!read.ok) return read;
    const { text } = read;
    try {
      data = JSON.parse(withoutByteOrderMark(text));
    } catch (error) {
      const where =
        text === options.answers ? '--answers' : `--answers file ${options.answers.replace(/^@/, '')}`;
      return {
        ok: false,
        code: 'INVALID_INTERACTION_ANSWER',
        message: `${where} is not valid JSON (${(error as Error).message}): give ${ANSWERS_EXAMPLE}`,
      };
    }
    // An answer is a value as --input is: one JSON would round or lose is refused as it is there.
    const inexact = inexactNumberIn(text);
    if (inexact !== undefined) {
      return {
        ok: false,
        code: 'INPUT_NUMBER_INEXACT',
        message: `--answers holds the number ${inexact}, which a JSON number (a double) cannot hold exactly; pass it as a string`,
      };
    }
    if (!isAnswersObject(data)) {
      return {
        ok: false,
        code: 'INVALID_INTERACTION_ANSWER',
        message: `--answers must be ${ANSWERS_EXAMPLE}; got ${Array.isArray(data) ? 'an array' : JSON.stringify(data)}`,
      };
    }
    fromFile = fileAnswers(data);
  }
  const fromTerminal = io.prompt ? terminalAnswers(io.prompt, io.stderr) : undefined;
  return {
    ok: true,
    sourceFor: (runtime) => firstAnswer(fromFile, fromTerminal, stopAtQuestion(io, options, runtime)),
    ...(data === undefined ? {} : { data }),
  };
}

/**
 * With no terminal to ask in and no answer given for it, a question stops the run where it stands,
 * as Ctrl-C does: its question stays open and `resume --answers` goes on from it, so nothing before
 * it (model calls included) runs again. Without a way to exit (an embedding program), the run fails
 * with USER_INPUT_REQUIRED instead.
 */
function stopAtQuestion(
  io: CliIo,
  options: Pick<RunCommandOptions, 'dataDir' | 'json'>,
  runtime: RunRuntime,
): AnswerSource | undefined {
  const { exit } = io;
  if (io.prompt !== undefined || exit === undefined) return undefined;
  return async (interaction) => {
    const resume = resumeCommand(
      interaction.executionId,
      [interaction],
      commandForm(io, dataDirArgument(options)),
    );
    const message = `${waitingMessage(interaction)}; the run stops here, and goes on with: ${resume}`;
    if (options.json) {
      // As for a run that did not complete (its conversation so far included), with what it waits for.
      const stopped = runJsonResult({
        executionId: interaction.executionId,
        threadId: interaction.rootThreadId,
        status: 'INTERRUPTED',
        output: null,
        conversation: await conversationSoFar(runtime, interaction.rootThreadId),
        error: { code: 'USER_INPUT_REQUIRED', message, nodeId: interaction.nodeId },
        resume,
      });
      io.stdout(`${JSON.stringify(stopped, null, 2)}\n`);
    }
    io.stderr(`\nstepthread: ${message}\n`);
    return exit(EXIT.invalid);
  };
}

export function registerRun(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('run')
    .description(
      'run a workflow on this machine (embedded Step Functions runner, local or configured stores)',
    )
    .argument('<workflow>', 'workflow file: .json, .yaml or .yml')
    .option(
      '--input <json>',
      'the run input: a JSON object, or @file to read it from a file',
      inputGivenOnce('run'),
    )
    .option(
      '--json',
      'print only {"executionId","threadId","status","output","conversation","error","resume"}, whatever the status ("error" null when it completed, "resume" null unless it stopped at a question)',
    )
    .option(
      '--thread <threadId>',
      'run an existing thread: a copy from its current node, an interrupted run from the step it stopped at',
    )
    .option(
      '--answers <json|file>',
      'answers to USER_INTERACTION nodes: a JSON object keyed by node id (a list for a node asked several times), inline or in a file',
      answersGivenOnce,
    )
    .option('--continue-after-events <n|off>', CONTINUE_AFTER_HELP)
    .option('--budget <json>', BUDGET_OPTION_HELP, budgetGivenOnce)
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .action(async (file: string, options: RunCommandOptions) => {
      setExit(await runRun(file, options, io));
    });
}

function isAnswersObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
