/** Public entry for users' own CDK apps. */
export { type CompiledWorkflow, compileForDeploy } from './compile.ts';
export { HANDLER_SPECS, type HandlerSpec, substitutionKey } from './handler-registry.ts';
export { type LoadedWorkflow, loadWorkflowsFromDir } from './load-workflows.ts';
export { collectModelAccess, type ModelAccess } from './model-access.ts';
export { acknowledge, acknowledgeWildcardResources, addNagChecks, wildcardFinding } from './nag.ts';
export type { OpenTelemetryProps } from './open-telemetry.ts';
export { StepthreadRuntime, type StepthreadRuntimeProps } from './runtime.ts';
export { StepthreadStack, type StepthreadStackProps } from './stack.ts';
export { STREAMING_OUTPUT_NAMES, StepthreadStreaming, type StepthreadStreamingProps } from './streaming.ts';
export { collectToolAccess, type ToolAccess } from './tool-access.ts';
export {
  StepthreadWorkflow,
  type StepthreadWorkflowProps,
  toCdkEventPattern,
  type WorkflowExecutionType,
} from './workflow.ts';
export {
  ACCOUNT_QUOTAS,
  addStepthreadWorkflows,
  type StepthreadWorkflows,
  type StepthreadWorkflowsProps,
} from './workflow-set.ts';
