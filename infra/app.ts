/**
 * The CDK app (`cdk.json`: `npx tsx infra/app.ts`): deploys every workflow file under a folder.
 *
 * Context (`-c key=value`) or environment:
 *   stepthread:workflowsDir  / STEPTHREAD_WORKFLOWS_DIR   folder of workflow files (default `examples`)
 *   stepthread:stackName     / STEPTHREAD_STACK_NAME      (default `Stepthread`)
 *   stepthread:namePrefix                                  physical name prefix (default `stepthread`)
 *   stepthread:express                                     workflow ids to deploy as EXPRESS (comma list)
 *   stepthread:removalPolicy                               `retain` (default) or `destroy` (dev, LocalStack)
 *   stepthread:continueAfterEvents / STEPTHREAD_CONTINUE_AFTER_EVENTS
 *                                      continue-as-new threshold in history events (default 20000; `off`)
 *   stepthread:reservedConcurrency                         reserved concurrency per node type, `LLM=50,TOOL=20`
 *   stepthread:streaming                                   `off` (or `false`): no AppSync Events API for streamed
 *                                      replies (default on; infra/streaming.ts)
 *   stepthread:otelEndpoint                                OTLP/HTTP endpoint the functions export traces to
 *   stepthread:otelEnvironment                             JSON object of more OTEL_* variables for them
 *   stepthread:otelLayers                                  layer ARNs for every function (an ADOT collector)
 *   stepthread:retentionDays / STEPTHREAD_RETENTION_DAYS   days an ended run is kept (default: forever)
 *   stepthread:stdioServers                                a workflow needing a stdio MCP server (local only):
 *                                      `skip` (default: left out, with a warning) or `refuse` (the deploy stops)
 *   stepthread:verboseBundling / STEPTHREAD_VERBOSE_BUNDLING
 *                                      `true`: esbuild reports each bundle (default: errors only)
 *
 * An invalid workflow file (or setting) stops the app with its coded errors on stderr and exit 1,
 * without a stack trace: the message says everything there is to fix.
 */
import { resolve } from 'node:path';
import { App, RemovalPolicy } from 'aws-cdk-lib';
import { CONTINUE_AFTER_EVENTS_ENV, continueAfterEventsFromEnv } from '../engine/asl/continuation.ts';
import { StepthreadError } from '../engine/errors.ts';
import { NODE_TYPES, type NodeType } from '../engine/model/schema.ts';
import { PROJECT_ROOT } from './handler-registry.ts';
import { loadWorkflowsFromDir } from './load-workflows.ts';
import { addNagChecks } from './nag.ts';
import { openTelemetryFromContext } from './open-telemetry.ts';
import { VERBOSE_BUNDLING_CONTEXT } from './runtime.ts';
import { StepthreadStack } from './stack.ts';

export function buildApp(app: App = new App(), env: NodeJS.ProcessEnv = process.env): StepthreadStack {
  const context = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(`stepthread:${key}`);
    return value === undefined || value === null ? undefined : String(value);
  };
  if (env.STEPTHREAD_VERBOSE_BUNDLING && app.node.tryGetContext(VERBOSE_BUNDLING_CONTEXT) === undefined)
    app.node.setContext(VERBOSE_BUNDLING_CONTEXT, env.STEPTHREAD_VERBOSE_BUNDLING);
  const dir = resolve(PROJECT_ROOT, context('workflowsDir') ?? env.STEPTHREAD_WORKFLOWS_DIR ?? 'examples');
  const removal = context('removalPolicy') ?? 'retain';
  if (removal !== 'retain' && removal !== 'destroy') {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `stepthread:removalPolicy must be retain or destroy, not ${removal}`,
    );
  }
  const stdioServers = context('stdioServers') ?? 'skip';
  if (stdioServers !== 'skip' && stdioServers !== 'refuse') {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `stepthread:stdioServers must be skip or refuse, not ${stdioServers}`,
    );
  }
  const streaming = context('streaming') ?? 'on';
  if (!/^(on|off|true|false)$/i.test(streaming)) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `stepthread:streaming must be on or off, not ${streaming}`,
    );
  }
  const threshold = context('continueAfterEvents');
  const continueAfterEvents = continueAfterEventsFromEnv(
    threshold === undefined ? env : { [CONTINUE_AFTER_EVENTS_ENV]: threshold },
  );
  const openTelemetry = openTelemetryFromContext(context);
  const stack = new StepthreadStack(app, context('stackName') ?? env.STEPTHREAD_STACK_NAME ?? 'Stepthread', {
    description: 'stepthread: LLM-agent workflows as Step Functions state machines',
    env: { account: env.CDK_DEFAULT_ACCOUNT, region: env.CDK_DEFAULT_REGION },
    workflows: loadWorkflowsFromDir(dir, { stdioServers }),
    expressWorkflows: (context('express') ?? '')
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean),
    removalPolicy: removal === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    streaming: /^(on|true)$/i.test(streaming),
    ...(context('namePrefix') ? { namePrefix: context('namePrefix')! } : {}),
    ...(continueAfterEvents === undefined ? {} : { continueAfterEvents }),
    ...(context('reservedConcurrency')
      ? { reservedConcurrency: parseReservedConcurrency(context('reservedConcurrency')!) }
      : {}),
    ...(openTelemetry ? { openTelemetry } : {}),
    ...retentionSetting(context('retentionDays') ?? env.STEPTHREAD_RETENTION_DAYS),
  });
  addNagChecks(app);
  return stack;
}

/** `stepthread:retentionDays`: a whole number of days from 1; unset or empty keeps runs forever. */
export function retentionSetting(text: string | undefined): { retentionDays?: number } {
  if (text === undefined || text.trim() === '') return {};
  if (!/^[1-9]\d*$/.test(text.trim())) {
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      `stepthread:retentionDays must be a whole number of days from 1 (unset: keep runs forever), not "${text}"`,
    );
  }
  return { retentionDays: Number(text.trim()) };
}

/** `LLM=50,TOOL=20`: a whole number of at least 1 per node type named. */
export function parseReservedConcurrency(text: string): Partial<Record<NodeType, number>> {
  const reserved: Partial<Record<NodeType, number>> = {};
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const [type, count] = entry.split('=').map((part) => part.trim());
    if (!NODE_TYPES.includes(type as NodeType) || !/^[1-9]\d*$/.test(count ?? '')) {
      throw new StepthreadError(
        'DEPLOY_CONFIG_INVALID',
        `stepthread:reservedConcurrency entry "${entry}": expected <node type>=<whole number ≥ 1>, node types ${NODE_TYPES.join(', ')}`,
      );
    }
    reserved[type as NodeType] = Number(count);
  }
  return reserved;
}

// Run as the CDK app (not when imported by tests); App synthesises on exit when the CLI runs it.
if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  try {
    buildApp();
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    process.stderr.write(`stepthread: ${error.code}: ${error.message}\n`);
    process.exitCode = 1;
  }
}
