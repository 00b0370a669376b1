/**
 * Deploy scale: many workflows must fit CloudFormation's per-stack quotas (500 resources, 200 outputs,
 * 200 parameters, 1 MB template through S3) and EventBridge's 2,048-character pattern limit. The app
 * spreads workflows over nested stacks when they do not fit beside the runtime.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LoadedWorkflow } from '../../infra/load-workflows.ts';
import { valid } from '../e2e/helpers.ts';
import { buildTestStack, testApp } from './helpers.ts';

/** `count` small workflows; every tenth has a trigger (a rule, a dead-letter queue and its policy). */
function manyWorkflows(count: number): LoadedWorkflow[] {
  return Array.from({ length: count }, (_unused, i) => {
    const id = `flow-${String(i).padStart(3, '0')}`;
    return {
      file: `${id}.json`,
      workflow: valid({
        id,
        version: 1,
        ...(i % 10 === 0
          ? { triggers: [{ eventPattern: { source: ['scale.test'], 'detail-type': [id] } }] }
          : {}),
        nodes: [
          { id: 'start', type: 'START' },
          { id: 'work', type: 'CODE', config: { code: 'return 1' } },
          { id: 'end', type: 'END' },
        ],
        edges: [
          { from: 'start', to: 'work' },
          { from: 'work', to: 'end' },
        ],
      }),
    };
  });
}

interface TemplateJson {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[] }>;
  Outputs?: Record<string, unknown>;
  Parameters?: Record<string, unknown>;
}

/** Every template of the synthesized assembly (the stack and its nested stacks), by file name. */
function synthesized(count: number): Map<string, { json: TemplateJson; bytes: number }> {
  const outdir = mkdtempSync(join(tmpdir(), 'stepthread-scale-'));
  const { app } = buildTestStack({ workflows: manyWorkflows(count) }, testApp(outdir));
  app.synth();
  const templates = new Map<string, { json: TemplateJson; bytes: number }>();
  for (const file of readdirSync(outdir).filter((name) => name.endsWith('.template.json'))) {
    const text = readFileSync(join(outdir, file), 'utf8');
    // What CloudFormation receives is the minified body.
    templates.set(file, {
      json: JSON.parse(text) as TemplateJson,
      bytes: JSON.stringify(JSON.parse(text)).length,
    });
  }
  return templates;
}

function expectWithinQuotas(templates: Map<string, { json: TemplateJson; bytes: number }>): void {
  for (const [file, { json, bytes }] of templates) {
    expect(Object.keys(json.Resources).length, file).toBeLessThanOrEqual(500);
    expect(Object.keys(json.Outputs ?? {}).length, file).toBeLessThanOrEqual(200);
    expect(Object.keys(json.Parameters ?? {}).length, file).toBeLessThanOrEqual(200);
    expect(bytes, file).toBeLessThanOrEqual(1_000_000);
    for (const [id, resource] of Object.entries(json.Resources)) {
      if (resource.Type === 'AWS::Events::Rule') {
        expect(JSON.stringify(resource.Properties?.EventPattern).length, `${file} ${id}`).toBeLessThanOrEqual(
          2048,
        );
      }
      if (resource.Type === 'AWS::IAM::ManagedPolicy') {
        // Managed policies are limited to 6,144 characters (whitespace excluded).
        expect(JSON.stringify(resource.Properties?.PolicyDocument).length, `${file} ${id}`).toBeLessThan(
          6144,
        );
      }
    }
  }
}

const stateMachines = (templates: Map<string, { json: TemplateJson }>) =>
  [...templates.values()].reduce(
    (n, { json }) =>
      n + Object.values(json.Resources).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine').length,
    0,
  );

describe('deploy scale', () => {
  it('150 workflows: every event pattern and the operator policy stay within their limits', () => {
    const templates = synthesized(150);
    expectWithinQuotas(templates);
    expect(stateMachines(templates)).toBe(150);
  }, 240_000);

  it('300 workflows spread over nested stacks, each within every per-stack quota', () => {
    const templates = synthesized(300);
    expectWithinQuotas(templates);
    expect(stateMachines(templates)).toBe(300);
    const nested = [...templates.keys()].filter((file) => file.includes('.nested.'));
    // The parent stack and 5 nested stacks: each workflow is 6 resources or more (its state machine
    // version and alias among them) within a nested stack's budget of 400 (docs/deploy.md, "Limits and quotas").
    expect(nested).toHaveLength(5);
    // Each nested stack (its state machines) is deployed once the node tables are stored.
    const parent = [...templates.values()].find(({ json }) =>
      Object.values(json.Resources).some((r) => r.Type === 'Custom::CDKBucketDeployment'),
    )!.json;
    const deployment = Object.keys(parent.Resources).find(
      (id) => parent.Resources[id]!.Type === 'Custom::CDKBucketDeployment',
    )!;
    const stacks = Object.values(parent.Resources).filter((r) => r.Type === 'AWS::CloudFormation::Stack');
    expect(stacks).toHaveLength(5);
    for (const nestedStack of stacks) expect(nestedStack.DependsOn).toContain(deployment);
  }, 240_000);
});
