/** Rules about one node's config (seeds 001 and 003), references to profiles and tools, and expressions. */
import type { CodedError } from '../errors.ts';
import {
  describeStaticType,
  isWholeTemplate,
  staticTypeOfSource,
  validateExpression,
  validateTemplate,
} from '../expression/index.ts';
import { answerVariableOf, userInputProblem } from '../model/interaction-reply.ts';
import { formatPath, isRecord, type Path } from '../model/paths.ts';
import {
  CONTEXT_OPERATIONS,
  endConfigSchema,
  forkConfigSchema,
  hookSchema,
  llmConfigSchema,
  loopEndConfigSchema,
  loopStartConfigSchema,
  messageSchema,
  type NodeOfType,
  type NodeType,
  routeConfigSchema,
  toolNodeConfigSchema,
  userInteractionConfigSchema,
  type VariableDeclaration,
  type VariableType,
  variableConfigSchema,
  type WorkflowNode,
} from '../model/schema.ts';
import { findDeclaration } from '../thread/variables.ts';
import { codedError } from './report.ts';
import { toolArgumentProblems } from './tool-arguments.ts';
import { VALUE_TYPE_OF } from './variable-types.ts';

/** A person is waited for within one execution, and a STANDARD execution lasts at most a year. */
export const MAX_INTERACTION_TIMEOUT_SECONDS = 31_536_000;
/** A JOIN's timer runs inside the execution too. */
export const MAX_JOIN_TIMEOUT_SECONDS = MAX_INTERACTION_TIMEOUT_SECONDS;

/** Names visible to a node: its own workflow's declarations plus those of enclosing workflows. */
export interface NodeScope {
  /** undefined: some declaring section was unreadable, so reference checks are skipped. */
  profiles: ReadonlySet<string> | undefined;
  tools: ReadonlySet<string> | undefined;
  /** Each declared tool's `parameters`, this level's over enclosing ones'. */
  toolParameters?: ReadonlyMap<string, unknown>;
  /** mcp server entries (no `tool`): a set of tools an LLM node offers, not one a TOOL node calls. */
  toolServers?: ReadonlySet<string>;
  variables: readonly VariableDeclaration[];
}

export const DEFAULT_PROFILE_ID = 'default';

/**
 * Options a person could not tell apart or read: an empty one (or only whitespace), and one that reads
 * as an earlier one once surrounding whitespace is set aside (`"yes"`, `" yes"`): the terminal shows
 * them alike and matches a typed choice trimmed. Each names the options, by index and as written.
 */
function unreadableOptions(options: readonly string[]): { index: number; message: string }[] {
  const problems: { index: number; message: string }[] = [];
  const seen = new Map<string, number>();
  options.forEach((option, index) => {
    const text = option.trim();
    if (text === '') {
      problems.push({
        index,
        message: `selection option ${index} is empty (${JSON.stringify(option)}): a person could not tell what it chooses`,
      });
      return;
    }
    const earlier = seen.get(text);
    if (earlier === undefined) {
      seen.set(text, index);
      return;
    }
    const same =
      options[earlier] === option ? 'is the same as' : 'differs only in surrounding whitespace from';
    problems.push({
      index,
      message: `selection options must be distinct: option ${index} ${JSON.stringify(option)} ${same} option ${earlier} ${JSON.stringify(options[earlier])}`,
    });
  });
  return problems;
}

