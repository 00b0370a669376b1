/** Reads a workflow file (.json, .yaml, .yml; other names are sniffed) into plain data. */
import { parse as parseYaml } from 'yaml';
import type { CodedError } from '../engine/errors.ts';
import type { CliIo } from './io.ts';

export type LoadResult =
  | { kind: 'loaded'; data: unknown }
  /** The file could not be read at all (missing, a directory, no permission): a usage problem. */
  | { kind: 'unreadable'; message: string }
  /** The file was read but is not valid JSON/YAML: an invalid workflow. */
  | { kind: 'unparsable'; error: CodedError };

export async function loadWorkflowFile(path: string, io: Pick<CliIo, 'readFile'>): Promise<LoadResult> {
  let text: string;
  try {
    text = await io.readFile(path);
  } catch (error) {
    return { kind: 'unreadable', message: `cannot read ${path}: ${(error as Error).message}` };
  }
  return parseWorkflowText(text, path);
}

export function parseWorkflowText(text: string, fileName: string): LoadResult {
  const yaml = /\.ya?ml$/i.test(fileName) || (!/\.json$/i.test(fileName) && !/^\s*[{[]/.test(text));
  try {
    return { kind: 'loaded', data: yaml ? parseYamlStrict(text) : JSON.parse(text) };
  } catch (error) {
    const format = yaml ? 'YAML' : 'JSON';
    // The YAML library appends a code excerpt on later lines; the first line already has line and column.
    const reason = (error as Error).message.split('\n')[0]!.replace(/:$/, '');
    return {
      kind: 'unparsable',
      error: { code: 'WORKFLOW_PARSE_ERROR', message: `${fileName} is not valid ${format}: ${reason}` },
    };
  }
}

function parseYamlStrict(text: string): unknown {
  // prettyErrors gives line/column; uniqueKeys rejects silently-overwritten duplicate keys.
  return parseYaml(text, { prettyErrors: true, uniqueKeys: true });
}
