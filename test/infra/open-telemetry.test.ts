/**
 * OpenTelemetry on a deployed stack (issue 27): the deploy options put the `OTEL_*` variables and
 * layers on every function, and the state machines carry the trace context into fork branches and
 * Map items; without them nothing changes. A setting that would export nothing is a coded error.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/app.ts';

const appWith = (context: Record<string, string>) =>
  new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });

const LAYER = 'arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1';

function synthesized(context: Record<string, string>) {
  const template = Template.fromStack(buildApp(appWith(context), {}));
  // The node functions: not CDK's BucketDeployment handler (Python), which stores the node tables.
  const functions = Object.values(template.findResources('AWS::Lambda::Function'))
    .filter((fn) => String(fn.Properties.Runtime).startsWith('nodejs'))
    .map(
      (fn) => fn.Properties as { Environment?: { Variables?: Record<string, unknown> }; Layers?: unknown[] },
    );
  const definitions = Object.values(template.findResources('AWS::StepFunctions::StateMachine'))
    .map((sm) => JSON.stringify(sm.Properties.DefinitionString))
    .join('\n');
  return { functions, definitions };
}

describe('OpenTelemetry deploy options', () => {
  it('give every function the variables and layers, and the definitions the trace context', () => {
    const { functions, definitions } = synthesized({
      'stepthread:workflowsDir': 'examples',
      'stepthread:otelEndpoint': 'http://localhost:4318',
      'stepthread:otelEnvironment': JSON.stringify({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OPENTELEMETRY_COLLECTOR_CONFIG_URI: '/opt/collector-config/config.yaml',
      }),
      'stepthread:otelLayers': LAYER,
    });
    expect(functions.length).toBeGreaterThan(5);
    for (const fn of functions) {
      expect(fn.Environment?.Variables).toMatchObject({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        STEPTHREAD_TARGET: 'aws',
      });
      expect(fn.Layers).toEqual([LAYER]);
    }
    expect(definitions).toContain(String.raw`\"traceparent.$\":\"$.fork.traceparent\"`);
    expect(definitions).toContain(String.raw`\"traceContext\":true`);
  });

  it('change nothing when not given', () => {
    const { functions, definitions } = synthesized({ 'stepthread:workflowsDir': 'examples' });
    for (const fn of functions) {
      expect(Object.keys(fn.Environment?.Variables ?? {}).filter((name) => name.startsWith('OTEL_'))).toEqual(
        [],
      );
      expect(fn.Layers).toBeUndefined();
    }
    expect(definitions).not.toContain('traceparent');
  });

  it('refuse settings that would export nothing, with a code', () => {
    const contexts: Record<string, string>[] = [
      { 'stepthread:otelLayers': LAYER },
      { 'stepthread:otelEnvironment': '{"OTEL_SERVICE_NAME": "agents"}' },
      { 'stepthread:otelEnvironment': '["not", "an object"]' },
      { 'stepthread:otelEndpoint': 'http://localhost:4318', 'stepthread:otelEnvironment': '{"PATH": "/x"}' },
    ];
    for (const context of contexts) {
      expect(
        () => buildApp(appWith({ 'stepthread:workflowsDir': 'examples', ...context }), {}),
        JSON.stringify(context),
      ).toThrow(expect.objectContaining({ code: 'DEPLOY_CONFIG_INVALID' }));
    }
  });
});