export function checkNode(node: WorkflowNode, path: Path, scope: NodeScope): CodedError[] {
  const errors: CodedError[] = [];
  const add = (code: CodedError['code'], message: string, at: Path): void => {
    errors.push(codedError(code, message, at, node.id));
  };
  const config: Path = [...path, 'config'];
  switch (node.type) {
    case 'FORK':
      checkFork(node, config, add);
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    case 'CODE':
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    case 'JOIN':
      checkJoin(node, config, add);
      break;
    case 'CONTEXT_PROCESSOR': {
      checkContextProcessor(node, config, add);
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    }
    case 'USER_INTERACTION': {
      const { userInteractionType, options } = node.config;
      if (userInteractionType === 'ask_for_selection') {
        if (!options || options.length === 0) {
          add('INVALID_SELECTION_OPTIONS', `ask_for_selection needs a non-empty "options" list`, [
            ...config,
            'options',
          ]);
        } else {
          for (const { index, message } of unreadableOptions(options)) {
            add('INVALID_SELECTION_OPTIONS', message, [...config, 'options', index]);
          }
        }
      }
      if (userInteractionType !== 'ask_for_selection' && options !== undefined) {
        // Only a selection offers options; elsewhere they would be silently left out of the question.
        add(
          'INVALID_SELECTION_OPTIONS',
          `"options" apply only to ask_for_selection; this node is ${userInteractionType}`,
          [...config, 'options'],
        );
      }
      if (userInteractionType === 'show_message' && node.config.outputVariable !== undefined) {
        add(
          'INVALID_NODE_CONFIG',
          'show_message asks nothing, so it has no answer to store: remove outputVariable',
          [...config, 'outputVariable'],
        );
      }
      const { userInput } = node.config;
      if (userInput !== undefined && userInteractionType !== 'show_message') {
        // A literal userInput that cannot answer would only fail the run when the node is reached.
        const variable = answerVariableOf(node.config.outputVariable, scope.variables);
        const problem = userInputProblem(userInteractionType, options, userInput, variable);
        if (problem !== undefined) {
          add(
            'INVALID_INTERACTION_ANSWER',
            `userInput cannot answer this ${userInteractionType}: ${problem}`,
            [...config, 'userInput'],
          );
        }
      }
      if (userInteractionType === 'show_message' && userInput !== undefined) {
        add(
          'INVALID_NODE_CONFIG',
          'show_message asks nothing, so no userInput can answer it: remove userInput (showMessage is the text shown)',
          [...config, 'userInput'],
        );
      }
      const { timeoutSeconds } = node.config;
      if (timeoutSeconds !== undefined && timeoutSeconds > MAX_INTERACTION_TIMEOUT_SECONDS) {
        add(
          'INVALID_INTERACTION_TIMEOUT',
          `timeoutSeconds must be at most ${MAX_INTERACTION_TIMEOUT_SECONDS.toLocaleString('en-US')} (one year, the longest a STANDARD execution runs), got ${timeoutSeconds}`,
          [...config, 'timeoutSeconds'],
        );
      }
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    }
    case 'LOOP_START':
      if (templateNeverIterable(node.config.dataSource)) {
        add(
          'INVALID_NODE_CONFIG',
          `dataSource ${JSON.stringify(node.config.dataSource)} always gives a boolean, which a loop can neither iterate nor count: give an array, an object, a whole number ≥ 0 or a string`,
          [...config, 'dataSource'],
        );
      } else if (!isIterableDataSource(node.config.dataSource)) {
        add(
          'INVALID_NODE_CONFIG',
          `dataSource must be an array, an object, a whole number ≥ 0, a string or a {{ }} template giving one, got ${JSON.stringify(node.config.dataSource)}`,
          [...config, 'dataSource'],
        );
      }
      if (node.config.maxIterations <= 0) {
        add(
          'INVALID_MAX_ITERATIONS',
          `maxIterations must be greater than 0, got ${node.config.maxIterations}`,
          [...config, 'maxIterations'],
        );
      }
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    case 'LOOP_END':
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    case 'ROUTE':
      if (node.config.routes.length === 0 && node.config.defaultTargetNodeId === undefined) {
        add('INVALID_NODE_CONFIG', 'a ROUTE needs at least one route or a defaultTargetNodeId', config);
      }
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    case 'VARIABLE':
      errors.push(...variableNodeErrors(node, config, scope));
      // A top-level node runs in no subgraph, so there is no subgraph frame to write to.
      if (node.config.scope === 'subgraph' && path.length === 2) {
        add(
          'INVALID_VARIABLE',
          `"scope": "subgraph" outside every subgraph: there is no subgraph scope to write here (use thread)`,
          [...config, 'scope'],
        );
      }
      break;
    case 'LLM': {
      const profileId = node.config.profileId ?? DEFAULT_PROFILE_ID;
      if (scope.profiles && !scope.profiles.has(profileId)) {
        add(
          'UNKNOWN_PROFILE',
          `profile "${profileId}"${node.config.profileId === undefined ? ' (the default)' : ''} is not declared in "profiles"`,
          [...config, 'profileId'],
        );
      }
      node.config.tools?.forEach((tool, index) => {
        if (scope.tools && !scope.tools.has(tool)) {
          add('UNKNOWN_TOOL', `tool "${tool}" is not declared in "tools"`, [...config, 'tools', index]);
        }
      });
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    }
    case 'TOOL':
      if (scope.tools && !scope.tools.has(node.config.toolName)) {
        add('UNKNOWN_TOOL', `tool "${node.config.toolName}" is not declared in "tools"`, [
          ...config,
          'toolName',
        ]);
      }
      if (scope.toolServers?.has(node.config.toolName)) {
        add(
          'INVALID_NODE_CONFIG',
          `tool "${node.config.toolName}" is an MCP server entry (no "tool"): a TOOL node calls one tool; declare an entry with "tool" for it`,
          [...config, 'toolName'],
        );
      }
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      if (scope.toolParameters?.has(node.config.toolName)) {
        const parameters = scope.toolParameters.get(node.config.toolName);
        for (const problem of toolArgumentProblems(node.config.arguments ?? {}, parameters)) {
          add(
            'TOOL_ARGUMENTS_INVALID',
            `TOOL node "${node.id}" calls "${node.config.toolName}": ${problem}`,
            [...config, 'arguments'],
          );
        }
      }
      break;
    case 'END':
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      break;
    case 'SUBGRAPH':
      errors.push(...configExpressionErrors(node.type, node.config, config, node.id));
      errors.push(...mappingTypeErrors(node, config, scope));
      break;
    default:
      break;
  }
  errors.push(...outputVariableErrors(node, config, scope));
  errors.push(...hookExpressionErrors(node.hooks, path, node.id));
  return errors;
}

