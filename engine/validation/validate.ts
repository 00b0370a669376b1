/**
 * Workflow validation: every problem in a workflow file, each with its code, path and node, before
 * anything runs. Never throws for bad input.
 */
import type { CodedError } from '../errors.ts';
import {
  type Expression,
  nodeReferences,
  parseExpression,
  type StaticType,
  StaticTypeError,
  templateExpressionSources as splitTemplateSources,
  staticTypeOf,
} from '../expression/index.ts';
import { parseWorkflow } from '../model/parse.ts';
import { isRecord, type Path } from '../model/paths.ts';
import {
  DEFAULT_MAX_STEPS,
  type VariableDeclaration,
  type VariableType,
  type Workflow,
  type WorkflowNode,
} from '../model/schema.ts';
import { closestKey } from '../model/unknown-keys.ts';
import { type CodeSource, codeSourcesOf } from './code-sources.ts';
import { checkGraph, type StepLimit } from './graph-rules.ts';
import { checkIds } from './id-rules.ts';
import { checkFileLimits } from './limits.ts';
import { checkMcpTools } from './mcp-rules.ts';
import { checkNode, type NodeScope, unparsedNodeExpressionErrors } from './node-rules.ts';
import { codedError } from './report.ts';
import { checkTools, HTTP_TEMPLATE_SCOPE } from './tool-rules.ts';
import { declaredVariableTypes } from './variable-types.ts';
import { viewWorkflow, type WorkflowView } from './view.ts';

export interface ValidationResult {
  /** True when there are no errors. */
  valid: boolean;
  errors: CodedError[];
  /** The parsed workflow (maxSteps resolved) whenever the structural parse succeeded, even with other errors. */
  workflow?: Workflow;
  /** The JavaScript the workflow gives the CODE sandbox, for the host to check that it compiles. */
  codeSources: CodeSource[];
}

export function validateWorkflow(data: unknown): ValidationResult {
  const tooDeep = checkFileLimits(data);
  if (tooDeep.length > 0) return { valid: false, errors: tooDeep, codeSources: [] };
  const parsed = parseWorkflow(data);
  const errors = [...parsed.errors];
  let codeSources: CodeSource[] = [];
  if (isRecord(data)) {
    const root: NodeScope = { profiles: new Set(), tools: new Set(), variables: [] };
    const view = viewWorkflow(data, []);
    errors.push(
      ...checkLevel(view, root, stepLimitOf(data)),
      ...checkIds(view),
      ...checkInlinedIds(view),
      ...checkNodeReferences(view),
      ...checkVariableReferences(view),
    );
    codeSources = codeSourcesOf(view);
  }
  const workflow = parsed.workflow
    ? { ...parsed.workflow, maxSteps: parsed.workflow.maxSteps ?? DEFAULT_MAX_STEPS }
    : undefined;
  return { valid: errors.length === 0, errors, codeSources, ...(workflow ? { workflow } : {}) };
}

/**
 * `{{nodes.<id>}}` naming no node (a typo such as `nodes.mrege` would read as nothing at run time).
 * An id may also name a node a SUBGRAPH inlines (`<subgraph>.<node>`); inside a child workflow,
 * its own nodes' ids and those its callers' levels know (engine/scope.ts: a child sees them all).
 */
function checkNodeReferences(view: WorkflowView, outer: (id: string) => boolean = () => false): CodedError[] {
  const ids = new Set(view.rawIds.map(({ id }) => id));
  const subgraphs = view.nodes.flatMap(({ node }) => (node?.type === 'SUBGRAPH' ? [`${node.id}.`] : []));
  const known = (id: string) => ids.has(id) || subgraphs.some((prefix) => id.startsWith(prefix)) || outer(id);
  const errors: CodedError[] = [];
  for (const { node, path, child } of view.nodes) {
    if (child) errors.push(...checkNodeReferences(child, known));
    if (!node) continue;
    const unknown = (value: unknown, knownHere: (id: string) => boolean, candidates: readonly string[]) =>
      errors.push(...unknownNodeReferences(node.id, path, nodeReferences(value), knownHere, candidates));
    if (node.type === 'SUBGRAPH') {
      // Its mappings only (its workflow's nodes are checked at their level): inputMapping is read
      // at the caller's level, outputMapping as the child ends, where the child's nodes are known too.
      const childIds = child?.rawIds.map(({ id }) => id) ?? [];
      unknown(node.config.inputMapping ?? {}, known, [...ids]);
      unknown(node.config.outputMapping ?? {}, (id) => known(id) || childIds.includes(id), [
        ...ids,
        ...childIds,
      ]);
      continue;
    }
    unknown({ config: 'config' in node ? node.config : undefined, hooks: node.hooks }, known, [...ids]);
  }
  return errors;
}

