/**
 * The tracer: the OpenTelemetry SDK with an OTLP/HTTP exporter (protobuf, or JSON when
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), configured by the standard variables, which the exporter
 * and the provider read themselves (endpoint, headers, timeout, sampler, batch settings, resource
 * attributes). Imported only when a trace endpoint is set (index.ts).
 *
 * Spans are parented explicitly (no context manager): a step's from its envelope's `traceparent`,
 * a model or tool call's from its step. Model and tool spans end when their step ends, at the time
 * their call ended: by then the step's redactor knows every secret its tools resolved, and what the
 * spans keep (content, error messages) is redacted with it.
 */
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  RandomIdGenerator,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { JOIN_DECIDED_KEY } from '../../engine/asl/task-input.ts';
import { estimateTokens } from '../../engine/conversation/index.ts';
import type { CodedError } from '../../engine/errors.ts';
import type { Message, Profile, ToolDefinition } from '../../engine/model/schema.ts';
import { parseToolHandler } from '../../engine/model/tool-handler.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import { codedErrorFromAsl } from '../handlers/task.ts';
import type { LlmProvider, LlmRequest, LlmResponse } from '../llm/provider.ts';
import { resolveApiKey } from '../llm/secrets.ts';
import type { ExecuteTool, ToolOutcome } from '../llm/tool-loop.ts';
import { type Redactor, redactErrorText } from '../redaction/redactor.ts';
import type { TelemetryConfig } from './config.ts';
import type { TaskRun, Tracing } from './index.ts';
import { type TaskInfo, taskInfoOf } from './task-info.ts';
import { parseTraceparent, stepParentOf, type TraceParent, withTraceContext } from './trace-context.ts';
import type { StepTelemetry } from './types.ts';

/** GenAI semantic conventions (development status: written out rather than imported from `incubating`). */
const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  /** The older name of gen_ai.provider.name, which many backends still read. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  temperature: 'gen_ai.request.temperature',
  topP: 'gen_ai.request.top_p',
  maxTokens: 'gen_ai.request.max_tokens',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolDescription: 'gen_ai.tool.description',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  workflowName: 'gen_ai.workflow.name',
} as const;

/** stepthread's own attributes. */
const ST = {
  workflowId: 'stepthread.workflow.id',
  executionId: 'stepthread.execution.id',
  threadId: 'stepthread.thread.id',
  rootThreadId: 'stepthread.root_thread.id',
  nodeId: 'stepthread.node.id',
  nodeType: 'stepthread.node.type',
  action: 'stepthread.action',
  step: 'stepthread.step',
  attempt: 'stepthread.step.attempt',
  status: 'stepthread.step.status',
  errorCode: 'stepthread.error.code',
  runStatus: 'stepthread.run.status',
  cancelReason: 'stepthread.run.cancel_reason',
  usageEstimated: 'stepthread.usage.estimated',
  toolKind: 'stepthread.tool.kind',
} as const;

/** Span ids the next span takes (the run's span has ids every Task derives: trace-context.ts), else random ones. */
class PresetIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  #traceId: string | undefined;
  #spanId: string | undefined;

  preset(traceId: string | undefined, spanId: string): void {
    this.#traceId = traceId;
    this.#spanId = spanId;
  }

  generateTraceId(): string {
    const id = this.#traceId ?? this.#random.generateTraceId();
    this.#traceId = undefined;
    return id;
  }

  generateSpanId(): string {
    const id = this.#spanId ?? this.#random.generateSpanId();
    this.#spanId = undefined;
    return id;
  }
}

