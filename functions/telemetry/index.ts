/**
 * OpenTelemetry traces of runs (docs/architecture.md, "Traces"). The hooks the handlers call, which
 * load nothing: the SDK and the exporter (otel.ts) are imported only once a trace endpoint is set
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
 *
 * Spans: one per run (`invoke_workflow <workflow>`, emitted when the run ends), one per Task
 * (`step <node>`, parent the run's span, or on a fork branch or Map item its FORK's step), one per
 * model call (`chat <model>`) and one per tool call (`execute_tool <tool>`), children of their step.
 */
import type { Profile, ToolDefinition } from '../../engine/model/schema.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import type { LlmProvider } from '../llm/provider.ts';
import type { ExecuteTool } from '../llm/tool-loop.ts';
import type { Redactor } from '../redaction/redactor.ts';
import type { ThreadStore } from '../stores/thread-store.ts';
import { type TelemetryConfig, telemetryConfig } from './config.ts';
import { taskInfoOf } from './task-info.ts';
import { withTraceContext } from './trace-context.ts';

export type { StepTelemetry } from './types.ts';

/** A Task run by the dispatch: its input in, the next envelope out. */
export type TaskRun<R> = (event: unknown, deps: HandlerDeps) => Promise<R>;

/** The loaded tracer (otel.ts). */
export interface Tracing {
  readonly config: TelemetryConfig;
  /** Runs the Task inside its step span (and, for the Task that ends the run, emits the run's span). */
  step<R>(event: unknown, deps: HandlerDeps, run: TaskRun<R>): Promise<R>;
  /** The run's span for a run cancelled outside its Tasks (`stepthread cancel`, dev's Stop). */
  runCancelled(run: CancelledRun, threads: ThreadStore): Promise<void>;
  /** Exports every span ended so far. Never rejects. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let loaded: { key: string; tracing: Promise<Tracing> } | undefined;

/** Whether this process exports traces (a trace endpoint is set): the compiler carries the context then. */
export function tracingConfigured(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return telemetryConfig(env) !== undefined;
}

/** The tracer for the current environment, loaded on first use; undefined (nothing loaded) without an endpoint. */
export function currentTracing(): Promise<Tracing | undefined> | undefined {
  const config = telemetryConfig(process.env);
  if (config === undefined) return undefined;
  if (loaded?.key !== config.key) {
    const previous = loaded?.tracing;
    loaded = {
      key: config.key,
      tracing: (async () => {
        // Settings changed (tests point the exporter elsewhere): the old tracer sends what it holds first.
        await previous?.then((tracing) => tracing.shutdown());
        return (await import('./otel.ts')).createTracing(config);
      })(),
    };
  }
  return loaded.tracing;
}

/**
 * Runs one Task: inside its step span when tracing, and either way with the trace context its
 * envelope carries passed on (trace-context.ts).
 */
export async function tracedTask<R>(event: unknown, deps: HandlerDeps, run: TaskRun<R>): Promise<R> {
  const tracing = await currentTracing();
  if (tracing !== undefined) return tracing.step(event, deps, run);
  const result = await run(event, deps);
  return carriesTraceContext(event) ? withTraceContext(taskInfoOf(event), result, false) : result;
}

/** A Task of a run that carries a trace context (a traced one, or a definition compiled for it). */
function carriesTraceContext(event: unknown): boolean {
  const e = event as { traceContext?: unknown; envelope?: { traceparent?: unknown } } | null;
  return e?.traceContext === true || typeof e?.envelope?.traceparent === 'string';
}

/** A run ended by a cancel: what its run span names. */
export interface CancelledRun {
  readonly executionId: string;
  readonly rootThreadId: string;
  readonly workflowId?: string;
  readonly reason?: string;
}

/**
 * The run span of a cancelled run (status CANCELLED, the reason), exported at once: no END or failure
 * Task ends such a run, so without it its steps would point at a run span that never arrives.
 * Nothing is loaded without a trace endpoint. Never rejects: a cancel never fails for its trace.
 */
export async function traceCancelledRun(run: CancelledRun, threads: ThreadStore): Promise<void> {
  try {
    const tracing = await currentTracing();
    if (tracing === undefined) return;
    await tracing.runCancelled(run, threads);
    await tracing.flush();
  } catch {
    // The trace is best effort; the cancel itself has happened.
  }
}

/** Exports the spans ended so far (a Lambda before it returns, a local run as it ends). Never rejects. */
export async function flushTracing(): Promise<void> {
  const tracing = await loaded?.tracing.catch(() => undefined);
  await tracing?.flush();
}

/** The step's provider with a span per model call, or the provider itself when the step is not traced. */
export function tracedModelCalls(
  deps: Pick<HandlerDeps, 'telemetry'>,
  provider: LlmProvider,
  profile: Profile,
  nodeId: string,
): LlmProvider {
  return deps.telemetry ? deps.telemetry.modelCalls(provider, profile, nodeId) : provider;
}

/** An LLM request's tool calls with a span each, or unchanged when the step is not traced. */
export function tracedToolCalls(
  deps: Pick<HandlerDeps, 'telemetry'>,
  execute: ExecuteTool,
  tools: Readonly<Record<string, ToolDefinition>>,
  redactor?: Redactor,
): ExecuteTool {
  return deps.telemetry ? deps.telemetry.toolCalls(execute, tools, redactor) : execute;
}

/** A TOOL node's call with a span, or just the call when the step is not traced. */
export function tracedToolNodeCall<T>(
  deps: Pick<HandlerDeps, 'telemetry'>,
  name: string,
  definition: ToolDefinition,
  call: () => Promise<T>,
): Promise<T> {
  return deps.telemetry ? deps.telemetry.toolNodeCall(name, definition, call) : call();
}
