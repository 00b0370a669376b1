/**
 * YAML workflow files as plain data, or the coded error that says why not. Checked before the YAML
 * library builds anything, so no file can overflow its recursive composer or run a type it knows:
 *
 * - nesting deeper than MAX_WORKFLOW_DEPTH is WORKFLOW_TOO_DEEP, as for JSON, found on the parser's
 *   token tree (the parser keeps its own stack; the composer after it recurses per level);
 * - a tag other than the JSON-compatible ones of YAML's core schema (`!!str`, `!!int`, `!!float`,
 *   `!!bool`, `!!null`, `!!map`, `!!seq`) is YAML_TAG_NOT_ALLOWED, with the tag and its line: a
 *   workflow is data, and `!!js/function`, `!!binary`, `!!set`, `!!timestamp` or a custom `!tag`
 *   would otherwise reach validation as a string, a Buffer, a Set or a Date.
 */
import { type CST, type Document, Parser, parseDocument, type YAMLError } from 'yaml';
import type { CodedError } from '../engine/errors.ts';
import { MAX_WORKFLOW_DEPTH } from '../engine/validation/limits.ts';

export type YamlResult = { ok: true; data: unknown } | { ok: false; error: CodedError };

export function parseYamlWorkflow(text: string, fileName: string): YamlResult {
  if (tokenDepth(new Parser().parse(text)) > MAX_WORKFLOW_DEPTH) {
    return {
      ok: false,
      error: {
        code: 'WORKFLOW_TOO_DEEP',
        message: `${fileName} nests YAML mappings and sequences more than ${MAX_WORKFLOW_DEPTH} levels deep`,
      },
    };
  }
  const document = parseDocument(text, {
    prettyErrors: true,
    // Duplicate keys would otherwise be overwritten silently.
    uniqueKeys: true,
    // The core schema, whatever a `%YAML 1.1` directive asks, and none of its optional types.
    schema: 'core',
    version: '1.2',
    resolveKnownTags: false,
    // Warnings are returned below, not printed on stderr ('silent' would also drop the error that a
    // second document, which would be ignored, is there).
    logLevel: 'error',
  });
  const problem = documentProblem(document, fileName);
  if (problem) return { ok: false, error: problem };
  // Only comments or nothing: say so, as for an empty JSON file, rather than "expected object, received null".
  if (document.contents === null)
    return { ok: false, error: parseError(fileName, 'the file holds no document') };
  try {
    return { ok: true, data: document.toJS() };
  } catch (error) {
    // Such as an alias expanding past the library's limit (a "billion laughs" file).
    return { ok: false, error: parseError(fileName, (error as Error).message) };
  }
}

function documentProblem(document: Document, fileName: string): CodedError | undefined {
  const [error] = document.errors;
  if (error?.code === 'MULTIPLE_DOCS') {
    return {
      code: 'WORKFLOW_PARSE_ERROR',
      message: `${fileName} is not valid YAML: it holds more than one document (a line "---" starts the second, at line ${error.linePos?.[0].line ?? '?'}); a workflow file is one document`,
    };
  }
  if (error) return parseError(fileName, error.message);
  const tag = document.warnings.find((warning) => warning.code === 'TAG_RESOLVE_FAILED');
  if (tag) return tagError(tag, fileName);
  const [warning] = document.warnings;
  return warning ? parseError(fileName, warning.message) : undefined;
}

function parseError(fileName: string, message: string): CodedError {
  // The library appends a code excerpt on later lines; the first line already has line and column.
  const reason = message.split('\n')[0]!.replace(/:$/, '');
  return { code: 'WORKFLOW_PARSE_ERROR', message: `${fileName} is not valid YAML: ${reason}` };
}

function tagError(warning: YAMLError, fileName: string): CodedError {
  const full = /Unresolved tag: (\S+)/.exec(warning.message)?.[1] ?? 'unknown';
  // Written as the file most likely wrote it: `!!name` for YAML's own tags.
  const tag = full.replace(/^tag:yaml\.org,2002:/, '!!');
  const where = warning.linePos
    ? ` at line ${warning.linePos[0].line}, column ${warning.linePos[0].col}`
    : '';
  return {
    code: 'YAML_TAG_NOT_ALLOWED',
    message: `${fileName}${where}: the YAML tag ${tag} is not allowed; a workflow file holds plain data (strings, numbers, booleans, null, mappings, sequences), so write the value without a tag`,
  };
}

/** How deeply collections nest in the parser's tokens, walked with an explicit stack. */
function tokenDepth(tokens: Iterable<CST.Token>): number {
  let deepest = 0;
  const pending: { token: CST.Token; depth: number }[] = [];
  for (const token of tokens) pending.push({ token, depth: 0 });
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { token } = next;
    const collection =
      token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection';
    const depth = next.depth + (collection ? 1 : 0);
    deepest = Math.max(deepest, depth);
    // Deep enough to refuse: the rest need not be walked.
    if (deepest > MAX_WORKFLOW_DEPTH) return deepest;
    if (token.type === 'document' && token.value) pending.push({ token: token.value, depth });
    if (collection) {
      for (const item of token.items) {
        if (item.key) pending.push({ token: item.key, depth });
        if (item.value) pending.push({ token: item.value, depth });
      }
    }
  }
  return deepest;
}
