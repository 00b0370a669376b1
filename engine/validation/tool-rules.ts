/**
 * Rules about tool declarations: the handler names a target, the parameters are an object schema in
 * structure (functions/tools compiles them fully; the engine carries no JSON Schema library), and
 * http templates parse, read only `args` and `secrets`, and name each secret they use.
 */
import type { CodedError } from '../errors.ts';
import type { ExprNode } from '../expression/ast.ts';
import { parseExpression, validateTemplate } from '../expression/index.ts';
import { hasTemplate, splitTemplate } from '../expression/template-syntax.ts';
import { isRecord, type Path } from '../model/paths.ts';
import type { ToolDefinition } from '../model/schema.ts';
import { parseToolHandler } from '../model/tool-handler.ts';
import { codedError } from './report.ts';

/** Names an http tool's url and header templates may read. */
export const HTTP_TEMPLATE_SCOPE = ['args', 'secrets'] as const;

export interface ToolEntry {
  name: string;
  path: Path;
  definition: ToolDefinition;
}

export function checkTools(entries: readonly ToolEntry[]): CodedError[] {
  return entries.flatMap(checkTool);
}

function checkTool({ name, path, definition }: ToolEntry): CodedError[] {
  const errors: CodedError[] = [];
  const add = (message: string, at: Path): void => {
    errors.push(codedError('INVALID_TOOL_DEFINITION', `tool "${name}": ${message}`, at));
  };
  if (definition.parameters !== undefined) {
    for (const problem of parameterProblems(definition.parameters)) add(problem, [...path, 'parameters']);
  }
  errors.push(...approvalProblems(name, definition.requiresApproval, [...path, 'requiresApproval']));
  const parsed = parseToolHandler(definition.handler);
  if (!parsed.ok) {
    add(parsed.message, [...path, 'handler']);
    return errors;
  }
  const { handler } = parsed;
  // The model reads it; only an MCP server describes its tools itself (mcp-rules.ts checks those).
  if (definition.description === undefined && handler.kind !== 'mcp')
    add('needs a "description" (only mcp tools may take theirs from the server)', [...path, 'description']);
  if (handler.kind !== 'http') return errors;
  const templates: Array<[string, Path]> = [[handler.url, [...path, 'handler', 'url']]];
  for (const [header, value] of Object.entries(handler.headers ?? {})) {
    templates.push([value, [...path, 'handler', 'headers', header]]);
    // The Host header picks the site at the address: like the url's host, it is the declaration's.
    if (header.toLowerCase() === 'host' && hasTemplate(value))
      add('the Host header must be literal text', [...path, 'handler', 'headers', header]);
  }
  for (const [template, at] of templates) {
    const syntax = validateTemplate(template, '');
    if (syntax.length > 0) {
      for (const problem of syntax) add(problem.message, at);
      continue;
    }
    const references = templateReferences(template);
    for (const problem of references.problems) add(problem, at);
  }
  const origin = httpUrlOrigin(handler.url);
  if (!origin.ok) add(origin.message, [...path, 'handler', 'url']);
  return errors;
}

/** Names a `requiresApproval` expression may read: the call's arguments. */
export const APPROVAL_SCOPE = ['args'] as const;

/**
 * A `requiresApproval` expression parses and reads only `args` (it is evaluated on each call the
 * model asks for, with nothing else in scope).
 */
function approvalProblems(name: string, rule: ToolDefinition['requiresApproval'], at: Path): CodedError[] {
  if (typeof rule !== 'string') return [];
  let expression: ReturnType<typeof parseExpression>;
  try {
    expression = parseExpression(rule);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return [codedError('INVALID_EXPRESSION', `tool "${name}": requiresApproval: ${why}`, at)];
  }
  return expression.identifiers
    .filter((identifier) => !(APPROVAL_SCOPE as readonly string[]).includes(identifier))
    .map((identifier) =>
      codedError(
        'INVALID_TOOL_DEFINITION',
        `tool "${name}": requiresApproval reads "${identifier}"; only args (the call's arguments) is available`,
        at,
      ),
    );
}

export type HttpUrlOrigin =
  | {
      ok: true;
      /** Scheme, host and port as written, e.g. `https://crm.example:8443`. */
      origin: string;
      /** The template after the origin: path, query and fragment. */
      rest: string;
    }
  | { ok: false; message: string };