/** UNKNOWN_NODE_REFERENCE for each id `references` names that is not known, with the id it most likely meant. */
function unknownNodeReferences(
  nodeId: string,
  path: Path,
  references: ReturnType<typeof nodeReferences>,
  known: (id: string) => boolean,
  candidates: readonly string[],
): CodedError[] {
  if (references === 'all') return [];
  return [...references].flatMap((id) => {
    if (known(id)) return [];
    const dashed = candidates.find((candidate) => candidate.startsWith(`${id}-`));
    const suggestion = closestKey(id, [...candidates]);
    const hint =
      dashed !== undefined
        ? `; "-" subtracts in an expression, so nodes.${dashed} reads nodes.${id} minus the rest: write nodes['${dashed}']`
        : suggestion
          ? `; did you mean "${suggestion}"?`
          : '';
    return [
      codedError(
        'UNKNOWN_NODE_REFERENCE',
        `node ${nodeId} reads nodes.${id}, but no node has that id${hint}`,
        path,
        nodeId,
      ),
    ];
  });
}

/** Names a node's expressions may read besides variables (engine/scope.ts). */
const SCOPE_NAMES = ['input', 'nodes', 'thread'];
/** What an AFTER_EXECUTE hook reads besides: the node's outcome. */
const AFTER_HOOK_NAMES = ['result'];
/** Names only an http tool's templates read; in a node they would render as nothing. */
const TOOL_ONLY_NAMES: ReadonlySet<string> = new Set(HTTP_TEMPLATE_SCOPE);

/**
 * The names iterations give: a LOOP_START's `iterationVariable` (default `item`) and `index`; a FORK
 * over a list's `itemVariable` (default `item`) and `<itemVariable>Index` (functions/nodes/loop.ts,
 * engine/thread/map.ts). `item` and `index` exist only as one of these, so each name is kept with
 * what gives it, for the hint when a node reads the default name that was renamed.
 */
function iterationNames(node: WorkflowNode | undefined, type: string): Array<[string, string]> {
  if (type === 'LOOP_START') {
    // Unreadable: its names are unknown, so the defaults are assumed rather than refused.
    const name = node?.type === 'LOOP_START' ? (node.config.iterationVariable ?? 'item') : 'item';
    const loop = node ? `LOOP_START ${node.id}` : 'a LOOP_START';
    return [
      [name, `${loop}'s item`],
      ['index', `${loop}'s index`],
    ];
  }
  if (type === 'FORK' && (node?.type !== 'FORK' || node.config.forEach !== undefined)) {
    const name = node?.type === 'FORK' ? (node.config.itemVariable ?? 'item') : 'item';
    const fork = node ? `FORK ${node.id}` : 'a FORK';
    return [
      [name, `${fork}'s item (itemVariable)`],
      [`${name}Index`, `${fork}'s item index`],
    ];
  }
  return [];
}

/** The defaults a renamed iteration variable replaces, and what each was renamed to. */
function renamedIterationHint(name: string, iterations: ReadonlyMap<string, string>): string | undefined {
  const isIndex = /index$/i.test(name);
  if (name !== 'item' && name !== 'index' && name !== 'itemIndex') return undefined;
  const candidates = [...iterations].filter(([candidate]) => /Index$|^index$/.test(candidate) === isIndex);
  if (candidates.length === 0) return undefined;
  const [[first]] = candidates as [[string, string]];
  const where = candidates.map(([candidate, origin]) => `"${candidate}" is ${origin}`).join(', ');
  return `did you mean "${first}"? "${name}" is defined only where it is the iteration variable: ${where}`;
}

/**
 * Names other languages use for a literal or a root (Python's `True` and `None`, JavaScript's
 * `undefined`, JSONPath's `$`): an expression would read each as a variable that is never set.
 */
function literalNameHint(name: string): string | undefined {
  if (/^(True|TRUE)$/.test(name)) return 'did you mean "true"? (literals are lower case)';
  if (/^(False|FALSE)$/.test(name)) return 'did you mean "false"? (literals are lower case)';
  if (/^(None|none|NULL|Null|nil)$/.test(name))
    return 'did you mean "null"? (x == null holds for null only, not for a missing value: (x ?? null) == null holds for both)';
  if (name === 'undefined')
    return "a missing value has no literal: test it with type(x) == 'undefined', or give a default with x ?? v";
  if (name === '$')
    return '"$" (JSONPath) is not a name here: read the run\'s input as input.<key>, a variable by its name, a node\'s output as nodes.<id>';
  return undefined;
}

