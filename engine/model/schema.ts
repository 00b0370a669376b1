/**
 * The workflow file: the public contract. Types are inferred from these zod schemas and the
 * committed JSON Schema (workflow.schema.json) is generated from them, so there is one source of truth.
 *
 * The schemas check structure only. Rules with their own error codes (fork path ids, join
 * thresholds, graph shape, ...) live in engine/validation so every violation gets its code.
 */
import * as z from 'zod';

export const NODE_TYPES = [
  'START',
  'END',
  'VARIABLE',
  'CODE',
  'FORK',
  'JOIN',
  'ROUTE',
  'LOOP_START',
  'LOOP_END',
  'LLM',
  'TOOL',
  'USER_INTERACTION',
  'CONTEXT_PROCESSOR',
  'SUBGRAPH',
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export const MESSAGE_ROLES = ['system', 'user', 'assistant', 'tool'] as const;
export const VARIABLE_SCOPES = ['global', 'thread', 'subgraph', 'loop'] as const;
export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'array', 'object', 'any'] as const;
export const JOIN_STRATEGIES = [
  'ALL_COMPLETED',
  'ANY_COMPLETED',
  'ALL_FAILED',
  'ANY_FAILED',
  'SUCCESS_COUNT_THRESHOLD',
] as const;
export const FORK_STRATEGIES = ['serial', 'parallel'] as const;
export const CONTEXT_OPERATIONS = ['truncate', 'insert', 'replace', 'clear', 'filter'] as const;
export const USER_INTERACTION_TYPES = [
  'ask_for_approval',
  'ask_for_input',
  'ask_for_selection',
  'show_message',
] as const;
export const HOOK_TYPES = ['BEFORE_EXECUTE', 'AFTER_EXECUTE'] as const;

const id = z.string().min(1).max(128);
/** A `{{path}}` template or an expression, evaluated by engine/expression. */
const expression = z.string().max(4096);
const jsonRecord = z.record(z.string(), z.unknown());

export const toolCallSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
});

export const messageSchema = z.object({
  role: z.enum(MESSAGE_ROLES),
  content: z.string(),
  name: z.string().optional(),
  toolCalls: z.array(toolCallSchema).optional(),
  toolCallId: z.string().optional(),
});

export const hookSchema = z.object({
  hookType: z.enum(HOOK_TYPES),
  /** Event name emitted when the hook fires (recorded as a HOOK_TRIGGERED event). */
  eventName: z.string().min(1),
  /** Payload template; strings may hold `{{path}}` templates. */
  eventPayload: jsonRecord.optional(),
  /** Expression; the hook fires only when it is truthy. */
  condition: expression.optional(),
  /** Higher weight runs first. */
  weight: z.number().int().optional(),
  enabled: z.boolean().optional(),
});

const base = {
  id,
  name: z.string().optional(),
  description: z.string().optional(),
  hooks: z.array(hookSchema).optional(),
};

export const startConfigSchema = z.object({}).strict();
export const endConfigSchema = z.object({
  /** Workflow output; strings may hold `{{path}}` templates over variables and node results. */
  output: z.unknown().optional(),
});

export const variableConfigSchema = z.object({
  variableName: z.string().min(1),
  variableType: z.enum(VARIABLE_TYPES),
  expression,
  scope: z.enum(VARIABLE_SCOPES).optional(),
  readonly: z.boolean().optional(),
});

export const codeConfigSchema = z.object({
  /** JavaScript source of a function body; `input` holds variables and node inputs; its return value is the output. */
  code: z.string().min(1),
  language: z.literal('javascript').optional(),
  timeoutMs: z.number().int().positive().max(900_000).optional(),
  memoryLimitMb: z.number().int().positive().max(1024).optional(),
  /** Extra inputs: name → expression. */
  inputs: z.record(z.string(), expression).optional(),
  outputVariable: z.string().optional(),
});

export const FORK_MODES = ['inline', 'distributed'] as const;