/** The schema of one field, which says whether the value written there parses. */
type FieldSchema = { safeParse(value: unknown): { success: boolean } };

/** In a field's location, every element of the array there. */
const EACH = Symbol('each');
/** In a field's location, every value of the record there (a CODE node's inputs, a mapping). */
const VALUES = Symbol('values');

/** The schema of a field that holds one expression (a VARIABLE's, each of a CODE node's inputs, …). */
const EXPRESSION: FieldSchema = variableConfigSchema.shape.expression;

/** Where a node type's config holds an expression or a template, and the schema of that field. */
interface ExpressionField {
  readonly kind: 'expression' | 'template';
  readonly at: readonly (string | typeof EACH | typeof VALUES)[];
  readonly field: FieldSchema;
}

/**
 * Every expression and template of a node's config, by type, in the order checkNode reports them: the
 * one list both checkNode and a node that did not parse (unparsedNodeExpressionErrors) read. Inserted
 * and replacement contents are templates, rendered as the node runs.
 */
const EXPRESSION_FIELDS: Partial<Record<NodeType, readonly ExpressionField[]>> = {
  // Evaluated as the node runs: an expression that does not parse would fail the run there.
  LOOP_START: [{ kind: 'template', at: ['dataSource'], field: loopStartConfigSchema.shape.dataSource }],
  FORK: [{ kind: 'template', at: ['forEach'], field: forkConfigSchema.shape.forEach }],
  CODE: [{ kind: 'expression', at: ['inputs', VALUES], field: EXPRESSION }],
  SUBGRAPH: [
    { kind: 'expression', at: ['inputMapping', VALUES], field: EXPRESSION },
    { kind: 'expression', at: ['outputMapping', VALUES], field: EXPRESSION },
  ],
  CONTEXT_PROCESSOR: [
    { kind: 'template', at: ['insert', 'messages', EACH, 'content'], field: messageSchema.shape.content },
    { kind: 'template', at: ['replace', 'message', 'content'], field: messageSchema.shape.content },
  ],
  USER_INTERACTION: [
    { kind: 'template', at: ['showMessage'], field: userInteractionConfigSchema.shape.showMessage },
  ],
  LOOP_END: [{ kind: 'expression', at: ['breakCondition'], field: loopEndConfigSchema.shape.breakCondition }],
  ROUTE: [
    {
      kind: 'expression',
      at: ['routes', EACH, 'condition'],
      field: routeConfigSchema.shape.routes.element.shape.condition,
    },
  ],
  LLM: [
    { kind: 'template', at: ['prompt'], field: llmConfigSchema.shape.prompt },
    { kind: 'template', at: ['systemPrompt'], field: llmConfigSchema.shape.systemPrompt },
  ],
  TOOL: [{ kind: 'template', at: ['arguments'], field: toolNodeConfigSchema.shape.arguments }],
  END: [{ kind: 'template', at: ['output'], field: endConfigSchema.shape.output }],
};

