/**
 * The edit flags `copy` and `rerun` share: `--set <variable>=<json>`, `--input <json>|@file`,
 * `--profile <id>=<json>` and `--node-config <nodeId>.<key>=<json>`, parsed into the edits
 * engine/thread/copy-edits.ts and copy-workflow-edits.ts check. A flag that is not of its form, or
 * whose value is not JSON, is INVALID_COPY_EDIT (exit 2).
 */
import type { Command } from 'commander';
import { type ErrorCode, StepthreadError } from '../engine/errors.ts';
import type { CopyEdit } from '../engine/thread/copy-edits.ts';
import { CopyEditRefused } from '../engine/thread/copy-workflow-edits.ts';
import { parseInput, reportInputRefused } from './commands/run.ts';
import { visible } from './format.ts';
import { inputGivenOnce } from './given-once.ts';
import { type CliIo, EXIT } from './io.ts';
import { printErrors } from './local-session.ts';

export interface CopyEditOptions {
  /** `--set <variable>=<json>`, in the order given. */
  set?: string[];
  input?: string;
  /** `--profile <id>=<json>`, in the order given. */
  profile?: string[];
  /** `--node-config <nodeId>.<key>=<json>`, in the order given. */
  nodeConfig?: string[];
}

/** Refusals of an edit at copy time: the edit cannot be made, so a usage error (exit 2). */
const EDIT_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'INVALID_COPY_EDIT',
  'UNKNOWN_VARIABLE_REFERENCE',
  'INVALID_VARIABLE',
  'INPUT_INVALID',
]);

/** Whether `error` is an edit refused at copy time (rather than a failure to copy at all). */
export function isRefusedEdit(error: unknown): error is StepthreadError {
  return (
    error instanceof CopyEditRefused || (error instanceof StepthreadError && EDIT_REFUSALS.has(error.code))
  );
}

/** Prints a refused edit's problems under `headline`; the exit code (2). */
export function reportRefusedEdit(io: CliIo, headline: string, error: StepthreadError): number {
  printErrors(io, headline, error instanceof CopyEditRefused ? error.errors : [error.toJSON()]);
  return EXIT.usage;
}

const repeatable = (value: string, previous: string[] = []) => [...previous, value];

/** Registers the four edit flags on a command. */
export function addCopyEditOptions(command: Command): Command {
  return command
    .option(
      '--set <variable=json>',
      'set a thread or global variable of the copy before it runs (repeatable); the value is JSON, checked against the declared type',
      repeatable,
    )
    .option(
      '--input <json>',
      "replace the copy's input: a JSON object, or @file to read it from a file",
      inputGivenOnce('copy'),
    )
    .option(
      '--profile <id=json>',
      'replace a profile of the workflow the copy runs with (repeatable): the whole profile, as JSON',
      repeatable,
    )
    .option(
      '--node-config <nodeId.key=json>',
      "set one config key of a node of the workflow the copy runs with (repeatable); the value is JSON, checked as the workflow file's is",
      repeatable,
    );
}

/** The edits the flags ask for, in order (--set, --input, --profile, --node-config); else the exit code. */
export async function copyEditsOfOptions(
  options: CopyEditOptions,
  io: CliIo,
): Promise<{ ok: true; edits: CopyEdit[] } | { ok: false; exitCode: number }> {
  const edits: CopyEdit[] = [];
  const parsed = [
    ...(options.set ?? []).map(parseSetEdit),
    ...(options.profile ?? []).map(parseProfileEdit),
    ...(options.nodeConfig ?? []).map(parseNodeConfigEdit),
  ];
  for (const edit of parsed) {
    if (edit instanceof StepthreadError) {
      io.stderr(`stepthread: ${edit.code}: ${visible(edit.message)}\n`);
      return { ok: false, exitCode: EXIT.usage };
    }
  }
  edits.push(...(parsed as CopyEdit[]).filter((edit) => edit.kind === 'variable'));
  if (options.input !== undefined) {
    const input = await parseInput(options.input, io);
    if (!input.ok) return { ok: false, exitCode: reportInputRefused(input, io) };
    edits.push({ kind: 'input', value: input.value });
  }
  edits.push(...(parsed as CopyEdit[]).filter((edit) => edit.kind !== 'variable'));
  return { ok: true, edits };
}

/** `<name>=<json>`: the name up to the first `=`, then a JSON value. */
function nameAndValue(
  raw: string,
  flag: string,
  form: string,
  example: string,
): { name: string; value: unknown } | StepthreadError {
  const equals = raw.indexOf('=');
  const name = equals < 0 ? '' : raw.slice(0, equals).trim();
  if (name === '') {
    return new StepthreadError('INVALID_COPY_EDIT', `${flag} ${raw}: give ${form}, such as ${example}`);
  }
  const text = raw.slice(equals + 1);
  try {
    return { name, value: JSON.parse(text) as unknown };
  } catch (error) {
    return new StepthreadError(
      'INVALID_COPY_EDIT',
      `${flag} ${name}: the value is not JSON (${(error as Error).message}); quote a string as JSON: ${flag} '${name}="text"'`,
    );
  }
}

/** `--set name=<json>` (a string is quoted: name='"text"'). */
export function parseSetEdit(raw: string): CopyEdit | StepthreadError {
  const parsed = nameAndValue(
    raw,
    '--set',
    '<variable>=<json>',
    `--set approved=true or --set 'topic="refunds"'`,
  );
  return parsed instanceof StepthreadError ? parsed : { kind: 'variable', ...parsed };
}

/** `--profile id=<json>`: the whole profile. */
export function parseProfileEdit(raw: string): CopyEdit | StepthreadError {
  const parsed = nameAndValue(
    raw,
    '--profile',
    '<id>=<json>',
    `--profile 'default={"provider": "openai", "model": "gpt-4o-mini"}'`,
  );
  return parsed instanceof StepthreadError
    ? parsed
    : { kind: 'profile', profileId: parsed.name, value: parsed.value };
}

/** `--node-config node.key=<json>`: the key after the last dot (a node id may hold dots, a key never). */
export function parseNodeConfigEdit(raw: string): CopyEdit | StepthreadError {
  const parsed = nameAndValue(
    raw,
    '--node-config',
    '<nodeId>.<key>=<json>',
    `--node-config 'reply.prompt="Answer in French"'`,
  );
  if (parsed instanceof StepthreadError) return parsed;
  const dot = parsed.name.lastIndexOf('.');
  const nodeId = dot < 0 ? '' : parsed.name.slice(0, dot);
  const key = dot < 0 ? '' : parsed.name.slice(dot + 1);
  if (nodeId === '' || key === '') {
    return new StepthreadError(
      'INVALID_COPY_EDIT',
      `--node-config ${parsed.name}: name the node and its config key as <nodeId>.<key>, such as --node-config 'reply.prompt="Answer in French"'`,
    );
  }
  return { kind: 'nodeConfig', nodeId, key, value: parsed.value };
}
