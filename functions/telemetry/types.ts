/**
 * What a traced step hands the code it runs (HandlerDeps.telemetry): wrappers that put a span
 * around each model call and tool call, children of the step's span. Types only: no SDK.
 */
import type { Profile, ToolDefinition } from '../../engine/model/schema.ts';
import type { LlmProvider } from '../llm/provider.ts';
import type { ExecuteTool } from '../llm/tool-loop.ts';
import type { Redactor } from '../redaction/redactor.ts';

export interface StepTelemetry {
  /** The provider, with a span per model call (GenAI semantic conventions). */
  modelCalls(provider: LlmProvider, profile: Profile, nodeId: string): LlmProvider;
  /**
   * The tool calls of an LLM request, with a span each. `redactor` knows every secret the step's
   * tools resolved: what the spans of the step keep is redacted with it when the step ends.
   */
  toolCalls(
    execute: ExecuteTool,
    tools: Readonly<Record<string, ToolDefinition>>,
    redactor: Redactor | undefined,
  ): ExecuteTool;
  /** A TOOL node's call of its tool, with a span; `call` gives the tool's output or throws its failure. */
  toolNodeCall<T>(name: string, definition: ToolDefinition, call: () => Promise<T>): Promise<T>;
}