/**
 * The values at `at` under `root` (EACH: every record of an array; VALUES: every value of a record),
 * each with its path.
 */
function valuesAt(root: unknown, at: ExpressionField['at'], path: Path): Array<[unknown, Path]> {
  if (at.length === 0) return root === undefined ? [] : [[root, path]];
  const [step, ...rest] = at;
  if (step === EACH) {
    if (!Array.isArray(root)) return [];
    return root.flatMap((item, index) => (isRecord(item) ? valuesAt(item, rest, [...path, index]) : []));
  }
  if (step === VALUES) {
    if (!isRecord(root)) return [];
    return Object.entries(root).flatMap(([key, value]) => valuesAt(value, rest, [...path, key]));
  }
  return isRecord(root) ? valuesAt(root[step as string], rest, [...path, step as string]) : [];
}

/**
 * The errors of the expressions and templates of a node's config (`at`: the config's path). With
 * `parsedOnly`, of a node that did not parse: only the values whose own field parses (one that does
 * not has its schema error already).
 */
function configExpressionErrors(
  type: NodeType,
  config: unknown,
  at: Path,
  nodeId: string,
  parsedOnly = false,
): CodedError[] {
  return (EXPRESSION_FIELDS[type] ?? []).flatMap(({ kind, at: location, field }) =>
    valuesAt(config, location, at).flatMap(([value, where]) => {
      if (parsedOnly && !field.safeParse(value).success) return [];
      return kind === 'expression'
        ? expressionErrors(value as string, where, nodeId)
        : templateErrors(value, where, nodeId);
    }),
  );
}

/** The errors of a node's hooks' conditions (`path`: the node's); `parsedOnly` as above. */
function hookExpressionErrors(hooks: unknown, path: Path, nodeId: string, parsedOnly = false): CodedError[] {
  const conditions = valuesAt(hooks, [EACH, 'condition'], [...path, 'hooks']).flatMap(([condition, where]) =>
    parsedOnly && !hookSchema.shape.condition.safeParse(condition).success
      ? []
      : expressionErrors(condition as string, where, nodeId),
  );
  // The payload is rendered as the hook fires; a template that does not parse would drop the event.
  const payloads = valuesAt(hooks, [EACH, 'eventPayload'], [...path, 'hooks']).flatMap(([payload, where]) =>
    parsedOnly && !hookSchema.shape.eventPayload.safeParse(payload).success
      ? []
      : templateErrors(payload, where, nodeId),
  );
  return [...conditions, ...payloads];
}

/**
 * The expressions and templates checkNode checks, of a node that failed the structural parse for
 * another field: each whose own field parses is checked in the same run (a ROUTE whose second route
 * lacks its `targetNodeId` still has its first route's condition read), in checkNode's order; one that
 * does not parse has its error already. A VARIABLE's expression and a SUBGRAPH's mappings, checked
 * against the declared types, wait for the node to parse.
 */