/** Literal `http(s)://host[:port]`, ended by the path, query, fragment or the end of the url. */
const LITERAL_ORIGIN = /^(https?):\/\/([^/?#\\@{}\s]+)(?=[/?#]|$)/i;

/**
 * The origin an http tool's url fixes: scheme, host and port must be literal text, so no argument
 * or secret can choose where the request goes; templates may only fill the path, query and fragment.
 */
export function httpUrlOrigin(template: string): HttpUrlOrigin {
  const match = LITERAL_ORIGIN.exec(template);
  if (!match) {
    const why = /^https?:\/\/[^/?#]*@/i.test(template)
      ? 'must not carry credentials (send them in a header)'
      : /^https?:\/\//i.test(template)
        ? 'must give its host and port as literal text, with templates only after them (in the path or query)'
        : 'must start with http:// or https:// and a literal host';
    return { ok: false, message: `url "${template}" ${why}` };
  }
  const [whole, scheme, authority] = match;
  return { ok: true, origin: `${scheme!.toLowerCase()}://${authority!}`, rest: template.slice(whole.length) };
}

/**
 * Structural checks only: LLM APIs take an object schema for a tool's arguments, and a malformed
 * `properties`/`required` would otherwise surface only when the tool is first called.
 */
function parameterProblems(parameters: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (parameters.type !== undefined && parameters.type !== 'object')
    problems.push(
      `parameters must describe an object (type "object"), not ${JSON.stringify(parameters.type)}`,
    );
  if (parameters.properties !== undefined) {
    if (!isRecord(parameters.properties)) problems.push('parameters.properties must be an object');
    else {
      for (const [key, schema] of Object.entries(parameters.properties)) {
        if (!isRecord(schema) && typeof schema !== 'boolean')
          problems.push(`parameters.properties.${key} must be a schema (an object or a boolean)`);
      }
    }
  }
  const { required } = parameters;
  if (required !== undefined && !(Array.isArray(required) && required.every((k) => typeof k === 'string')))
    problems.push('parameters.required must be a list of property names');
  return problems;
}

export interface TemplateReferences {
  /** Secrets named in the template (`secrets.NAME` or `secrets["NAME"]`), each once, in order. */
  secrets: string[];
  /** Why the template may not be used: a computed or whole `secrets`, or a name outside the scope. */
  problems: string[];
}

/**
 * What an http template reads. Secrets must be named literally so only those are fetched: a key
 * computed from `args` would let a model pick any secret and echo it to a server.
 * Throws INVALID_EXPRESSION for a malformed template (validateTemplate reports it first).
 */
export function templateReferences(template: string): TemplateReferences {
  const secrets = new Set<string>();
  const problems = new Set<string>();
  if (!hasTemplate(template)) return { secrets: [], problems: [] };
  for (const segment of splitTemplate(template)) {
    if (segment.kind !== 'expression') continue;
    const expression = parseExpression(segment.source);
    for (const name of expression.identifiers) {
      if (!(HTTP_TEMPLATE_SCOPE as readonly string[]).includes(name))
        problems.add(`the template reads "${name}"; only ${HTTP_TEMPLATE_SCOPE.join(' and ')} are available`);
    }
    collectSecrets(expression.root, secrets, problems);
  }
  return { secrets: [...secrets], problems: [...problems] };
}

function isSecrets(node: ExprNode): boolean {
  return node.kind === 'identifier' && node.name === 'secrets';
}

function collectSecrets(node: ExprNode, secrets: Set<string>, problems: Set<string>): void {
  switch (node.kind) {
    case 'identifier':
      if (isSecrets(node))
        problems.add('name one secret, as in {{secrets.API_KEY}}, not the whole "secrets"');
      return;
    case 'member':
      if (isSecrets(node.object)) secrets.add(node.key);
      else collectSecrets(node.object, secrets, problems);
      return;
    case 'index':
      if (isSecrets(node.object)) problems.add('a secret must be named literally, not computed');
      else collectSecrets(node.object, secrets, problems);
      collectSecrets(node.key, secrets, problems);
      return;
    case 'array':
      for (const element of node.elements) collectSecrets(element, secrets, problems);
      return;
    case 'unary':
      collectSecrets(node.argument, secrets, problems);
      return;
    case 'binary':
    case 'logical':
      collectSecrets(node.left, secrets, problems);
      collectSecrets(node.right, secrets, problems);
      return;
    case 'conditional':
      collectSecrets(node.test, secrets, problems);
      collectSecrets(node.consequent, secrets, problems);
      collectSecrets(node.alternate, secrets, problems);
      return;
    case 'call':
      for (const argument of node.args) collectSecrets(argument, secrets, problems);
      return;
    case 'literal':
      return;
  }
}