export const forkConfigSchema = z.object({
  forkPathIds: z.array(id),
  /** Required on a FORK over paths; a FORK over a list (forEach) without it runs `parallel` (forkStrategyOf). */
  forkStrategy: z.enum(FORK_STRATEGIES).optional(),
  childNodeIds: z.array(id),
  /**
   * Fan out over data: a `{{ }}` template or expression giving an array (a large value by reference
   * included). Each item runs the one path as its own child thread, forkPathId `<pathId>[<index>]`.
   */
  forEach: z.string().min(1).max(4096).optional(),
  /** The item's name in its thread scope (default `item`); its index is `<itemVariable>Index`. */
  itemVariable: z.string().min(1).max(128).optional(),
  /** How many items run at once (0 or absent: as many as Step Functions allows). */
  maxConcurrency: z.number().int().optional(),
  /** `inline` (default): a Map state. `distributed`: a Distributed Map over an item list in S3. */
  mode: z.enum(FORK_MODES).optional(),
});

export const joinConfigSchema = z.object({
  forkPathIds: z.array(id),
  joinStrategy: z.enum(JOIN_STRATEGIES),
  threshold: z.number().int().optional(),
  /** Seconds; 0 (default) waits forever. */
  timeout: z.number().optional(),
  mainPathId: id.optional(),
  /** A FORK over a list: the item (index) whose conversation the parent continues with; absent, the parent keeps its own. */
  mainItem: z.number().int().optional(),
});

export const routeConfigSchema = z.object({
  routes: z.array(
    z.object({
      condition: expression,
      targetNodeId: id,
      /** Higher priority is tried first; ties keep declaration order. */
      priority: z.number().int().optional(),
    }),
  ),
  defaultTargetNodeId: id.optional(),
});

export const loopStartConfigSchema = z.object({
  loopId: id,
  /**
   * What to iterate: an array, object (its entries), number (a count) or string (its characters),
   * given literally or as an expression string such as `{{items}}`. Absent: counted up to maxIterations.
   */
  dataSource: z.unknown().optional(),
  /** Loop-scope variable that holds the current item (default `item`); `index` holds the position. */
  iterationVariable: z.string().optional(),
  maxIterations: z.number().int(),
});

export const loopEndConfigSchema = z.object({
  loopId: id,
  /** Expression; the loop exits when it is truthy. */
  breakCondition: expression.optional(),
});

export const llmConfigSchema = z.object({
  profileId: id.optional(),
  /** Rendered with `{{path}}` templates and appended as a user message. */
  prompt: z.string(),
  systemPrompt: z.string().optional(),
  parameters: jsonRecord.optional(),
  /** Names of tools declared in the workflow's `tools`. */
  tools: z.array(z.string()).optional(),
  maxToolCallsPerRequest: z.number().int().nonnegative().optional(),
  outputVariable: z.string().optional(),
  /** Over the profile's tokenLimit: `fail` the node (default) or `continue` after the event. */
  onTokenLimit: z.enum(['fail', 'continue']).optional(),
});

export const toolNodeConfigSchema = z.object({
  toolName: z.string().min(1),
  /** Arguments; strings may hold `{{path}}` templates. */
  arguments: jsonRecord.optional(),
  outputVariable: z.string().optional(),
});

export const userInteractionConfigSchema = z.object({
  userInteractionType: z.enum(USER_INTERACTION_TYPES),
  showMessage: z.string().optional(),
  /** Answers the interaction at once (no waiting). */
  userInput: z.unknown().optional(),
  /** Choices for ask_for_selection. */
  options: z.array(z.string()).optional(),
  timeoutSeconds: z.number().int().positive().optional(),
  outputVariable: z.string().optional(),
});

export const truncateSchema = z.object({
  keepFirst: z.number().int().nonnegative().optional(),
  keepLast: z.number().int().nonnegative().optional(),
  removeFirst: z.number().int().nonnegative().optional(),
  removeLast: z.number().int().nonnegative().optional(),
  range: z.object({ start: z.number().int().nonnegative(), end: z.number().int().nonnegative() }).optional(),
});
export const insertSchema = z.object({
  /** Visible position to insert at; -1 appends at the end. */
  position: z.number().int().min(-1),
  messages: z.array(messageSchema),
});
export const replaceSchema = z.object({
  /** Index among the visible messages. */
  index: z.number().int().nonnegative(),
  message: messageSchema,
});
export const clearSchema = z.object({ keepSystemMessage: z.boolean().optional() });
export const filterSchema = z.object({
  roles: z.array(z.enum(MESSAGE_ROLES)).optional(),
  contentContains: z.array(z.string()).optional(),
  contentExcludes: z.array(z.string()).optional(),
});

