/**
 * `retentionDays` in the synthesized stack: TTL on the table, a lifecycle rule on `map/` only (never on
 * the shared segments and values), the setting in every function's environment, and END allowed to
 * list a run's threads; cdk-nag stays clean (synthesising runs it). Without it, nothing expires.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { retentionSetting } from '../../infra/app.ts';
import type { StepthreadStack } from '../../infra/stack.ts';
import { buildTestStack } from './helpers.ts';

type Json = Record<string, unknown>;
let stack: StepthreadStack;
let resources: Record<string, { Type: string; Properties: Json }>;

beforeAll(() => {
  ({ stack } = buildTestStack({ env: { account: '123456789012', region: 'eu-west-1' }, retentionDays: 30 }));
  resources = Template.fromStack(stack).toJSON().Resources;
}, 60_000);

const idOf = (construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never);

describe('retentionDays: 30', () => {
  it('keeps TTL on the table and expires only map/ in the conversation bucket', () => {
    expect(resources[idOf(stack.runtime.table)]!.Properties.TimeToLiveSpecification).toEqual({
      AttributeName: 'expiresAt',
      Enabled: true,
    });
    const rules = (
      resources[idOf(stack.runtime.bucket)]!.Properties.LifecycleConfiguration as { Rules: Json[] }
    ).Rules;
    expect(rules).toEqual([
      {
        Id: 'abort-incomplete-uploads',
        Status: 'Enabled',
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
      },
      { Id: 'expire-fork-item-lists', Status: 'Enabled', Prefix: 'map/', ExpirationInDays: 30 },
    ]);
  });

  it('gives every function the setting, and END (which ends runs) a Query of the index to find their threads', () => {
    const functions = Object.values(resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Description).startsWith('stepthread '),
    );
    expect(functions.length).toBeGreaterThan(10);
    for (const fn of functions) {
      expect((fn.Properties.Environment as { Variables: Json }).Variables.STEPTHREAD_RETENTION_DAYS).toBe(
        '30',
      );
    }
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Json[] }).Statement)
      .filter((statement) => statement.Sid === 'ListThreadsOfEndedRuns');
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatchObject({ Effect: 'Allow', Action: 'dynamodb:Query' });
    expect(JSON.stringify(statements[0]!.Resource)).toContain('/index/gsi1');
    const endRole = (
      resources[idOf(stack.runtime.functionFor('END'))]!.Properties.Role as { 'Fn::GetAtt': string[] }
    )['Fn::GetAtt'][0];
    const endPolicy = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::IAM::Policy' &&
        JSON.stringify(r.Properties.Roles).includes(endRole!) &&
        JSON.stringify(r.Properties).includes('ListThreadsOfEndedRuns'),
    );
    expect(endPolicy).toBeDefined();
  });

  it('reads stepthread:retentionDays (or STEPTHREAD_RETENTION_DAYS) as whole days from 1', () => {
    expect(retentionSetting(undefined)).toEqual({});
    expect(retentionSetting('')).toEqual({});
    expect(retentionSetting('30')).toEqual({ retentionDays: 30 });
    for (const bad of ['0', '-1', '2.5', '30d', 'forever']) {
      expect(() => retentionSetting(bad), bad).toThrow(
        expect.objectContaining({ code: 'DEPLOY_CONFIG_INVALID' }),
      );
    }
  });
});
