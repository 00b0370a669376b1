/**
 * What a node read when it ran, rebuilt from the thread as it was before its step: its templates
 * rendered and its expressions evaluated over that state (the LLM prompt, a TOOL node's arguments, a
 * CODE node's inputs, a question's message, a ROUTE's conditions, END's output), and every name its
 * config reads with the value it had. Rendering is deterministic over the state, so this is what the
 * node saw; the console's node panel shows it. Pure: the caller rebuilds the state and the scope.
 */
import {
  evaluate,
  evaluateCondition,
  parseExpression,
  renderString,
  renderTemplate,
} from './expression/index.ts';
import { hasTemplate, splitTemplate } from './expression/template-syntax.ts';
import type { ExpressionScope } from './scope.ts';

export interface NodeInput {
  /** The node's templates and expressions as they came out, by config field. */
  readonly rendered: Record<string, unknown>;
  /**
   * The names its config reads (variables, `input`, and `nodes.<id>` as such), each with its value
   * before the step; a name the scope did not have is absent.
   */
  readonly reads: Record<string, unknown>;
  /** Fields that did not render (a template reading something that was not there), with why. */
  readonly problems?: Record<string, string>;
}

/** The node as the built graph has it: its type and config. */
export interface NodeToRead {
  readonly type: string;
  readonly config?: unknown;
}

/** Config fields that are code or names, never expressions: not read for the names they mention. */
const NOT_EXPRESSIONS = new Set([
  'code',
  'language',
  'outputVariable',
  'variableName',
  'variableType',
  'toolName',
  'targetNodeId',
  'defaultTargetNodeId',
  'profileId',
  'userInteractionType',
  'tools',
  'loopId',
  'forkPathIds',
  'childNodeIds',
  'forkStrategy',
  'scope',
]);

/** Config fields whose plain strings (no `{{`) are expressions rather than text. */
const EXPRESSION_FIELDS = new Set(['expression', 'condition', 'inputs', 'dataSource', 'forEach']);

export function nodeInputOf(node: NodeToRead, scope: ExpressionScope): NodeInput {
  const config = (node.config ?? {}) as Record<string, unknown>;
  const rendered: Record<string, unknown> = {};
  const problems: Record<string, string> = {};
  const attempt = (field: string, compute: () => unknown) => {
    try {
      rendered[field] = compute();
    } catch (error) {
      problems[field] = error instanceof Error ? error.message : String(error);
    }
  };
  const text = (field: string) => {
    const value = config[field];
    if (typeof value === 'string') attempt(field, () => renderString(value, scope));
  };
  switch (node.type) {
    case 'LLM':
      text('systemPrompt');
      text('prompt');
      break;
    case 'TOOL':
      attempt('arguments', () => renderTemplate(config.arguments ?? {}, scope));
      break;
    case 'CODE':
      if (isRecord(config.inputs)) {
        const inputs = config.inputs;
        attempt('inputs', () =>
          Object.fromEntries(
            Object.entries(inputs).map(([name, source]) => [name, evaluate(String(source), scope)]),
          ),
        );
      }
      break;
    case 'USER_INTERACTION':
      text('showMessage');
      break;
    case 'VARIABLE':
      if (typeof config.expression === 'string') {
        const source = config.expression;
        attempt('expression', () => evaluate(source, scope));
      }
      break;
    case 'ROUTE':
      if (Array.isArray(config.routes)) {
        const routes = config.routes as { condition: string; targetNodeId: string }[];
        attempt('routes', () =>
          routes.map((route) => ({
            targetNodeId: route.targetNodeId,
            condition: route.condition,
            value: evaluateCondition(route.condition, scope),
          })),
        );
      }
      break;
    case 'END':
      if (config.output !== undefined) attempt('output', () => renderTemplate(config.output, scope));
      break;
  }
  const reads: Record<string, unknown> = {};
  for (const name of namesRead(config)) {
    const value = valueRead(name, scope);
    if (value !== undefined) Object.defineProperty(reads, name, { value, enumerable: true });
  }
  return { rendered, reads, ...(Object.keys(problems).length > 0 ? { problems } : {}) };
}

/**
 * The top-level names a config's templates and expressions read, in order of first use; `nodes.<id>`
 * for a node output read by name (the whole `nodes` when read otherwise).
 */
export function namesRead(config: unknown): string[] {
  const names = new Set<string>();
  const visit = (value: unknown, field: string | undefined, asExpression: boolean) => {
    if (field !== undefined && NOT_EXPRESSIONS.has(field)) return;
    if (typeof value === 'string') {
      const sources = hasTemplate(value)
        ? safeSegments(value)
        : asExpression || (field !== undefined && EXPRESSION_FIELDS.has(field))
          ? [value]
          : [];
      for (const source of sources) for (const name of identifiersOf(source)) names.add(name);
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) visit(item, undefined, asExpression);
      return;
    }
    if (isRecord(value)) {
      // A CODE node's `inputs` and a ROUTE's routes hold expressions under names of their own.
      const expressions = asExpression || field === 'inputs';
      for (const [key, item] of Object.entries(value))
        visit(item, expressions ? undefined : key, expressions);
    }
  };
  visit(config, undefined, false);
  return [...names];
}

function safeSegments(template: string): string[] {
  try {
    return splitTemplate(template).flatMap((segment) =>
      segment.kind === 'expression' ? [segment.source] : [],
    );
  } catch {
    return [];
  }
}

/** The identifiers an expression reads; `nodes.<id>` for a node output read by name. */
function identifiersOf(source: string): string[] {
  let parsed: ReturnType<typeof parseExpression>;
  try {
    parsed = parseExpression(source);
  } catch {
    return [];
  }
  const names: string[] = [];
  for (const name of parsed.identifiers) {
    if (name !== 'nodes') {
      names.push(name);
      continue;
    }
    // `nodes.x` or `nodes["x"]` reads one output; anything else reads them all.
    const byName = [...source.matchAll(/\bnodes(?:\.([A-Za-z_$][\w$-]*)|\[\s*["']([^"']+)["']\s*\])/g)];
    if (byName.length === 0) names.push('nodes');
    for (const match of byName) names.push(`nodes.${match[1] ?? match[2]}`);
  }
  return names;
}

function valueRead(name: string, scope: ExpressionScope): unknown {
  if (name.startsWith('nodes.')) {
    const nodes = scope.nodes as Record<string, unknown> | undefined;
    const id = name.slice('nodes.'.length);
    return nodes !== undefined && Object.hasOwn(nodes, id) ? nodes[id] : undefined;
  }
  return Object.hasOwn(scope, name) ? scope[name] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