export const contextProcessorConfigSchema = z.object({
  version: z.number().int().optional(),
  operation: z.enum(CONTEXT_OPERATIONS),
  truncate: truncateSchema.optional(),
  insert: insertSchema.optional(),
  replace: replaceSchema.optional(),
  clear: clearSchema.optional(),
  filter: filterSchema.optional(),
});

export const variableDeclarationSchema = z.object({
  name: z.string().min(1),
  type: z.enum(VARIABLE_TYPES).optional(),
  scope: z.enum(VARIABLE_SCOPES).optional(),
  initial: z.unknown().optional(),
  readonly: z.boolean().optional(),
  description: z.string().optional(),
});

/**
 * List prices of a profile's model, in US dollars per million tokens (README "Cost and limits"):
 * overrides the built-in table (functions/llm/prices.ts), and prices a model the table lacks.
 */
export const pricingSchema = z.object({
  inputPerMTok: z.number().nonnegative().max(1_000_000),
  outputPerMTok: z.number().nonnegative().max(1_000_000),
});

/**
 * What one run may spend, counted over its whole tree (fork children, list items, subgraphs,
 * continuations): model tokens, dollars (tokens at the profiles' prices) and tool calls. Each optional.
 */
export const budgetSchema = z.object({
  maxTokens: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  maxCostUsd: z.number().positive().max(1_000_000_000).optional(),
  maxToolCalls: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
});

export const scriptedProfileSchema = z.object({
  provider: z.literal('scripted'),
  responses: z.array(z.unknown()).optional(),
  byNode: z.record(z.string(), z.array(z.unknown())).optional(),
  delayMs: z.number().int().nonnegative().optional(),
  /** Each reply comes a word at a time, this many ms apart, streamed to whoever watches (run, dev). */
  streamChunkMs: z.number().int().nonnegative().max(60_000).optional(),
  tokenLimit: z.number().int().positive().optional(),
  pricing: pricingSchema.optional(),
});
/**
 * An OpenAI-compatible server's address, an absolute http(s) URL: `localhost:11434/v1` would read as
 * the scheme `localhost:` and fail every request only as the run reaches the model.
 */
const serverUrl = z.string().refine(isHttpUrl, {
  error: (issue) => {
    const given = String(issue.input);
    const meant =
      isHttpUrl(`http://${given}`) && !given.includes('://') ? `; did you mean "http://${given}"?` : '';
    return `baseUrl must be an http:// or https:// URL such as "http://localhost:11434/v1", got ${JSON.stringify(given)}${meant}`;
  },
});

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol, host } = new URL(value);
  return (protocol === 'http:' || protocol === 'https:') && host !== '';
}

export const openaiProfileSchema = z.object({
  provider: z.literal('openai'),
  model: z.string(),
  baseUrl: serverUrl.optional(),
  /** Name of the environment variable (locally) or secret (on AWS) holding the API key. */
  apiKeyEnv: z.string().optional(),
  /** Secrets Manager secret id (name or ARN): a plain key, or JSON with an `apiKey` field. */
  apiKeySecret: z.string().optional(),
  /** SSM parameter name (SecureString, read with decryption) holding the API key. */
  apiKeySsmParameter: z.string().optional(),
  parameters: jsonRecord.optional(),
  tokenLimit: z.number().int().positive().optional(),
  pricing: pricingSchema.optional(),
  /** Per-attempt request timeout in milliseconds (default 60000). */
  timeoutMs: z.number().int().positive().optional(),
  /** Retries of transient failures (429, 5xx, timeouts), default 3. */
  maxRetries: z.number().int().nonnegative().max(10).optional(),
});
export const bedrockProfileSchema = z.object({
  provider: z.literal('bedrock'),
  model: z.string(),
  region: z.string().optional(),
  parameters: jsonRecord.optional(),
  tokenLimit: z.number().int().positive().optional(),
  pricing: pricingSchema.optional(),
  /** Per-attempt request timeout in milliseconds (default 60000). */
  timeoutMs: z.number().int().positive().optional(),
  /** Retries of transient failures (throttling, 5xx, timeouts), default 3. */
  maxRetries: z.number().int().nonnegative().max(10).optional(),
});
export const profileSchema = z.discriminatedUnion('provider', [
  scriptedProfileSchema,
  openaiProfileSchema,
  bedrockProfileSchema,
]);

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const BUILTIN_TOOLS = ['echo'] as const;

