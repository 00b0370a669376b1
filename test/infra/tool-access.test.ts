/** Tool permissions of the LLM and TOOL functions, SSM API keys, and the sandbox worker beside bundles. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { NODE_TYPES, type NodeType, type Workflow } from '../../engine/model/schema.ts';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { HANDLER_SPECS, PROJECT_ROOT } from '../../infra/handler-registry.ts';
import { sandboxWorkerHooks } from '../../infra/sandbox-bundling.ts';
import type { StepthreadStack } from '../../infra/stack.ts';
import { collectToolAccess } from '../../infra/tool-access.ts';
import { buildTestStack } from './helpers.ts';

type Json = Record<string, unknown>;

function valid(data: unknown): Workflow {
  const result = validateWorkflow(data);
  if (!result.valid || !result.workflow) throw new Error(JSON.stringify(result.errors, null, 2));
  return result.workflow;
}

const ARN = 'arn:aws:lambda:eu-west-1:123456789012:function:crm-lookup';

/** An LLM offering a lambda (by ARN) and an http tool with a secret; a TOOL calling a lambda by name; a subgraph TOOL. */
const toolsWorkflow = valid({
  id: 'with-tools',
  version: 1,
  profiles: {
    default: {
      provider: 'openai',
      model: 'm',
      baseUrl: 'https://llm.example',
      apiKeySsmParameter: '/llm/key',
    },
  },
  tools: {
    crm: { description: 'crm', handler: `lambda:${ARN}` },
    weather: {
      description: 'weather',
      handler: {
        kind: 'http',
        url: 'https://weather.example/{{args.city}}',
        headers: { authorization: 'Bearer {{secrets.WEATHER_TOKEN}}' },
      },
    },
    billing: { description: 'billing', handler: { kind: 'lambda', arn: 'billing-fn' } },
    unused: { description: 'never called', handler: { kind: 'lambda', arn: 'unused-fn' } },
  },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'agent', type: 'LLM', config: { prompt: 'hi', tools: ['crm', 'weather'] } },
    { id: 'bill', type: 'TOOL', config: { toolName: 'billing' } },
    {
      id: 'sub',
      type: 'SUBGRAPH',
      config: {
        workflow: {
          id: 'child',
          version: 1,
          tools: {
            audit: {
              description: 'audit',
              handler: {
                kind: 'http',
                url: 'https://audit.example',
                headers: { 'x-key': '{{secrets.AUDIT_KEY}}' },
              },
            },
          },
          nodes: [
            { id: 's', type: 'START' },
            { id: 'log', type: 'TOOL', config: { toolName: 'audit' } },
            { id: 'e', type: 'END' },
          ],
          edges: [
            { from: 's', to: 'log' },
            { from: 'log', to: 'e' },
          ],
        },
      },
    },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'agent' },
    { from: 'agent', to: 'bill' },
    { from: 'bill', to: 'sub' },
    { from: 'sub', to: 'end' },
  ],
});

describe('collectToolAccess', () => {
  it('gives each handler exactly the functions and secrets of the tools its nodes use', () => {
    expect(collectToolAccess([toolsWorkflow])).toEqual({
      LLM: { lambdaArns: [ARN], secretNames: ['WEATHER_TOKEN'] },
      TOOL: { lambdaArns: ['billing-fn'], secretNames: ['AUDIT_KEY'] },
    });
  });
});

describe('synthesised permissions', () => {
  let stack: StepthreadStack;
  let resources: Record<string, { Type: string; Properties: Json }>;
  beforeAll(() => {
    // Synthesis runs cdk-nag: an unacknowledged AwsSolutions finding throws here.
    ({ stack } = buildTestStack({
      env: { account: '123456789012', region: 'eu-west-1' },
      workflows: [{ file: 'with-tools.json', workflow: toolsWorkflow }],
    }));
    resources = Template.fromStack(stack).toJSON().Resources;
  });

  function statements(type: NodeType): Json[] {
    const fnId = stack.getLogicalId(stack.runtime.functionFor(type).node.defaultChild as never);
    const roleId = (resources[fnId]!.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    return Object.values(resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && (r.Properties.Roles as Json[]).some((x) => x.Ref === roleId),
      )
      .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Json[] }).Statement);
  }
  /** The statement with its resources as plain text (the partition is a token: read it as `aws`). */
  const bySid = (type: NodeType, sid: string): Json | undefined => {
    const found = statements(type).find((s) => s.Sid === sid);
    return found && { ...found, Resource: arnText(found.Resource) };
  };
  function arnText(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(arnText);
    const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
    if (!join) return value;
    return join[1]
      .map((part) => ((part as Json)?.Ref === 'AWS::Partition' ? 'aws' : String(part)))
      .join(join[0]);
  }

  it('lets LLM and TOOL invoke their tools’ functions and read their secrets, nothing more', () => {
    expect(bySid('LLM', 'ToolFunctions')).toMatchObject({ Action: 'lambda:InvokeFunction', Resource: ARN });
    expect(bySid('LLM', 'ToolSecrets')).toMatchObject({
      Action: 'secretsmanager:GetSecretValue',
      Resource: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:WEATHER_TOKEN-??????',
    });
    expect(bySid('TOOL', 'ToolFunctions')?.Resource).toBe(
      'arn:aws:lambda:eu-west-1:123456789012:function:billing-fn',
    );
    expect(bySid('TOOL', 'ToolSecrets')?.Resource).toBe(
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AUDIT_KEY-??????',
    );
    for (const type of NODE_TYPES.filter((t) => t !== 'LLM' && t !== 'TOOL')) {
      const actions = statements(type).flatMap((s) => s.Action);
      expect(actions, type).not.toContain('lambda:InvokeFunction');
    }
    // The TOOL function never writes the conversation (it reads segments only for large outputs).
    const segments = statements('TOOL').find((s) => s.Sid === 'ConversationSegments');
    expect(segments?.Action).toBe('s3:GetObject');
  });

  it('lets the LLM function read the profiles’ SSM API-key parameters', () => {
    expect(bySid('LLM', 'ProfileParameters')).toMatchObject({
      Action: 'ssm:GetParameter',
      Resource: 'arn:aws:ssm:eu-west-1:123456789012:parameter/llm/key',
    });
    expect(bySid('TOOL', 'ProfileParameters')).toBeUndefined();
  });
});

describe('sandbox worker bundling', () => {
  it('ships the worker with exactly the handlers that run the sandbox', () => {
    const withWorker = NODE_TYPES.filter((type) => HANDLER_SPECS[type].sandboxWorker);
    expect(withWorker.sort()).toEqual(['CODE', 'LLM', 'TOOL']);
  });

  it('writes sandbox-worker.mjs into the bundle directory after bundling', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepthread worker '));
    const [command] = sandboxWorkerHooks().afterBundling(PROJECT_ROOT, outdir);
    execFileSync('bash', ['-c', command!], { stdio: 'ignore' });
    expect(existsSync(join(outdir, 'sandbox-worker.mjs'))).toBe(true);
  }, 30_000);
});