export function createTracing(config: TelemetryConfig): Tracing {
  const ids = new PresetIds();
  const exporter = config.protocol === 'http/json' ? new JsonTraceExporter() : new ProtobufTraceExporter();
  const provider = new BasicTracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    resource: defaultResource()
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'stepthread' }))
      .merge(detectResources({ detectors: [envDetector] })),
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('stepthread');
  return {
    config,
    step: (event, deps, run) => traceStep(tracer, ids, config, event, deps, run),
    runCancelled: (run, threads) =>
      emitRunSpan(
        tracer,
        ids,
        {
          action: 'cancel',
          executionId: run.executionId,
          rootThreadId: run.rootThreadId,
          ...(run.workflowId === undefined ? {} : { workflowId: run.workflowId }),
          traceContext: false,
        },
        { threads } as HandlerDeps,
        { status: 'CANCELLED', ...(run.reason === undefined ? {} : { reason: run.reason }) },
      ),
    async flush() {
      await provider.forceFlush().catch(() => undefined);
    },
    async shutdown() {
      await provider.shutdown().catch(() => undefined);
    },
  };
}

function contextOf(parent: TraceParent): Context {
  const span: SpanContext = {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.flags,
    isRemote: true,
  };
  return trace.setSpanContext(ROOT_CONTEXT, span);
}

function traceParentOf(span: Span): TraceParent {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return { traceId, spanId, flags: traceFlags };
}

function defined(attributes: Record<string, string | number | boolean | string[] | undefined>): Attributes {
  return Object.fromEntries(
    Object.entries(attributes).filter(([, value]) => value !== undefined),
  ) as Attributes;
}

function stepAttributes(info: TaskInfo, deps: HandlerDeps): Attributes {
  return defined({
    [ST.workflowId]: info.workflowId,
    [ST.executionId]: info.executionId,
    [ST.threadId]: info.threadId,
    [ST.rootThreadId]: info.rootThreadId,
    [ST.nodeId]: info.nodeId,
    [ST.nodeType]: info.nodeType,
    [ST.action]: info.action,
    [ST.step]: info.step === undefined ? undefined : info.step + 1,
    [ST.attempt]: deps.attempt,
  });
}

/** The coded error a Task's thrown error carries (a NodeFailed's message is the error as JSON). */
function codedErrorOf(error: unknown): CodedError | undefined {
  if (!(error instanceof Error)) return undefined;
  try {
    const parsed = JSON.parse(error.message) as Partial<CodedError>;
    if (typeof parsed.code === 'string' && typeof parsed.message === 'string') return parsed as CodedError;
  } catch {
    // Not a node failure: the error's name says what it is.
  }
  return undefined;
}

/** Errors the ASL routes as control flow: a join decided, or timed out, without this branch. */
const CONTROL_FLOW = new Set(['stepthread.JoinDecided', 'stepthread.JoinTimeout']);

/**
 * A join bookkeeping step that ended its fork: the timer's record, or a path's report that decided
 * (a result the definition routes on, not an error: functions/nodes/join.ts).
 */
function joinEndOf(action: string | undefined, result: unknown): string | undefined {
  if (action === 'timeout') return 'JOIN_TIMED_OUT';
  const decided = typeof result === 'object' && result !== null && JOIN_DECIDED_KEY in result;
  // A node's step that reported its path and decided (compile.ts) is the node's: COMPLETED.
  return decided && (action === 'branch-done' || action === 'branch-failed') ? 'JOIN_DECIDED' : undefined;
}