/**
 * Short string forms of a tool handler (engine/model/tool-handler.ts reads them):
 * `lambda:<function ARN or name>`, `module:<path>[#export]`, `builtin:<name>`.
 */
export const TOOL_HANDLER_STRING_PATTERN = `^(lambda:.+|module:[^#]+(#[A-Za-z_$][\\w$]*)?|builtin:(${BUILTIN_TOOLS.join('|')}))$`;
const toolTimeoutMs = z.number().int().positive().max(900_000);

/**
 * Invokes a Lambda function by ARN (on AWS), or calls an export of a local module (the embedded
 * runtime; the path is relative to the workflow file's folder). Module code is trusted: it is not sandboxed.
 */
export const lambdaToolHandlerSchema = z.strictObject({
  kind: z.literal('lambda'),
  arn: z.string().min(1).optional(),
  module: z.string().min(1).optional(),
  /** Export of `module` to call; default `handler`. */
  export: z.string().min(1).optional(),
  timeoutMs: toolTimeoutMs.optional(),
});
/**
 * A JSON request. `url` and `headers` are templates over `args` and `secrets` (`{{secrets.NAME}}`);
 * the url's scheme, host and port are literal text (no template before the path).
 */
export const httpToolHandlerSchema = z.strictObject({
  kind: z.literal('http'),
  url: z.string().min(1),
  /** Default POST. GET and DELETE send the arguments as the query string, the others as a JSON body. */
  method: z.enum(HTTP_METHODS).optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /** Default 30000. */
  timeoutMs: toolTimeoutMs.optional(),
  /**
   * Let the tool reach loopback, link-local and private addresses (an internal service, a server on
   * this machine). Default false: only public addresses are called, checked on the resolved address.
   */
  allowPrivateNetwork: z.boolean().optional(),
});
/** JavaScript run in the CODE sandbox with `input` = the arguments; its return value is the output. */
export const codeToolHandlerSchema = z.strictObject({
  kind: z.literal('code'),
  code: z.string().min(1),
  timeoutMs: toolTimeoutMs.optional(),
  memoryLimitMb: z.number().int().positive().max(1024).optional(),
});
/**
 * One tool (`tool`) or every tool (no `tool`; `tools` narrows them) of a Model Context Protocol
 * server: a remote one over Streamable HTTP (`url`), or, locally only, one started as a process that
 * speaks over stdio (`command`). `url`, `headers` and `env` are templates over `secrets` only
 * (`{{secrets.NAME}}`); the url's scheme, host and port are literal text.
 */
export const mcpToolHandlerSchema = z.strictObject({
  kind: z.literal('mcp'),
  /** The server's Streamable HTTP endpoint, e.g. `https://mcp.example.com/mcp`. */
  url: z.string().min(1).optional(),
  /** A stdio server (`run` and `dev` only, never deployed): the program, then its arguments. */
  command: z.array(z.string().min(1)).min(1).optional(),
  /** Environment variables of a stdio server (beside a minimal inherited set: PATH, HOME, ...). */
  env: z.record(z.string(), z.string()).optional(),
  /** The server's tool this entry calls. Absent: the entry offers LLM nodes every tool, as `<entry>_<tool>`. */
  tool: z.string().min(1).optional(),
  /** Without `tool`: offer only these tools of the server. */
  tools: z.array(z.string().min(1)).min(1).optional(),
  /** Sent with every request to a `url` server. */
  headers: z.record(z.string(), z.string()).optional(),
  /** Per request (connect, list, call); default 30000. */
  timeoutMs: toolTimeoutMs.optional(),
  /** As for http tools: let a `url` server be on a loopback, link-local or private address. */
  allowPrivateNetwork: z.boolean().optional(),
});
/** Tools built into stepthread: `echo` returns its arguments (demos and tests). */
export const builtinToolHandlerSchema = z.strictObject({
  kind: z.literal('builtin'),
  name: z.enum(BUILTIN_TOOLS),
});
export const toolHandlerObjectSchema = z.discriminatedUnion('kind', [
  lambdaToolHandlerSchema,
  httpToolHandlerSchema,
  codeToolHandlerSchema,
  builtinToolHandlerSchema,
  mcpToolHandlerSchema,
]);