/**
 * Expressions and templates reading a name that nothing defines (`{{tickte}}` would read as nothing
 * at run time). A name is defined when any level declares it, a node writes it (VARIABLE,
 * `outputVariable`, a subgraph's mappings) or a loop iterates with it, at any level: a child
 * workflow reads its caller's variables, and its caller reads what its outputMapping sets.
 */
function checkVariableReferences(view: WorkflowView): CodedError[] {
  const defined = new Set(SCOPE_NAMES);
  const iterations = new Map<string, string>();
  const collect = (level: WorkflowView) => {
    for (const { declaration } of level.variables) defined.add(declaration.name);
    for (const { node, type, child } of level.nodes) {
      const config = (node && 'config' in node ? node.config : undefined) as
        | Record<string, unknown>
        | undefined;
      for (const field of ['variableName', 'outputVariable']) {
        if (typeof config?.[field] === 'string') defined.add(config[field] as string);
      }
      for (const [name, origin] of iterationNames(node, type)) {
        defined.add(name);
        if (!iterations.has(name)) iterations.set(name, origin);
      }
      for (const field of ['inputMapping', 'outputMapping']) {
        if (isRecord(config?.[field]))
          for (const name of Object.keys(config[field] as object)) defined.add(name);
      }
      if (child) collect(child);
    }
  };
  collect(view);
  const afterHook: ReadonlySet<string> = new Set([...defined, ...AFTER_HOOK_NAMES]);
  const errors: CodedError[] = [];
  const variableTypes = declaredVariableTypes(view);
  const nodeIds = new Set(nodesOfEveryLevel(view).flatMap(({ node }) => (node ? [node.id] : [])));
  for (const { node, path } of nodesOfEveryLevel(view)) {
    if (!node) continue;
    const reported = new Set<string>();
    const check = (source: string, names: ReadonlySet<string>) => {
      const typeProblem = declaredTypeProblem(source, variableTypes);
      if (typeProblem !== undefined)
        errors.push(codedError('INVALID_EXPRESSION', typeProblem, path, node.id));
      // `nodes.keep-recent`: UNKNOWN_NODE_REFERENCE says how to read it; `recent` is no variable meant.
      const dashedParts = dashedNodeReadParts(source, nodeIds);
      for (const name of identifiersOf(source)) {
        if (names.has(name) || reported.has(name) || dashedParts.has(name)) continue;
        reported.add(name);
        const closest = closestKey(name, [...names]);
        const suggestion =
          literalNameHint(name) ??
          (closest ? `did you mean "${closest}"?` : renamedIterationHint(name, iterations));
        errors.push(
          codedError(
            'UNKNOWN_VARIABLE_REFERENCE',
            TOOL_ONLY_NAMES.has(name)
              ? `node ${node.id} reads "${name}", which only an http tool's url, headers and body templates can read (${name === 'secrets' ? "secrets never enter a node's data" : 'the arguments of its call'})`
              : AFTER_HOOK_NAMES.includes(name)
                ? `node ${node.id} reads "${name}", which only its AFTER_EXECUTE hooks can read (the node's outcome)`
                : `node ${node.id} reads "${name}", which no variable declaration, node or loop defines${suggestion ? `; ${suggestion}` : ''}`,
            path,
            node.id,
          ),
        );
      }
    };
    if (node.type === 'SUBGRAPH') {
      // Its mappings only: the child workflow's own nodes are checked at their level. An
      // outputMapping also reads the child's END `output`.
      const { inputMapping, outputMapping } = node.config;
      for (const source of Object.values(inputMapping ?? {})) check(source, defined);
      for (const source of Object.values(outputMapping ?? {})) check(source, withOutput(defined));
    } else {
      for (const source of expressionSources('config' in node ? node.config : undefined))
        check(source, defined);
    }
    for (const hook of node.hooks ?? []) {
      for (const source of expressionSources(hook))
        check(source, hook.hookType === 'AFTER_EXECUTE' ? afterHook : defined);
    }
  }
  return errors;
}

/**
 * The names after the first `-` of each node id that `source` reads as `nodes.keep-recent`, which an
 * expression reads as `nodes.keep` minus `recent` (the id is read as `nodes['keep-recent']`).
 */
