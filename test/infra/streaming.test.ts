/**
 * The stack's AppSync Events API for streamed replies, synthesized with cdk-nag (any unacknowledged
 * finding fails the synth) and, where cfn-lint is on PATH, linted as `npm run test:cloud` lints: IAM
 * only, the LLM function alone may publish and only on the replies namespace, operators may connect
 * and subscribe and never publish, and the outputs `stepthread watch --stack` reads.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { StepthreadError } from '../../engine/errors.ts';
import { NODE_TYPES } from '../../engine/model/schema.ts';
import { buildApp } from '../../infra/app.ts';
import type { StepthreadStack } from '../../infra/stack.ts';
import { buildTestStack } from './helpers.ts';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

let stack: StepthreadStack;
let template: Template;
let resources: Record<string, Resource>;

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never);

/** Every statement of the policies attached to a role, or of a managed policy. */
function statementsOf(predicate: (resource: Resource) => boolean): Json[] {
  return Object.values(resources)
    .filter(predicate)
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Json[] }).Statement);
}
function roleStatements(roleId: string): Json[] {
  return statementsOf(
    (r) => r.Type === 'AWS::IAM::Policy' && (r.Properties.Roles as Json[]).some((ref) => ref.Ref === roleId),
  );
}
const actions = (statement: Json) =>
  Array.isArray(statement.Action) ? (statement.Action as string[]) : [statement.Action as string];

beforeAll(() => {
  ({ stack } = buildTestStack({ env: { account: '123456789012', region: 'eu-west-1' } }));
  template = Template.fromStack(stack); // runs cdk-nag
  resources = template.toJSON().Resources as Record<string, Resource>;
}, 60_000);

describe('streamed replies on a deployed stack', () => {
  it('creates one Events API, authorised by IAM alone, with the replies namespace', () => {
    const apis = ofType('AWS::AppSync::Api');
    expect(apis).toHaveLength(1);
    const iam = [{ AuthType: 'AWS_IAM' }];
    expect(apis[0]![1].Properties).toMatchObject({
      Name: 'stepthread-replies',
      EventConfig: {
        AuthProviders: iam,
        ConnectionAuthModes: iam,
        DefaultPublishAuthModes: iam,
        DefaultSubscribeAuthModes: iam,
      },
    });
    const namespaces = ofType('AWS::AppSync::ChannelNamespace');
    expect(namespaces.map(([, r]) => r.Properties.Name)).toEqual(['replies']);
    // No API key anywhere: nobody subscribes or publishes without IAM credentials.
    expect(ofType('AWS::AppSync::ApiKey')).toEqual([]);
  });

  it('lets the LLM function publish on the replies namespace and no function anything else of AppSync', () => {
    const apiId = logicalId(stack.streaming!.api);
    const namespaceArn = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':appsync:eu-west-1:123456789012:apis/',
          { 'Fn::GetAtt': [apiId, 'ApiId'] },
          '/channelNamespace/replies',
        ],
      ],
    };
    for (const type of NODE_TYPES) {
      const fn = resources[logicalId(stack.runtime.functionFor(type))]!;
      const role = (fn.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const appsync = roleStatements(role).filter((s) => actions(s).some((a) => a.startsWith('appsync:')));
      if (type !== 'LLM') {
        expect(appsync, type).toEqual([]);
        continue;
      }
      expect(appsync).toEqual([
        { Sid: 'PublishReplies', Effect: 'Allow', Action: 'appsync:EventPublish', Resource: namespaceArn },
      ]);
      expect((fn.Properties.Environment as { Variables: Json }).Variables).toMatchObject({
        STEPTHREAD_EVENTS_HTTP: { 'Fn::GetAtt': [apiId, 'Dns.Http'] },
        STEPTHREAD_EVENTS_NAMESPACE: 'replies',
      });
    }
  });

  it('lets operators connect and subscribe, never publish', () => {
    const apiId = logicalId(stack.streaming!.api);
    const operator = statementsOf((r) => r.Type === 'AWS::IAM::ManagedPolicy').filter((s) =>
      actions(s).some((a) => a.startsWith('appsync:')),
    );
    expect(operator.map((s) => [s.Sid, s.Action])).toEqual([
      ['WatchRepliesConnect', 'appsync:EventConnect'],
      ['WatchRepliesSubscribe', 'appsync:EventSubscribe'],
    ]);
    expect(JSON.stringify(operator[0]!.Resource)).toContain(`"${apiId}","ApiId"`);
    expect(JSON.stringify(operator[0]!.Resource)).not.toContain('channelNamespace');
    expect(JSON.stringify(operator[1]!.Resource)).toContain('/channelNamespace/replies');
  });

  it('outputs the HTTP and realtime domains and the namespace', () => {
    const apiId = logicalId(stack.streaming!.api);
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs.EventsHttpDomain?.Value).toEqual({ 'Fn::GetAtt': [apiId, 'Dns.Http'] });
    expect(outputs.EventsRealtimeDomain?.Value).toEqual({ 'Fn::GetAtt': [apiId, 'Dns.Realtime'] });
    expect(outputs.EventsNamespace?.Value).toBe('replies');
  });

  const cfnLint = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' }).status === 0;
  it.skipIf(!cfnLint)(
    'passes cfn-lint as test:cloud runs it',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'stepthread-streaming-lint-'));
      const file = join(dir, 'Stepthread.template.json');
      writeFileSync(file, JSON.stringify(template.toJSON()));
      // The same ignores as test/cloud/run.sh (each explained there).
      const lint = spawnSync(
        'cfn-lint',
        ['--non-zero-exit-code', 'error', '--ignore-checks', 'W3005', 'W3045', '--', file],
        { encoding: 'utf8' },
      );
      expect(lint.status, `${lint.stdout}${lint.stderr}`).toBe(0);
    },
    120_000,
  );
});

describe('streaming off', () => {
  const appWith = (context: Record<string, string>) =>
    new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });

  it('deploys no Events API, no grant and no output with -c stepthread:streaming=off', () => {
    const off = buildApp(appWith({ 'stepthread:streaming': 'off' }), {});
    expect(off.streaming).toBeUndefined();
    const json = JSON.stringify(Template.fromStack(off).toJSON());
    expect(json).not.toMatch(/AWS::AppSync|appsync:|STEPTHREAD_EVENTS_|EventsHttpDomain/);
  }, 60_000);

  it('refuses a value that is neither on nor off', () => {
    expect(() => buildApp(appWith({ 'stepthread:streaming': 'sometimes' }), {})).toThrow(StepthreadError);
    expect(() => buildApp(appWith({ 'stepthread:streaming': 'sometimes' }), {})).toThrow(
      /stepthread:streaming must be on or off/,
    );
  });
});