export function unparsedNodeExpressionErrors(
  type: NodeType,
  raw: Record<string, unknown>,
  path: Path,
): CodedError[] {
  const nodeId = typeof raw.id === 'string' ? raw.id : '';
  return [
    ...configExpressionErrors(type, raw.config, [...path, 'config'], nodeId, true),
    ...hookExpressionErrors(raw.hooks, path, nodeId, true),
  ];
}

type Add = (code: CodedError['code'], message: string, at: Path) => void;

function checkFork(node: NodeOfType<'FORK'>, config: Path, add: Add): void {
  const { forkPathIds, childNodeIds, forEach, maxConcurrency, itemVariable, mode, forkStrategy } =
    node.config;
  if (forEach === undefined && forkStrategy === undefined) {
    add(
      'INVALID_NODE_CONFIG',
      'forkStrategy is required on a FORK over paths: "parallel" (the paths run at once) or "serial" (one after another, in order); only a FORK over a list (forEach) may leave it out, and then runs its items in parallel',
      [...config, 'forkStrategy'],
    );
  }
  if (forEach !== undefined && forkPathIds.length !== 1) {
    add(
      'FORK_EACH_PATHS',
      `a FORK with forEach runs one path per item: forkPathIds must have exactly one entry, got ${forkPathIds.length}`,
      [...config, 'forkPathIds'],
    );
  }
  if (forEach === undefined) {
    for (const [field, value] of Object.entries({ maxConcurrency, itemVariable, mode })) {
      if (value !== undefined) {
        add('FORK_EACH_PATHS', `"${field}" applies only to a FORK with forEach`, [...config, field]);
      }
    }
  }
  if (maxConcurrency !== undefined && !(Number.isInteger(maxConcurrency) && maxConcurrency >= 0)) {
    add(
      'INVALID_MAX_CONCURRENCY',
      `maxConcurrency must be a whole number >= 0 (0: no limit), got ${maxConcurrency}`,
      [...config, 'maxConcurrency'],
    );
  }
  if (itemVariable !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(itemVariable)) {
    add('INVALID_VARIABLE', `itemVariable must be a plain name, got "${itemVariable}"`, [
      ...config,
      'itemVariable',
    ]);
  }
  if (forkPathIds.length === 0)
    add('INVALID_FORK_PATH_IDS', 'forkPathIds must not be empty', [...config, 'forkPathIds']);
  if (childNodeIds.length === 0) {
    add('INVALID_FORK_PATH_IDS', 'childNodeIds must not be empty', [...config, 'childNodeIds']);
  }
  childNodeIds.forEach((child, index) => {
    // Each path starts at a node of its own: two paths at one node are one branch run twice.
    if (childNodeIds.indexOf(child) !== index) {
      add(
        'INVALID_FORK_PATH_IDS',
        `childNodeIds lists "${child}" twice; each path starts at a node of its own`,
        [...config, 'childNodeIds', index],
      );
    }
  });
  if (forkPathIds.length > 0 && childNodeIds.length > 0 && forkPathIds.length !== childNodeIds.length) {
    add(
      'INVALID_FORK_PATH_IDS',
      `forkPathIds has ${forkPathIds.length} entries but childNodeIds has ${childNodeIds.length}; they pair one to one`,
      [...config, 'forkPathIds'],
    );
  }
}