async function traceStep<R>(
  tracer: Tracer,
  ids: PresetIds,
  config: TelemetryConfig,
  event: unknown,
  deps: HandlerDeps,
  run: TaskRun<R>,
): Promise<R> {
  const info = taskInfoOf(event);
  const name = `${info.action === 'execute' ? 'step' : info.action} ${info.nodeId ?? 'unknown'}`;
  const span = tracer.startSpan(
    name,
    { attributes: stepAttributes(info, deps) },
    contextOf(stepParentOf(info)),
  );
  const children = new StepChildren(tracer, trace.setSpan(ROOT_CONTEXT, span), config);
  let runEnds: { status: 'COMPLETED' | 'FAILED'; error?: CodedError } | undefined;
  try {
    const result = await run(event, { ...deps, telemetry: children });
    const next = withTraceContext(info, result, true, traceParentOf(span));
    const step = (next as { step?: unknown }).step;
    if (typeof step === 'number') span.setAttribute(ST.step, step);
    span.setAttribute(ST.status, joinEndOf(info.action, next) ?? 'COMPLETED');
    if (info.action === 'execute' && info.nodeType === 'END') runEnds = { status: 'COMPLETED' };
    if (info.action === 'fail') {
      runEnds = { status: 'FAILED', error: codedErrorFromAsl(info.failure, info.nodeId) };
    }
    return next;
  } catch (error) {
    const name = error instanceof Error ? error.name : 'Error';
    if (CONTROL_FLOW.has(name)) {
      span.setAttribute(ST.status, name === 'stepthread.JoinTimeout' ? 'JOIN_TIMED_OUT' : 'JOIN_DECIDED');
    } else {
      const coded = codedErrorOf(error);
      span.setAttribute(ST.status, coded ? 'FAILED' : 'ERROR');
      span.setAttribute(ATTR_ERROR_TYPE, coded?.code ?? name);
      if (coded) span.setAttribute(ST.errorCode, coded.code);
      children.failStep(span, coded ? `${coded.code}: ${coded.message}` : name);
    }
    throw error;
  } finally {
    await children.finish();
    span.end();
    if (runEnds) await emitRunSpan(tracer, ids, info, deps, runEnds);
  }
}

/**
 * The run's span, when its last Task ends (END, or the failure Task): from the root thread's start to
 * now, with the ids every Task of the run took as their parent (its envelope's `traceparent`).
 */
async function emitRunSpan(
  tracer: Tracer,
  ids: PresetIds,
  info: TaskInfo,
  deps: HandlerDeps,
  outcome: { status: 'COMPLETED' | 'FAILED' | 'CANCELLED'; error?: CodedError; reason?: string },
): Promise<void> {
  const own = stepParentOf(info);
  let startTime: Date | undefined;
  let caller: TraceParent | undefined;
  try {
    const { thread } = await deps.threads.getThread(info.rootThreadId ?? info.threadId ?? '');
    startTime = new Date(thread.startTime);
    caller = parseTraceparent(thread.metadata.traceparent);
  } catch {
    // Without the thread the span starts now: it still ties the run's steps together.
  }
  ids.preset(caller ? undefined : own.traceId, own.spanId);
  const span = tracer.startSpan(
    `invoke_workflow ${info.workflowId ?? ''}`.trim(),
    {
      kind: SpanKind.INTERNAL,
      ...(startTime && !Number.isNaN(startTime.getTime()) ? { startTime } : {}),
      attributes: defined({
        [GEN_AI.operation]: 'invoke_workflow',
        [GEN_AI.workflowName]: info.workflowId,
        [ST.workflowId]: info.workflowId,
        [ST.executionId]: info.executionId,
        [ST.rootThreadId]: info.rootThreadId,
        [ST.runStatus]: outcome.status,
        [ST.cancelReason]: outcome.reason === undefined ? undefined : redactErrorText(outcome.reason),
        [ST.errorCode]: outcome.error?.code,
        [ATTR_ERROR_TYPE]: outcome.error?.code,
      }),
    },
    caller ? contextOf(caller) : ROOT_CONTEXT,
  );
  if (outcome.error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: redactErrorText(outcome.error.message) });
  }
  span.end();
}

const PROVIDER_NAMES: Record<Profile['provider'], string> = {
  openai: 'openai',
  bedrock: 'aws.bedrock',
  scripted: 'stepthread.scripted',
};

/** A span waiting for its step to end (see the module comment). */
interface Pending {
  readonly span: Span;
  readonly end: Date;
  /** Content and error text, set once redacted. */
  readonly text?: Record<string, string>;
  readonly errorMessage?: string;
}

