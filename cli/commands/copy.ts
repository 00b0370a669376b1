/**
 * `stepthread copy <threadId> [--from <nodeId|step>]`: an independent replica of a thread (seed 002),
 * status CREATED with fresh step bookkeeping; prints the new thread id. Without --from it is the
 * thread as it is now (at its current node: a failed thread's failing node, a completed thread's END);
 * with --from, the thread as it was just before that step ran (variables, conversation, loop state,
 * node results), rebuilt from its step records. `run <workflow> --thread <id>` then runs it.
 * `--set <variable>=<json>` and `--input` edit the copy before it runs (engine/thread/copy-edits.ts):
 * checked against the workflow its source ran, recorded on the copy; a refused edit writes nothing.
 */
import type { Command } from 'commander';
import { type ErrorCode, StepthreadError } from '../../engine/errors.ts';
import type { CopyEdit } from '../../engine/thread/copy-edits.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { visible } from '../format.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  codedOf,
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  printErrors,
  STACK_OPTION_HELP,
  withStores,
} from '../local-session.ts';
import { parseInput, reportInputRefused } from './run.ts';

export interface CopyOptions extends DataDirOption {
  from?: string;
  /** `--set <variable>=<json>`, in the order given. */
  set?: string[];
  input?: string;
}

/** Refusals of an edit at copy time: the edit cannot be made, so a usage error (exit 2). */
const EDIT_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'INVALID_COPY_EDIT',
  'UNKNOWN_VARIABLE_REFERENCE',
  'INVALID_VARIABLE',
  'INPUT_INVALID',
]);

export async function runCopy(threadId: string, options: CopyOptions, io: CliIo): Promise<number> {
  const edits: CopyEdit[] = [];
  for (const raw of options.set ?? []) {
    const edit = parseSetEdit(raw);
    if (edit instanceof StepthreadError) {
      io.stderr(`stepthread: ${edit.code}: ${visible(edit.message)}\n`);
      return EXIT.usage;
    }
    edits.push(edit);
  }
  if (options.input !== undefined) {
    const input = await parseInput(options.input, io);
    if (!input.ok) return reportInputRefused(input, io);
    edits.push({ kind: 'input', value: input.value });
  }
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot copy thread ${threadId}` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const copy = await runtime
        .copyThread(threadId, { ...copyPointOf(options.from), ...(edits.length > 0 ? { edits } : {}) })
        .catch((error: unknown) => {
          if (error instanceof StepthreadError && EDIT_REFUSALS.has(error.code)) return error;
          throw error;
        });
      if (copy instanceof StepthreadError) {
        printErrors(io, `cannot copy thread ${threadId}: an edit is refused`, [codedOf(copy)]);
        return EXIT.usage;
      }
      io.stdout(`${copy.id}\n`);
      if (copy.metadata.forkPathId !== undefined) {
        io.stderr(
          `note: ${threadId} is a fork branch's thread; its copy is for inspecting and comparing, and cannot run on its own (its nodes run inside their FORK)\n`,
        );
      }
      return EXIT.ok;
    },
  );
}

/** `--set name=<json>`: the name up to the first `=`, then a JSON value (a string is quoted: name='"text"'). */
export function parseSetEdit(raw: string): CopyEdit | StepthreadError {
  const equals = raw.indexOf('=');
  const name = equals < 0 ? '' : raw.slice(0, equals).trim();
  if (name === '') {
    return new StepthreadError(
      'INVALID_COPY_EDIT',
      `--set ${raw}: give <variable>=<json>, such as --set approved=true or --set 'topic="refunds"'`,
    );
  }
  const text = raw.slice(equals + 1);
  try {
    return { kind: 'variable', name, value: JSON.parse(text) as unknown };
  } catch (error) {
    return new StepthreadError(
      'INVALID_COPY_EDIT',
      `--set ${name}: the value is not JSON (${(error as Error).message}); quote a string as JSON: --set '${name}="text"'`,
    );
  }
}

/** `--from 7` is a step number; anything else names a node (node ids may not be all digits). */
function copyPointOf(from: string | undefined): { fromNodeId?: string; fromStep?: number } {
  if (from === undefined) return {};
  return /^\d+$/.test(from) ? { fromStep: Number(from) } : { fromNodeId: from };
}

export function registerCopy(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('copy')
    .description('copy a thread into a new runnable one (status CREATED); prints the new thread id')
    .argument('<threadId>', 'the thread to copy')
    .option(
      '--from <nodeId|step>',
      "time travel: the thread as it was before that step (or that node's latest run), ready to run it again (default: the source thread's current state)",
    )
    .option(
      '--set <variable=json>',
      'set a thread or global variable of the copy before it runs (repeatable); the value is JSON, checked against the declared type',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--input <json>', "replace the copy's input: a JSON object, or @file to read it from a file")
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (threadId: string, options: CopyOptions) => {
      setExit(await runCopy(threadId, options, io));
    });
}