function checkJoin(node: NodeOfType<'JOIN'>, config: Path, add: Add): void {
  const { forkPathIds, joinStrategy, threshold, timeout, mainPathId, mainItem } = node.config;
  if (mainItem !== undefined && mainItem < 0) {
    add('INVALID_MAIN_ITEM', `mainItem must be an item index (>= 0), got ${mainItem}`, [
      ...config,
      'mainItem',
    ]);
  }
  if (forkPathIds.length === 0)
    add('INVALID_FORK_PATH_IDS', 'forkPathIds must not be empty', [...config, 'forkPathIds']);
  forkPathIds.forEach((pathId, index) => {
    if (forkPathIds.indexOf(pathId) !== index) {
      add('INVALID_FORK_PATH_IDS', `path id "${pathId}" is listed twice`, [...config, 'forkPathIds', index]);
    }
  });
  if (mainPathId !== undefined && !forkPathIds.includes(mainPathId)) {
    add(
      'MAIN_PATH_ID_NOT_FOUND',
      `mainPathId "${mainPathId}" is not one of forkPathIds [${forkPathIds.join(', ')}]`,
      [...config, 'mainPathId'],
    );
  }
  if (joinStrategy !== 'SUCCESS_COUNT_THRESHOLD' && threshold !== undefined) {
    // Only that strategy counts successes; any other would silently ignore the number.
    add(
      'INVALID_JOIN_THRESHOLD',
      `"threshold" applies only to joinStrategy SUCCESS_COUNT_THRESHOLD; this JOIN's is ${joinStrategy}`,
      [...config, 'threshold'],
    );
  }
  if (joinStrategy === 'SUCCESS_COUNT_THRESHOLD') {
    if (threshold === undefined) {
      add('INVALID_JOIN_THRESHOLD', 'SUCCESS_COUNT_THRESHOLD needs a "threshold"', [...config, 'threshold']);
    } else if (threshold < 1 || (threshold > forkPathIds.length && forkPathIds.length > 1)) {
      // One path may be a FORK over a list, whose item count is known at run time: graph-rules checks
      // a single static path.
      add(
        'INVALID_JOIN_THRESHOLD',
        `threshold must be between 1 and the number of paths (${forkPathIds.length}), got ${threshold}`,
        [...config, 'threshold'],
      );
    }
  }
  if (timeout !== undefined && !(timeout >= 0 && Number.isInteger(timeout))) {
    // A Wait state counts whole seconds: a fraction could only be rounded, and the seed's timeout is
    // the longest the join waits.
    add(
      'INVALID_JOIN_TIMEOUT',
      `timeout must be 0 (wait forever) or a whole number of seconds, got ${timeout}`,
      [...config, 'timeout'],
    );
  } else if (timeout !== undefined && timeout > MAX_JOIN_TIMEOUT_SECONDS) {
    // The timeout is a Wait state in the execution: past a year (a STANDARD execution's longest run;
    // Step Functions' Wait allows 99,999,999 s) the execution ends first and the timeout never fires.
    add(
      'INVALID_JOIN_TIMEOUT',
      `timeout must be at most ${MAX_JOIN_TIMEOUT_SECONDS.toLocaleString('en-US')} seconds (one year, the longest a STANDARD execution runs: a longer one could never fire), got ${timeout}`,
      [...config, 'timeout'],
    );
  }
}

