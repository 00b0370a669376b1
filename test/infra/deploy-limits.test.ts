/**
 * Limits a deploy meets and a local run does not (issue 30, item 7–8): each is a `validate` warning and
 * a deploy error naming the file, never a crash of `cdk synth`; big definitions get a nested stack of
 * their own; users' own apps split workflows as the default app does; account quotas warn at synth.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { CfnRole } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../cli/io.ts';
import { processIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { compileWorkflow } from '../../engine/asl/index.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { type LoadedWorkflow, loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { addNagChecks } from '../../infra/nag.ts';
import { StepthreadRuntime } from '../../infra/runtime.ts';
import { StepthreadWorkflow } from '../../infra/workflow.ts';
import { addStepthreadWorkflows } from '../../infra/workflow-set.ts';
import { valid } from '../e2e/helpers.ts';
import { buildTestStack, stubProjectRoot, testApp } from './helpers.ts';

/** START → `count` CODE nodes each returning a `textBytes`-character string → END. */
function codeChain(id: string, count: number, textBytes: number, extra: Partial<Workflow> = {}) {
  const middle = Array.from({ length: count }, (_unused, i) => ({
    id: `step-${i}`,
    type: 'CODE',
    config: { code: `return '${'x'.repeat(textBytes)}'` },
  }));
  const nodes = [{ id: 'start', type: 'START' }, ...middle, { id: 'end', type: 'END' }];
  return {
    id,
    version: 1,
    ...extra,
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}

/** A trigger whose pattern lists `count` detail-types: about 3,400 characters at 300. */
const longPattern = (count: number) => ({
  eventPattern: {
    source: ['orders'],
    'detail-type': Array.from({ length: count }, (_unused, i) => `order-${i}`),
  },
});

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    readFile: processIo.readFile,
  };
  const code = await main(['node', 'stepthread', ...args], io);
  return { code, out, err };
}

function folderWith(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'stepthread-limits-'));
  for (const [name, data] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(data));
  return dir;
}

/** As Step Functions counts it (each function ARN at its longest): node configs are in the node table. */
const definitionBytes = (data: unknown) =>
  compileWorkflow(valid(data as Record<string, unknown>)).definitionBytes;

describe('limits only a deploy meets', () => {
  const patternFlow = codeChain('long-pattern', 1, 10, { triggers: [longPattern(300)] });
  // ~930 KB: under Step Functions' 1 MiB, over what a 1 MB template leaves it once its quotes are
  // escaped. Only the graph counts (node configs are in the node table): 1,300 nodes.
  const hugeFlow = codeChain('huge', 1_300, 10);
  // ~800 KB in its template: used to crash cdk synth with "workflow 0 alone exceeds a stack's budget".
  const bigFlow = codeChain('big', 1_100, 10);

  it('the fixtures are the sizes they claim', () => {
    expect(JSON.stringify(patternFlow.triggers![0]!.eventPattern).length).toBeGreaterThan(3_000);
    expect(definitionBytes(hugeFlow)).toBeGreaterThan(900_000);
    expect(definitionBytes(hugeFlow)).toBeLessThan(1_048_576);
    expect(definitionBytes(bigFlow)).toBeGreaterThan(700_000);
  });

  it('validate: an event pattern over 2,048 characters and a definition too big for a template are warnings (it runs locally)', async () => {
    const dir = folderWith({ 'pattern.json': patternFlow, 'huge.json': hugeFlow });
    for (const [file, fragment] of [
      ['pattern.json', "trigger 1's eventPattern is 3,"],
      ['huge.json', 'in a CloudFormation template'],
    ] as const) {
      const json = await cli('validate', '--json', join(dir, file));
      expect(json.code, file).toBe(0);
      const report = JSON.parse(json.out) as {
        valid: boolean;
        warnings: { code: string; message: string }[];
      };
      expect(report.valid).toBe(true);
      expect(report.warnings).toEqual([
        expect.objectContaining({
          code: 'DEPLOY_LIMIT_EXCEEDED',
          message: expect.stringContaining(fragment),
        }),
      ]);
      const human = await cli('validate', join(dir, file));
      expect(human.out).toContain('valid locally (it cannot be deployed as it is)');
      expect(human.out).toContain('warning: ');
    }
    const compiled = await cli('compile', join(dir, 'pattern.json'));
    expect(compiled.code).toBe(0);
    expect(compiled.err).toContain('stepthread: warning: ');
    expect(compiled.err).toContain('DEPLOY_LIMIT_EXCEEDED');
  }, 60_000);

  it('a deploy refuses them with a coded error naming each file, before synth', () => {
    const dir = folderWith({ 'pattern.json': patternFlow, 'huge.json': hugeFlow });
    expect(() => loadWorkflowsFromDir(dir)).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringMatching(
          /huge\.json: DEPLOY_LIMIT_EXCEEDED[\s\S]*pattern\.json: DEPLOY_LIMIT_EXCEEDED/,
        ),
      }),
    );
    // The construct a user's app creates directly refuses it too, coded.
    const app = testApp();
    const runtime = new StepthreadRuntime(new Stack(app, 'S'), 'Runtime', { projectRoot: stubProjectRoot() });
    expect(() => new StepthreadWorkflow(runtime, 'W', { runtime, workflow: valid(patternFlow) })).toThrow(
      expect.objectContaining({ code: 'DEPLOY_LIMIT_EXCEEDED' }),
    );
  });

  it('a definition of 760 KB deploys in a nested stack of its own, within the 1 MB template quota', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepthread-big-'));
    const small = codeChain('small', 1, 10);
    const workflows: LoadedWorkflow[] = [
      { file: 'small.json', workflow: valid(small) },
      { file: 'big.json', workflow: valid(bigFlow) },
    ];
    const { app, stack } = buildTestStack({ workflows }, testApp(outdir));
    app.synth();
    expect(stack.workflowStacks).toHaveLength(2);
    const templates = readdirSync(outdir).filter((name) => name.endsWith('.template.json'));
    const sizes = templates.map(
      (file) => JSON.stringify(JSON.parse(readFileSync(join(outdir, file), 'utf8'))).length,
    );
    expect(Math.max(...sizes)).toBeGreaterThan(760_000);
    for (const bytes of sizes) expect(bytes).toBeLessThanOrEqual(1_000_000);
  }, 120_000);
});