function dashedNodeReadParts(source: string, nodeIds: ReadonlySet<string>): ReadonlySet<string> {
  const parts = new Set<string>();
  for (const match of source.matchAll(/\bnodes\.([A-Za-z0-9_$]+(?:-[A-Za-z0-9_$]+)+)/g)) {
    const segments = match[1]!.split('-');
    // The longest run of segments that is a node id: `nodes.a-b-c` may be node a-b minus c.
    for (let end = segments.length; end > 1; end -= 1) {
      if (!nodeIds.has(segments.slice(0, end).join('-'))) continue;
      for (const segment of segments.slice(1, end)) parts.add(segment);
      break;
    }
  }
  return parts;
}

/** The nodes of a workflow and of every child workflow its SUBGRAPHs hold, at any depth. */
function nodesOfEveryLevel(view: WorkflowView): WorkflowView['nodes'] {
  return view.nodes.flatMap((entry) => [entry, ...(entry.child ? nodesOfEveryLevel(entry.child) : [])]);
}

function withOutput(names: ReadonlySet<string>): ReadonlySet<string> {
  return new Set([...names, 'output']);
}

/** The expression sources inside a node's config or a hook: `{{ }}` templates and expression fields. */
function expressionSources(value: unknown, key?: string): string[] {
  if (typeof value === 'string') {
    if (value.includes('{{')) {
      try {
        return splitTemplateSources(value);
      } catch {
        return [];
      }
    }
    return key !== undefined && EXPRESSION_FIELDS.has(key) ? [value] : [];
  }
  if (Array.isArray(value)) return value.flatMap((item) => expressionSources(item, key));
  if (isRecord(value)) {
    // CODE `inputs`: each value is an expression.
    if (key === 'inputs')
      return Object.values(value).flatMap((item) => expressionSources(item, 'expression'));
    return Object.entries(value).flatMap(([name, item]) => expressionSources(item, name));
  }
  return [];
}

const EXPRESSION_FIELDS = new Set(['expression', 'condition', 'breakCondition']);

/**
 * An expression that fails on the declared types of the variables it reads (`acc > 1` with `acc`
 * an array): its message, naming those types; undefined when it may run (variable-types.ts).
 */
function declaredTypeProblem(source: string, types: ReadonlyMap<string, StaticType>): string | undefined {
  let expression: Expression;
  try {
    expression = parseExpression(source);
  } catch {
    return undefined; // INVALID_EXPRESSION is reported by the node rules
  }
  const read = expression.identifiers.filter((name) => types.has(name));
  if (read.length === 0) return undefined;
  try {
    staticTypeOf(expression.root, (name) => types.get(name));
    return undefined;
  } catch (error) {
    if (!(error instanceof StaticTypeError)) throw error;
    const declared = read.map((name) => `"${name}" is declared ${declaredTypeName(types.get(name))}`);
    return `Invalid expression ${JSON.stringify(source)}: ${error.message} (${declared.join(', ')})`;
  }
}

function declaredTypeName(type: StaticType | undefined): string {
  if (type === undefined || type === 'unknown') return 'any';
  return [...type].filter((t) => t !== 'undefined').join(' or ');
}

function identifiersOf(source: string): readonly string[] {
  try {
    return parseExpression(source).identifiers;
  } catch {
    return []; // INVALID_EXPRESSION is reported by the node rules
  }
}

/** The run's maxSteps, when the file's value is usable (a wrong one is a SCHEMA_INVALID of its own). */
function stepLimitOf(data: Record<string, unknown>): StepLimit | undefined {
  const { maxSteps } = data;
  if (maxSteps === undefined) return { maxSteps: DEFAULT_MAX_STEPS, defaulted: true };
  return typeof maxSteps === 'number' && Number.isInteger(maxSteps) && maxSteps > 0
    ? { maxSteps, defaulted: false }
    : undefined;
}

/** The level's mcp server entries (no `tool`): LLM nodes may offer them, TOOL nodes cannot call one. */
function serverEntries(view: WorkflowView): string[] {
  return view.toolEntries.flatMap(({ name, definition: { handler } }) =>
    typeof handler !== 'string' && handler.kind === 'mcp' && handler.tool === undefined ? [name] : [],
  );
}