export const toolSchema = z.object({
  /** What the model reads about the tool. Required, except for `mcp` tools (the server's own by default). */
  description: z.string().optional(),
  /** JSON Schema of the arguments (an object schema); they are checked against it before every call. */
  parameters: jsonRecord.optional(),
  handler: z.union([z.string().regex(new RegExp(TOOL_HANDLER_STRING_PATTERN)), toolHandlerObjectSchema]),
  /**
   * An LLM node stops before calling this tool until a person approves the call: `true` for every
   * call, or an expression over the call's `args` (`"args.amount > 100"`) for the calls it holds for.
   */
  requiresApproval: z.union([z.boolean(), z.string().min(1)]).optional(),
});

export const edgeSchema = z.object({ from: id, to: id });

export const triggerSchema = z.object({
  /** An EventBridge event pattern. */
  eventPattern: jsonRecord,
  description: z.string().optional(),
});

const node = <T extends NodeType, C extends z.ZodType>(type: T, config: C) =>
  z.object({ ...base, type: z.literal(type), config });

export const startNodeSchema = node('START', startConfigSchema.optional());
export const endNodeSchema = node('END', endConfigSchema.optional());
export const variableNodeSchema = node('VARIABLE', variableConfigSchema);
export const codeNodeSchema = node('CODE', codeConfigSchema);
export const forkNodeSchema = node('FORK', forkConfigSchema);
export const joinNodeSchema = node('JOIN', joinConfigSchema);
export const routeNodeSchema = node('ROUTE', routeConfigSchema);
export const loopStartNodeSchema = node('LOOP_START', loopStartConfigSchema);
export const loopEndNodeSchema = node('LOOP_END', loopEndConfigSchema);
export const llmNodeSchema = node('LLM', llmConfigSchema);
export const toolNodeSchema = node('TOOL', toolNodeConfigSchema);
export const userInteractionNodeSchema = node('USER_INTERACTION', userInteractionConfigSchema);
export const contextProcessorNodeSchema = node('CONTEXT_PROCESSOR', contextProcessorConfigSchema);

export interface SubgraphConfig {
  /** The inlined child workflow. */
  workflow: Workflow;
  /** Child variable → expression over the parent's variables. */
  inputMapping?: Record<string, string>;
  /** Parent variable → expression over the child's variables. */
  outputMapping?: Record<string, string>;
}

export const subgraphConfigSchema: z.ZodType<SubgraphConfig> = z.lazy(() =>
  z.object({
    workflow: workflowSchema,
    inputMapping: z.record(z.string(), expression).optional(),
    outputMapping: z.record(z.string(), expression).optional(),
  }),
);
export const subgraphNodeSchema = node('SUBGRAPH', subgraphConfigSchema);

export const nodeSchema = z.discriminatedUnion('type', [
  startNodeSchema,
  endNodeSchema,
  variableNodeSchema,
  codeNodeSchema,
  forkNodeSchema,
  joinNodeSchema,
  routeNodeSchema,
  loopStartNodeSchema,
  loopEndNodeSchema,
  llmNodeSchema,
  toolNodeSchema,
  userInteractionNodeSchema,
  contextProcessorNodeSchema,
  subgraphNodeSchema,
]);

export const DEFAULT_MAX_STEPS = 1000;

export const workflowSchema = z.object({
  $schema: z.string().optional(),
  id: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, - and _, at most 64, starting alnum'),
  version: z.number().int().positive(),
  description: z.string().optional(),
  /** Upper bound on node executions in one run (default 1000). */
  maxSteps: z.number().int().positive().optional(),
  /** What one run may spend (tokens, dollars, tool calls); `run --budget` overrides it per run. */
  budget: budgetSchema.optional(),
  variables: z.array(variableDeclarationSchema).optional(),
  profiles: z.record(z.string(), profileSchema).optional(),
  tools: z.record(z.string(), toolSchema).optional(),
  triggers: z.array(triggerSchema).optional(),
  nodes: z.array(nodeSchema),
  edges: z.array(edgeSchema).optional(),
});

