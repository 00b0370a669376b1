/**
 * When stepthread exports traces: the standard OpenTelemetry variables, read without loading any of
 * the SDK (a process without them pays nothing). OTLP over HTTP only: `http/protobuf` (the default)
 * or `http/json`.
 */

type Env = Readonly<Record<string, string | undefined>>;

export const ENDPOINT_VARIABLES = [
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
] as const;
export const CAPTURE_CONTENT_VARIABLE = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TelemetryConfig {
  /** Prompt, reply, tool argument and result text go on the spans (redacted): opt-in. */
  readonly captureContent: boolean;
  readonly protocol: OtlpProtocol;
  /** What the exporter reads from the environment, to notice a change (tests point it elsewhere). */
  readonly key: string;
}

function set(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== '';
}

/** The settings, or undefined when no trace endpoint is set (or the SDK or trace export is turned off). */
export function telemetryConfig(env: Env): TelemetryConfig | undefined {
  if (!ENDPOINT_VARIABLES.some((name) => set(env[name]))) return undefined;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  const captureContent = env[CAPTURE_CONTENT_VARIABLE]?.trim().toLowerCase() === 'true';
  const key = Object.entries(env)
    .filter(([name]) => name.startsWith('OTEL_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${value}`)
    .join('\n');
  return { captureContent, protocol: protocol === 'http/json' ? 'http/json' : 'http/protobuf', key };
}