/** Checks one workflow level, then the child workflows of its SUBGRAPH nodes (one run, one maxSteps). */
function checkLevel(view: WorkflowView, enclosing: NodeScope, limit: StepLimit | undefined): CodedError[] {
  const scope: NodeScope = {
    profiles: union(enclosing.profiles, view.profiles),
    tools: union(enclosing.tools, view.tools),
    toolParameters: new Map([
      ...(enclosing.toolParameters ?? []),
      ...view.toolEntries.map(({ name, definition }): [string, unknown] => [name, definition.parameters]),
    ]),
    variables: view.variables.map(({ declaration }) => declaration),
    // A level's own declaration hides an enclosing one of the same name.
    toolServers: new Set([
      ...[...(enclosing.toolServers ?? [])].filter((name) => !view.toolEntries.some((e) => e.name === name)),
      ...serverEntries(view),
    ]),
  };
  const errors = [
    ...checkDeclarations(view),
    ...checkTools(view.toolEntries),
    ...checkMcpTools(view.toolEntries),
  ];
  const pathIdOwners = new Map<string, string>();
  for (const { node, path, child, type, unparsed } of view.nodes) {
    if (node) errors.push(...checkNode(node, path, scope));
    else if (unparsed) errors.push(...unparsedNodeExpressionErrors(type, unparsed, path));
    if (node?.type === 'FORK')
      errors.push(...checkPathIdsUnique(node.id, node.config.forkPathIds, path, pathIdOwners));
    if (child) errors.push(...checkLevel(child, scope, limit));
  }
  errors.push(...checkGraph(view, limit));
  return errors;
}

/**
 * Inlining prefixes child ids with `<subgraph id>.`, so a parent node literally named `review.check`
 * would collide with child `check` of SUBGRAPH `review`. Same-level duplicates are reported elsewhere.
 */
function checkInlinedIds(root: WorkflowView): CodedError[] {
  const errors: CodedError[] = [];
  const owners = new Map<string, string>();
  const visit = (view: WorkflowView, prefix: string): void => {
    for (const { id, path, type, child } of view.nodes) {
      if (type === 'SUBGRAPH' && child) {
        visit(child, `${prefix}${id}.`);
        continue;
      }
      const built = prefix + id;
      const owner = owners.get(built);
      if (owner !== undefined && owner !== prefix) {
        errors.push(
          codedError(
            'DUPLICATE_NODE_ID',
            `node "${id}" would get id "${built}" once subgraphs are inlined, which is taken`,
            path,
            id,
          ),
        );
      }
      if (owner === undefined) owners.set(built, prefix);
    }
  };
  visit(root, '');
  return errors;
}

function union(
  a: ReadonlySet<string> | undefined,
  b: ReadonlySet<string> | undefined,
): ReadonlySet<string> | undefined {
  return a && b ? new Set([...a, ...b]) : undefined;
}

/** Seed 001: a path id names one path in the whole workflow, across FORKs too. */
function checkPathIdsUnique(
  forkId: string,
  pathIds: readonly string[],
  path: Path,
  owners: Map<string, string>,
) {
  const errors: CodedError[] = [];
  pathIds.forEach((pathId, index) => {
    const owner = owners.get(pathId);
    if (owner !== undefined) {
      const where = owner === forkId ? 'earlier in this FORK' : `by FORK "${owner}"`;
      errors.push(
        codedError(
          'INVALID_FORK_PATH_IDS',
          `fork path id "${pathId}" is already used ${where}; path ids are unique in a workflow`,
          [...path, 'config', 'forkPathIds', index],
          forkId,
        ),
      );
    } else {
      owners.set(pathId, forkId);
    }
  });
  return errors;
}

function checkDeclarations(view: WorkflowView): CodedError[] {
  const errors: CodedError[] = [];
  const seen = new Set<string>();
  for (const { declaration, path } of view.variables) {
    const key = `${declaration.scope ?? 'thread'}:${declaration.name}`;
    if (seen.has(key)) {
      errors.push(
        codedError('INVALID_VARIABLE', `variable "${declaration.name}" is declared twice in the same scope`, [
          ...path,
          'name',
        ]),
      );
    }
    seen.add(key);
    if (!initialMatchesType(declaration)) {
      errors.push(
        codedError(
          'INVALID_VARIABLE',
          `initial value of "${declaration.name}" is not of its declared type ${declaration.type}`,
          [...path, 'initial'],
        ),
      );
    }
  }
  return errors;
}

function initialMatchesType({ type, initial }: VariableDeclaration): boolean {
  if (initial === undefined || type === undefined) return true;
  return valueHasType(initial, type);
}

function valueHasType(value: unknown, type: VariableType): boolean {
  switch (type) {
    case 'any':
      return true;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isRecord(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    default:
      return typeof value === type;
  }
}
