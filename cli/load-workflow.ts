/** Reads a workflow file (.json, .yaml, .yml; other names are sniffed) into plain data. */
import { readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { CodedError } from '../engine/errors.ts';
import { closestKey } from '../engine/model/unknown-keys.ts';
import { type CliIo, withoutByteOrderMark } from './io.ts';
import { jsonErrorPosition } from './json-error-position.ts';
import { parseYamlWorkflow } from './yaml-workflow.ts';

export type LoadResult =
  | { kind: 'loaded'; data: unknown }
  /** The file could not be read at all (missing, a directory, no permission): a usage problem. */
  | { kind: 'unreadable'; error: CodedError & { code: 'WORKFLOW_FILE_UNREADABLE' } }
  /** The file was read but is not valid JSON/YAML: an invalid workflow. */
  | { kind: 'unparsable'; error: CodedError };

export async function loadWorkflowFile(path: string, io: Pick<CliIo, 'readFile'>): Promise<LoadResult> {
  let text: string;
  try {
    text = await io.readFile(path);
  } catch (error) {
    const why = await whyUnreadable(path, error as NodeJS.ErrnoException);
    return {
      kind: 'unreadable',
      error: { code: 'WORKFLOW_FILE_UNREADABLE', message: `cannot read ${path}: ${why}` },
    };
  }
  return parseWorkflowText(text, path);
}

const WORKFLOW_FILE = /\.(json|ya?ml)$/i;

/**
 * Why a workflow file could not be read, with what to give instead where the folder shows it: the
 * file most likely meant for a misspelt or extensionless name, the workflow files of a folder.
 */
async function whyUnreadable(path: string, error: NodeJS.ErrnoException): Promise<string> {
  if (error.code === 'ENOENT') {
    const names = await workflowFilesIn(dirname(path));
    const name = basename(path);
    const meant =
      names.find((candidate) => candidate.replace(WORKFLOW_FILE, '') === name) ?? closestKey(name, names);
    return `there is no such file${meant === undefined ? '' : `; did you mean ${join(dirname(path), meant)}?`}`;
  }
  if (error.code === 'EISDIR') {
    const names = await workflowFilesIn(path);
    const some = names.length > 4 ? [...names.slice(0, 4), '…'] : names;
    return `it is a folder: give one workflow file (.json, .yaml or .yml)${some.length > 0 ? ` such as ${join(path, names[0]!)} (it holds ${some.join(', ')})` : ''}; stepthread dev serves a folder`;
  }
  if (error.code === 'EACCES' || error.code === 'EPERM') return 'permission denied: make it readable';
  return error.message;
}

/** The .json, .yaml and .yml files of a folder, sorted; none when it cannot be listed. */
async function workflowFilesIn(folder: string): Promise<string[]> {
  try {
    const entries = await readdir(folder, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile() && WORKFLOW_FILE.test(entry.name))
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}

export function parseWorkflowText(source: string, fileName: string): LoadResult {
  const text = withoutByteOrderMark(source);
  const yaml = /\.ya?ml$/i.test(fileName) || (!/\.json$/i.test(fileName) && !/^\s*[{[]/.test(text));
  if (yaml) {
    const parsed = parseYamlWorkflow(text, fileName);
    return parsed.ok ? { kind: 'loaded', data: parsed.data } : { kind: 'unparsable', error: parsed.error };
  }
  try {
    return { kind: 'loaded', data: JSON.parse(text) };
  } catch (error) {
    const { line, column } = jsonErrorPosition(text);
    return {
      kind: 'unparsable',
      error: {
        code: 'WORKFLOW_PARSE_ERROR',
        message: `${fileName} is not valid JSON at line ${line}, column ${column}: ${jsonProblem((error as Error).message)}${readsAsYaml(text, fileName) ? '; it reads as YAML: name it .yaml (the extension says how a file is read)' : ''}`,
      },
    };
  }
}

/** Whether a file named .json that is not JSON is a YAML mapping (a workflow written in YAML). */
function readsAsYaml(text: string, fileName: string): boolean {
  if (/^\s*[{[]/.test(text)) return false;
  const parsed = parseYamlWorkflow(text, fileName);
  return parsed.ok && parsed.data !== null && typeof parsed.data === 'object' && !Array.isArray(parsed.data);
}

/**
 * What V8 says is wrong, without its position (given for some mistakes only, in UTF-16 units) or its
 * quote of the text: the line and column come from jsonErrorPosition.
 */
function jsonProblem(message: string): string {
  return message
    .replace(/ in JSON at position \d+(?: \(line \d+ column \d+\))?$/, '')
    .replace(/^Unexpected token '(.)', .* is not valid JSON$/su, (_, token: string) =>
      // A line break or tab as the token would print as one: written as its escape instead.
      /\s/.test(token) ? `Unexpected ${JSON.stringify(token)}` : `Unexpected token '${token}'`,
    );
}