export type Message = z.infer<typeof messageSchema>;
export type MessageRole = Message['role'];
export type ToolCall = z.infer<typeof toolCallSchema>;
export type Hook = z.infer<typeof hookSchema>;
export type VariableScope = (typeof VARIABLE_SCOPES)[number];
export type VariableType = (typeof VARIABLE_TYPES)[number];
export type JoinStrategy = (typeof JOIN_STRATEGIES)[number];
export type ForkStrategy = (typeof FORK_STRATEGIES)[number];
export type ContextOperation = (typeof CONTEXT_OPERATIONS)[number];
export type UserInteractionType = (typeof USER_INTERACTION_TYPES)[number];

export type VariableConfig = z.infer<typeof variableConfigSchema>;
export type CodeConfig = z.infer<typeof codeConfigSchema>;
export type ForkConfig = z.infer<typeof forkConfigSchema>;

/**
 * How a FORK runs its branches. A FORK over paths must say (validation refuses it otherwise, seed
 * 001); a FORK over a list defaults to `parallel`, a Map whose maxConcurrency is the limit.
 */
export function forkStrategyOf(config: Pick<ForkConfig, 'forkStrategy'>): ForkStrategy {
  return config.forkStrategy ?? 'parallel';
}
export type JoinConfig = z.infer<typeof joinConfigSchema>;
export type RouteConfig = z.infer<typeof routeConfigSchema>;
export type LoopStartConfig = z.infer<typeof loopStartConfigSchema>;
export type LoopEndConfig = z.infer<typeof loopEndConfigSchema>;
export type LlmConfig = z.infer<typeof llmConfigSchema>;
export type ToolNodeConfig = z.infer<typeof toolNodeConfigSchema>;
export type UserInteractionConfig = z.infer<typeof userInteractionConfigSchema>;
export type ContextProcessorConfig = z.infer<typeof contextProcessorConfigSchema>;
export type TruncateConfig = z.infer<typeof truncateSchema>;
export type InsertConfig = z.infer<typeof insertSchema>;
export type ReplaceConfig = z.infer<typeof replaceSchema>;
export type ClearConfig = z.infer<typeof clearSchema>;
export type FilterConfig = z.infer<typeof filterSchema>;

export type WorkflowNode = z.infer<typeof nodeSchema>;
export type NodeOfType<T extends NodeType> = Extract<WorkflowNode, { type: T }>;
export type Edge = z.infer<typeof edgeSchema>;
export type Profile = z.infer<typeof profileSchema>;
export type Pricing = z.infer<typeof pricingSchema>;
export type Budget = z.infer<typeof budgetSchema>;
export type ToolDefinition = z.infer<typeof toolSchema>;
export type ToolHandlerObject = z.infer<typeof toolHandlerObjectSchema>;
export type LambdaToolHandler = z.infer<typeof lambdaToolHandlerSchema>;
export type HttpToolHandler = z.infer<typeof httpToolHandlerSchema>;
export type CodeToolHandler = z.infer<typeof codeToolHandlerSchema>;
export type BuiltinToolHandler = z.infer<typeof builtinToolHandlerSchema>;
export type McpToolHandler = z.infer<typeof mcpToolHandlerSchema>;
export type HttpMethod = (typeof HTTP_METHODS)[number];
export type BuiltinToolName = (typeof BUILTIN_TOOLS)[number];
export type VariableDeclaration = z.infer<typeof variableDeclarationSchema>;
export type Trigger = z.infer<typeof triggerSchema>;

// Declared as an interface (not inferred) because SUBGRAPH makes the schema recursive.
export interface Workflow {
  $schema?: string;
  id: string;
  version: number;
  description?: string;
  maxSteps?: number;
  budget?: Budget;
  variables?: VariableDeclaration[];
  profiles?: Record<string, Profile>;
  tools?: Record<string, ToolDefinition>;
  triggers?: Trigger[];
  nodes: WorkflowNode[];
  edges?: Edge[];
}
