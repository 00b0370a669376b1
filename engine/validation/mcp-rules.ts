/**
 * Rules about `mcp` tool declarations: a server is reached one way (`url` or `command`), options
 * belong to that way, templates read only `secrets` (a connection is made before any call, so there
 * are no `args`), the url's origin is literal, and a server entry (no `tool`) leaves its tools'
 * descriptions and parameters to the server. A stdio server cannot be deployed: `validate` warns,
 * a deploy refuses (stdioServerProblems).
 */
import type { CodedError } from '../errors.ts';
import { parseExpression, validateTemplate } from '../expression/index.ts';
import { hasTemplate, splitTemplate } from '../expression/template-syntax.ts';
import type { Path } from '../model/paths.ts';
import type { McpToolHandler, ToolDefinition, Workflow } from '../model/schema.ts';
import { codedError } from './report.ts';
import { httpUrlOrigin, type ToolEntry, templateReferences } from './tool-rules.ts';

/** INVALID_TOOL_DEFINITION for each problem of the entries' mcp declarations. */
export function checkMcpTools(entries: readonly ToolEntry[]): CodedError[] {
  const errors: CodedError[] = [];
  for (const { name, path, definition } of entries) {
    const { handler } = definition;
    if (typeof handler === 'string' || handler.kind !== 'mcp') continue;
    for (const [message, at] of mcpHandlerProblems(definition, handler, path))
      errors.push(codedError('INVALID_TOOL_DEFINITION', `tool "${name}": ${message}`, at));
  }
  return errors;
}

/** Problems of one mcp declaration, as messages with their paths. */
function mcpHandlerProblems(
  definition: ToolDefinition,
  handler: McpToolHandler,
  path: Path,
): Array<[string, Path]> {
  const problems: Array<[string, Path]> = [];
  const at = (key: string): Path => [...path, 'handler', key];
  const add = (message: string, where: Path) => problems.push([message, where]);
  if ((handler.url === undefined) === (handler.command === undefined)) {
    add(
      'an mcp handler needs "url" (a Streamable HTTP server) or "command" (a local stdio server), exactly one',
      [...path, 'handler'],
    );
  }
  if (handler.url === undefined) {
    for (const key of ['headers', 'allowPrivateNetwork'] as const)
      if (handler[key] !== undefined) add(`"${key}" applies to a "url" server only`, at(key));
  }
  if (handler.command === undefined && handler.env !== undefined)
    add('"env" applies to a "command" (stdio) server only', at('env'));
  if (handler.tool !== undefined && handler.tools !== undefined)
    add(
      'give "tool" (this entry is one tool) or "tools" (the server\'s tools it offers), not both',
      at('tools'),
    );
  if (handler.tool === undefined) {
    for (const key of ['description', 'parameters'] as const) {
      if (definition[key] !== undefined) {
        add(
          `a server entry (no "tool") offers the server's tools with their own ${key}s; leave "${key}" out, or name one "tool"`,
          [...path, key],
        );
      }
    }
  }
  const templates: Array<[string, Path]> = [];
  if (handler.url !== undefined) {
    templates.push([handler.url, at('url')]);
    const origin = httpUrlOrigin(handler.url);
    if (!origin.ok) add(origin.message, at('url'));
  }
  for (const [name, value] of Object.entries(handler.headers ?? {})) {
    templates.push([value, [...at('headers'), name]]);
    if (name.toLowerCase() === 'host' && hasTemplate(value))
      add('the Host header must be literal text', [...at('headers'), name]);
  }
  for (const [name, value] of Object.entries(handler.env ?? {}))
    templates.push([value, [...at('env'), name]]);
  for (const [template, where] of templates) {
    for (const problem of templateProblems(template)) add(problem, where);
  }
  return problems;
}

/** A template of a connection: valid syntax, secrets named literally, nothing but `secrets` read. */
function templateProblems(template: string): string[] {
  const syntax = validateTemplate(template, '');
  if (syntax.length > 0) return syntax.map((problem) => problem.message);
  const problems = new Set(templateReferences(template).problems);
  for (const segment of splitTemplate(template)) {
    if (segment.kind !== 'expression') continue;
    if (parseExpression(segment.source).identifiers.includes('args'))
      problems.add(
        "an MCP server's url, headers and env are set before any call: they may read secrets, not args",
      );
  }
  return [...problems];
}

/**
 * The stdio servers of a workflow (its subgraphs' included), each as MCP_STDIO_NOT_DEPLOYABLE: they
 * run on this machine (`run`, `dev`), and a deployed Lambda has no such program to start.
 */
export function stdioServerProblems(workflow: Workflow, path: Path = []): CodedError[] {
  const problems: CodedError[] = [];
  for (const [name, definition] of Object.entries(workflow.tools ?? {})) {
    const { handler } = definition;
    if (typeof handler === 'string' || handler.kind !== 'mcp' || handler.command === undefined) continue;
    problems.push(
      codedError(
        'MCP_STDIO_NOT_DEPLOYABLE',
        `tool "${name}": a stdio MCP server ("command") runs only locally (run, dev) and cannot be deployed; give it a "url" to deploy`,
        [...path, 'tools', name, 'handler', 'command'],
      ),
    );
  }
  workflow.nodes.forEach((node, index) => {
    if (node.type === 'SUBGRAPH')
      problems.push(
        ...stdioServerProblems(node.config.workflow, [...path, 'nodes', index, 'config', 'workflow']),
      );
  });
  return problems;
}
