/**
 * Tools declared in the workflow file (`lambda`, `http`, `code`, `builtin`), argument-checked and
 * executed by kind. TOOL nodes call one with rendered arguments; LLM nodes offer them to the model.
 */
export { checkToolParameters } from './arguments.ts';
export { createToolExecutor, toolResultText } from './executor.ts';
export { DEFAULT_HTTP_TIMEOUT_MS } from './http.ts';
export { DEFAULT_LAMBDA_TIMEOUT_MS, type ModuleToolContext } from './lambda.ts';
export { createLambdaInvoker, type LambdaInvokerOptions } from './lambda-invoker.ts';
export { DEFAULT_MAX_OUTPUT_BYTES } from './output.ts';
export { type ToolRequirements, toolRequirements } from './requirements.ts';
export {
  SECRET_PREFIX_VARIABLE,
  type ToolRuntime,
  toolRuntimeFromEnv,
  WORKFLOW_DIR_VARIABLE,
} from './runtime.ts';
export {
  envSecrets,
  type SecretsManagerLike,
  type SecretsManagerOptions,
  secretsManagerSecrets,
} from './secrets.ts';
export { toolSpecsForModel } from './specs.ts';
export { callToolForNode, type ToolNodeCall } from './tool-node.ts';
export type {
  LambdaInvoker,
  SecretResolver,
  ToolEnvironment,
  ToolError,
  ToolExecutor,
  ToolExecutorOptions,
  ToolResult,
  ToolSpec,
} from './types.ts';