/** A step's model and tool call spans (StepTelemetry), ended with the step. */
class StepChildren implements StepTelemetry {
  readonly #pending: Pending[] = [];
  readonly #redactors = new Set<Redactor>();
  readonly #secrets = new Set<string>();
  #stepError: { span: Span; message: string } | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly parent: Context,
    private readonly config: TelemetryConfig,
  ) {}

  modelCalls(provider: LlmProvider, profile: Profile, nodeId: string): LlmProvider {
    return { complete: (request) => this.#modelCall(provider, profile, nodeId, request) };
  }

  toolCalls(
    execute: ExecuteTool,
    tools: Readonly<Record<string, ToolDefinition>>,
    redactor: Redactor | undefined,
  ): ExecuteTool {
    if (redactor) this.#redactors.add(redactor);
    return async (name, args, context) => {
      const definition = Object.hasOwn(tools, name) ? tools[name] : undefined;
      const span = this.#toolSpan(name, definition, context.callId);
      let outcome: ToolOutcome;
      try {
        outcome = await execute(name, args, context);
      } catch (error) {
        this.#pending.push({ span, end: new Date(), errorMessage: messageOf(error) });
        span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(error));
        throw error;
      }
      const result = typeof outcome.content === 'string' ? outcome.content : JSON.stringify(outcome.content);
      if (!outcome.ok)
        span.setAttribute(ATTR_ERROR_TYPE, /^([A-Z][A-Z0-9_]*):/.exec(result ?? '')?.[1] ?? 'TOOL_FAILED');
      this.#pending.push({
        span,
        end: new Date(),
        ...(outcome.ok ? {} : { errorMessage: result ?? 'tool failed' }),
        text: this.config.captureContent
          ? { [GEN_AI.toolArguments]: JSON.stringify(args), [GEN_AI.toolResult]: result ?? 'null' }
          : {},
      });
      return outcome;
    };
  }

  async toolNodeCall<T>(name: string, definition: ToolDefinition, call: () => Promise<T>): Promise<T> {
    const span = this.#toolSpan(name, definition, undefined);
    try {
      const output = await call();
      this.#pending.push({
        span,
        end: new Date(),
        text: this.config.captureContent ? { [GEN_AI.toolResult]: JSON.stringify(output) ?? 'null' } : {},
      });
      return output;
    } catch (error) {
      span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(error));
      this.#pending.push({ span, end: new Date(), errorMessage: messageOf(error) });
      throw error;
    }
  }

  /** The step failed: its span's status message is redacted with the rest when the step ends. */
  failStep(span: Span, message: string): void {
    this.#stepError = { span, message };
  }

  /** Ends the step's spans, with their text redacted by every secret the step met. */
  async finish(): Promise<void> {
    const redact = (text: string): string => {
      let out = text;
      for (const redactor of this.#redactors) out = redactor.text(out);
      return redactErrorText(out, [...this.#secrets]);
    };
    for (const { span, end, text, errorMessage } of this.#pending) {
      for (const [key, value] of Object.entries(text ?? {})) span.setAttribute(key, redact(value));
      if (errorMessage !== undefined)
        span.setStatus({ code: SpanStatusCode.ERROR, message: redact(errorMessage) });
      span.end(end);
    }
    this.#pending.length = 0;
    if (this.#stepError) {
      this.#stepError.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: redact(this.#stepError.message),
      });
    }
  }

  #toolSpan(name: string, definition: ToolDefinition | undefined, callId: string | undefined): Span {
    const parsed = definition ? parseToolHandler(definition.handler) : undefined;
    const kind = parsed?.ok ? parsed.handler.kind : undefined;
    return this.tracer.startSpan(
      `execute_tool ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: defined({
          [GEN_AI.operation]: 'execute_tool',
          [GEN_AI.toolName]: name,
          [GEN_AI.toolCallId]: callId,
          // Code that runs in the step is a function; a call out (http, Lambda, MCP) an extension.
          [GEN_AI.toolType]: kind === undefined ? undefined : kind === 'code' ? 'function' : 'extension',
          [GEN_AI.toolDescription]: definition?.description,
          [ST.toolKind]: kind,
        }),
      },
      this.parent,
    );
  }

  async #modelCall(
    provider: LlmProvider,
    profile: Profile,
    nodeId: string,
    request: LlmRequest,
  ): Promise<LlmResponse> {
    const model = profile.provider === 'scripted' ? 'scripted' : profile.model;
    const parameters = { ...profileParameters(profile), ...request.parameters };
    const span = this.tracer.startSpan(
      `chat ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: defined({
          [GEN_AI.operation]: 'chat',
          [GEN_AI.provider]: PROVIDER_NAMES[profile.provider],
          [GEN_AI.system]: PROVIDER_NAMES[profile.provider],
          [GEN_AI.requestModel]: model,
          [GEN_AI.temperature]: numberOf(parameters.temperature),
          [GEN_AI.topP]: numberOf(parameters.top_p ?? parameters.topP),
          [GEN_AI.maxTokens]: numberOf(parameters.max_tokens ?? parameters.maxTokens),
          [ATTR_SERVER_ADDRESS]: profile.provider === 'openai' ? hostOf(profile.baseUrl) : undefined,
          [ST.nodeId]: nodeId,
        }),
      },
      this.parent,
    );
    const input = this.config.captureContent
      ? JSON.stringify(request.messages.map(semconvMessage))
      : undefined;
    let response: LlmResponse;
    try {
      response = await provider.complete(request);
    } catch (error) {
      await this.#noteApiKey(profile);
      span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(error));
      this.#pending.push({
        span,
        end: new Date(),
        errorMessage: messageOf(error),
        ...(input === undefined ? {} : { text: { [GEN_AI.inputMessages]: input } }),
      });
      throw error;
    }
    await this.#noteApiKey(profile);
    const reply = response.message;
    const finishReason = response.finishReason ?? (reply.toolCalls?.length ? 'tool_calls' : 'stop');
    // What the tool loop records when the provider reports no usage: the same estimate.
    const usage = response.usage ?? {
      promptTokens: estimateTokens(request.messages),
      completionTokens: estimateTokens([reply]),
    };
    span.setAttributes(
      defined({
        [GEN_AI.inputTokens]: usage.promptTokens,
        [GEN_AI.outputTokens]: usage.completionTokens,
        [GEN_AI.finishReasons]: [finishReason],
        [ST.usageEstimated]: response.usage === undefined ? true : undefined,
      }),
    );
    this.#pending.push({
      span,
      end: new Date(),
      ...(input === undefined
        ? {}
        : {
            text: {
              [GEN_AI.inputMessages]: input,
              [GEN_AI.outputMessages]: JSON.stringify([
                { ...semconvMessage(reply), finish_reason: finishReason },
              ]),
            },
          }),
    });
    return response;
  }

  /** An OpenAI-compatible profile's API key, to redact (the provider has it cached by now). */
  async #noteApiKey(profile: Profile): Promise<void> {
    if (profile.provider !== 'openai') return;
    const key = await resolveApiKey(profile, process.env).catch(() => undefined);
    if (key !== undefined && key.length >= 4) this.#secrets.add(key);
  }
}

function profileParameters(profile: Profile): Record<string, unknown> {
  const parameters = (profile as { parameters?: unknown }).parameters;
  return typeof parameters === 'object' && parameters !== null ? (parameters as Record<string, unknown>) : {};
}

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function hostOf(url: string | undefined): string | undefined {
  if (url === undefined) return 'api.openai.com';
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function errorTypeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'Error';
}

/** A conversation message in the GenAI conventions' shape (`gen_ai.input.messages`). */
function semconvMessage(message: Message): Record<string, unknown> {
  const parts: Record<string, unknown>[] = [];
  if (message.role === 'tool') {
    parts.push({ type: 'tool_call_response', id: message.toolCallId ?? null, response: message.content });
  } else if (message.content !== '') {
    parts.push({ type: 'text', content: message.content });
  }
  for (const call of message.toolCalls ?? []) {
    parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: call.arguments });
  }
  return { role: message.role, parts };
}
