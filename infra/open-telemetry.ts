/**
 * OpenTelemetry on a deployed stack (docs/deploy.md, "Traces"): the variables the functions get, and
 * the check that they name a trace endpoint (else no function would export anything, silently).
 */
import { StepthreadError } from '../engine/errors.ts';
import { ENDPOINT_VARIABLES, telemetryConfig } from '../functions/telemetry/config.ts';

export interface OpenTelemetryProps {
  /**
   * `OTEL_*` variables for every function: `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`)
   * at least; `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` or
   * `http/json`), `OTEL_SERVICE_NAME`, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, … as needed.
   */
  readonly environment: Readonly<Record<string, string>>;
  /** Lambda layers every function gets, e.g. an ADOT collector layer that receives on localhost:4318. */
  readonly layerArns?: readonly string[];
}

/** The variables, checked: DEPLOY_CONFIG_INVALID unless they set a trace endpoint and only `OTEL_*` names. */
export function checkOpenTelemetry(props: OpenTelemetryProps): Record<string, string> {
  const environment = { ...props.environment };
  const others = Object.keys(environment).filter(
    (name) => !name.startsWith('OTEL_') && name !== 'OPENTELEMETRY_COLLECTOR_CONFIG_URI',
  );
  if (others.length > 0) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `openTelemetry.environment sets only OTEL_* variables (and OPENTELEMETRY_COLLECTOR_CONFIG_URI for an ADOT collector layer), not ${others.join(', ')}`,
    );
  }
  if (telemetryConfig(environment) === undefined) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `openTelemetry.environment must set ${ENDPOINT_VARIABLES.join(' or ')} (and not turn the SDK or the trace exporter off)`,
    );
  }
  return environment;
}

/**
 * The deploy options of the repository's app: `stepthread:otelEndpoint` (an OTLP/HTTP base URL),
 * `stepthread:otelEnvironment` (a JSON object of more `OTEL_*` variables) and `stepthread:otelLayers`
 * (layer ARNs, comma-separated). Undefined when none is given.
 */
export function openTelemetryFromContext(
  context: (key: string) => string | undefined,
): OpenTelemetryProps | undefined {
  const endpoint = context('otelEndpoint');
  const extra = context('otelEnvironment');
  const layers = context('otelLayers');
  if (endpoint === undefined && extra === undefined && layers === undefined) return undefined;
  let environment: Record<string, string> = {};
  if (extra !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(extra);
    } catch {
      parsed = undefined;
    }
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      Array.isArray(parsed) ||
      Object.values(parsed).some((value) => typeof value !== 'string')
    ) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        'stepthread:otelEnvironment must be a JSON object of string values, e.g. {"OTEL_EXPORTER_OTLP_HEADERS": "x-team=abc"}',
      );
    }
    environment = parsed as Record<string, string>;
  }
  if (endpoint !== undefined) environment.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  const layerArns = (layers ?? '')
    .split(',')
    .map((arn) => arn.trim())
    .filter(Boolean);
  const props: OpenTelemetryProps = { environment, ...(layerArns.length > 0 ? { layerArns } : {}) };
  checkOpenTelemetry(props);
  return props;
}