describe("a user's own CDK app", () => {
  /** `count` one-node workflows, as the deploy.md snippet loads them from a folder. */
  const many = (count: number, triggers = 0): LoadedWorkflow[] =>
    Array.from({ length: count }, (_unused, i) => {
      const id = `flow-${String(i).padStart(3, '0')}`;
      const pattern = { eventPattern: { source: ['app'], 'detail-type': [id] } };
      return {
        file: `${id}.json`,
        workflow: valid(codeChain(id, 1, 10, triggers > 0 ? { triggers: [pattern] } : {})),
      };
    });

  it('the deploy.md snippet (StepthreadRuntime + addStepthreadWorkflows) splits 150 workflows over nested stacks', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepthread-own-app-'));
    const app = testApp(outdir);
    const stack = new Stack(app, 'Agents');
    const runtime = new StepthreadRuntime(stack, 'Runtime', { projectRoot: stubProjectRoot() });
    const { workflows, nestedStacks } = addStepthreadWorkflows(stack, { runtime, workflows: many(150) });
    addNagChecks(app);
    app.synth();
    expect(workflows.size).toBe(150);
    expect(nestedStacks.length).toBeGreaterThan(1);
    for (const file of readdirSync(outdir).filter((name) => name.endsWith('.template.json'))) {
      const template = JSON.parse(readFileSync(join(outdir, file), 'utf8')) as { Resources: object };
      expect(Object.keys(template.Resources).length, file).toBeLessThanOrEqual(500);
    }
  }, 240_000);

  it('warns at synth when the app nears the rules-per-bus or roles-per-account quota', () => {
    const warnings = (stack: Stack) =>
      stack.node.metadata
        .filter((entry) => entry.type === 'aws:cdk:warning')
        .map((entry) => String(entry.data));

    const quiet = buildTestStack({ workflows: many(3, 1) }).stack;
    expect(warnings(quiet)).toEqual([]);

    // 240 triggers on the default bus (with the runtime's status rule: 241 of 300).
    const app = testApp();
    const stack = new Stack(app, 'Busy');
    const runtime = new StepthreadRuntime(stack, 'Runtime', { projectRoot: stubProjectRoot() });
    const triggers = Array.from({ length: 240 }, (_unused, i) => ({
      eventPattern: { source: ['app'], 'detail-type': [`kind-${i}`] },
    }));
    addStepthreadWorkflows(stack, {
      runtime,
      workflows: [{ file: 'busy.json', workflow: valid(codeChain('busy', 1, 10, { triggers })) }],
    });
    expect(warnings(stack)).toEqual([expect.stringContaining('241 EventBridge rules on one bus')]);

    // 400 roles in the app (a user's own, here) besides the runtime's.
    const roleApp = testApp();
    const roleStack = new Stack(roleApp, 'Roles');
    for (let i = 0; i < 400; i++) new CfnRole(roleStack, `Role${i}`, { assumeRolePolicyDocument: {} });
    const roleRuntime = new StepthreadRuntime(roleStack, 'Runtime', { projectRoot: stubProjectRoot() });
    addStepthreadWorkflows(roleStack, { runtime: roleRuntime, workflows: many(1) });
    expect(warnings(roleStack)).toEqual([
      expect.stringMatching(/creates 4\d\d IAM roles; the default quota is 1,000/),
    ]);
  }, 120_000);
});