function checkContextProcessor(node: NodeOfType<'CONTEXT_PROCESSOR'>, config: Path, add: Add): void {
  const { operation } = node.config;
  const at: Path = [...config, operation];
  const missing = (what: string): void =>
    add('MISSING_OPERATION_CONFIG', `operation "${operation}" needs ${what}`, at);
  // A node runs one operation: another operation's object would be silently ignored.
  for (const other of CONTEXT_OPERATIONS) {
    if (other !== operation && node.config[other] !== undefined) {
      add(
        'INVALID_NODE_CONFIG',
        `"${other}" is given but the operation is "${operation}", so it would be ignored: remove it, or use one CONTEXT_PROCESSOR node per operation`,
        [...config, other],
      );
    }
  }
  switch (operation) {
    case 'truncate': {
      const truncate = node.config.truncate;
      if (!truncate || Object.values(truncate).every((value) => value === undefined)) {
        missing('a "truncate" object with keepFirst, keepLast, removeFirst, removeLast or range');
      } else if (truncate.range && truncate.range.start > truncate.range.end) {
        add(
          'INVALID_NODE_CONFIG',
          `truncate range start (${truncate.range.start}) is after its end (${truncate.range.end})`,
          [...at, 'range'],
        );
      }
      break;
    }
    case 'insert':
      if (!node.config.insert) missing('an "insert" object with position and messages');
      else if (node.config.insert.messages.length === 0) missing('at least one message in "insert.messages"');
      break;
    case 'replace':
      if (!node.config.replace) missing('a "replace" object with index and message');
      break;
    case 'clear':
      // Every clear option has a default, but the object is still required so the intent is explicit (seed 003).
      if (!node.config.clear) missing('a "clear" object (e.g. { "keepSystemMessage": true })');
      break;
    case 'filter': {
      const filter = node.config.filter;
      const conditions = [filter?.roles, filter?.contentContains, filter?.contentExcludes];
      if (!conditions.some((condition) => condition !== undefined && condition.length > 0)) {
        missing('a "filter" object with at least one of roles, contentContains, contentExcludes');
      }
      for (const field of ['contentContains', 'contentExcludes'] as const) {
        filter?.[field]?.forEach((keyword, index) => {
          // Every content contains "": the condition would keep everything, or nothing.
          if (keyword === '')
            add('INVALID_NODE_CONFIG', `${field} keywords must not be empty`, [...at, field, index]);
        });
      }
      break;
    }
  }
}

/** A lone `{{ }}` dataSource whose value can never be iterated nor counted (`{{ len(x) > 0 }}`). */
function templateNeverIterable(value: unknown): boolean {
  if (typeof value !== 'string' || !isWholeTemplate(value)) return false;
  const known = staticTypeOfSource(value);
  return known !== 'unknown' && [...known].every((type) => type === 'boolean');
}

/** What a loop can go over (README, LOOP_START): a literal boolean or fraction can never be iterated. */

function isIterableDataSource(value: unknown): boolean {
  if (typeof value === 'boolean') return false;
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0;
  return true;
}

/**
 * A readonly variable with an initial value can never be written; one without is written once, so
 * only the run can tell a second write.
 */
function writesFixedValue(
  scope: NodeScope,
  name: string,
  declaredScope: VariableDeclaration['scope'],
): boolean {
  const declared = findDeclaration(scope.variables, name, declaredScope);
  return declared?.readonly === true && declared.initial !== undefined;
}

function outputVariableErrors(node: WorkflowNode, config: Path, scope: NodeScope): CodedError[] {
  const name = 'config' in node ? (node.config as { outputVariable?: unknown }).outputVariable : undefined;
  if (typeof name !== 'string') return [];
  if (writesFixedValue(scope, name, undefined)) {
    return [
      codedError(
        'INVALID_VARIABLE',
        `variable "${name}" is declared readonly with an initial value: outputVariable cannot set it`,
        [...config, 'outputVariable'],
        node.id,
      ),
    ];
  }
  const declared = findDeclaration(scope.variables, name, undefined)?.type;
  const writes = outputVariableType(node);
  if (declared === undefined || declared === 'any' || writes === undefined || writes === declared) return [];
  return [
    codedError(
      'INVALID_VARIABLE',
      `variable "${name}" is declared ${declared}, but ${writer(node)} always stores a ${writes} in it: declare it ${writes} or any, or store it in another variable`,
      [...config, 'outputVariable'],
      node.id,
    ),
  ];
}

function writer(node: WorkflowNode): string {
  return node.type === 'USER_INTERACTION'
    ? `an ${node.config.userInteractionType} node`
    : `an ${node.type} node`;
}

/** The type a node always writes to its outputVariable, when the node type fixes it. */
function outputVariableType(node: WorkflowNode): 'string' | 'boolean' | undefined {
  if (node.type === 'LLM') return 'string';
  if (node.type !== 'USER_INTERACTION') return undefined;
  // An approval stores true/false, a selection the chosen option; an input is any JSON.
  if (node.config.userInteractionType === 'ask_for_approval') return 'boolean';
  if (node.config.userInteractionType === 'ask_for_selection') return 'string';
  return undefined;
}

function variableNodeErrors(node: NodeOfType<'VARIABLE'>, config: Path, scope: NodeScope): CodedError[] {
  // The runtime evaluates the expression (a whole `{{ }}` template is accepted as one), never text around it.
  const errors = expressionErrors(node.config.expression, [...config, 'expression'], node.id);
  const { variableName, variableType } = node.config;
  // The same lookup the runtime's readonly and type checks use (an unscoped declaration is thread scope).
  const declared = findDeclaration(scope.variables, variableName, node.config.scope);
  if (writesFixedValue(scope, variableName, node.config.scope)) {
    errors.push(
      codedError(
        'INVALID_VARIABLE',
        `variable "${variableName}" is declared readonly with an initial value`,
        [...config, 'variableName'],
        node.id,
      ),
    );
  }
  const typeProblem = errors.length === 0 ? neverOfType(node.config.expression, variableType) : undefined;
  if (typeProblem !== undefined) {
    errors.push(
      codedError(
        'INVALID_VARIABLE',
        `node "${node.id}" sets "${variableName}" (variableType ${variableType}) to ${typeProblem}: change the expression or the variableType`,
        [...config, 'expression'],
        node.id,
      ),
    );
  }
  if (declared?.type && declared.type !== 'any' && variableType !== 'any' && declared.type !== variableType) {
    errors.push(
      codedError(
        'INVALID_VARIABLE',
        `variable "${variableName}" is declared as ${declared.type} but this node sets it as ${variableType}`,
        [...config, 'variableType'],
        node.id,
      ),
    );
  }
  return errors;
}

/**
 * A mapping whose expression can never be of the type its target is declared with: inputMapping
 * targets the child's own declarations, outputMapping the caller's.
 */
function mappingTypeErrors(node: NodeOfType<'SUBGRAPH'>, config: Path, scope: NodeScope): CodedError[] {
  const childDeclarations = (node.config.workflow.variables ?? []).filter((d) => d.scope !== 'global');
  const errors: CodedError[] = [];
  const check = (field: 'inputMapping' | 'outputMapping', declarations: readonly VariableDeclaration[]) => {
    for (const [name, expression] of Object.entries(node.config[field] ?? {})) {
      const declared = declarations.find((d) => d.name === name);
      const problem = neverOfType(expression, declared?.type);
      if (problem === undefined) continue;
      errors.push(
        codedError(
          'INVALID_VARIABLE',
          `${field} sets "${name}", declared ${declared?.type}${field === 'inputMapping' ? ' in the child workflow' : ''}, to ${problem}`,
          [...config, field, name],
          node.id,
        ),
      );
    }
  };
  check('inputMapping', childDeclarations);
  check('outputMapping', scope.variables);
  return errors;
}

/**
 * When a valid expression's value can never be of `type` (`'abc'` for a number), what it always is
 * ("always a string (the expression 'abc')"); undefined when it may fit, or is only known at run time.
 */
export function neverOfType(expression: string, type: VariableType | undefined): string | undefined {
  if (type === undefined || type === 'any') return undefined;
  const known = staticTypeOfSource(expression);
  if (known === 'unknown' || known.has(VALUE_TYPE_OF[type])) return undefined;
  return `${JSON.stringify(expression)}, which is always ${describeStaticType(known)}`;
}

function expressionErrors(expression: string, path: Path, nodeId: string): CodedError[] {
  const problem = validateExpression(expression);
  return problem ? [codedError('INVALID_EXPRESSION', problem.message, path, nodeId)] : [];
}

function templateErrors(value: unknown, path: Path, nodeId: string): CodedError[] {
  if (value === undefined) return [];
  return validateTemplate(value, formatPath(path)).map((problem) => ({
    code: 'INVALID_EXPRESSION' as const,
    message: problem.message,
    nodeId,
    ...(problem.path ? { path: problem.path } : {}),
  }));
}
