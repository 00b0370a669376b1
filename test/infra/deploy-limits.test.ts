/**
 * Limits a deploy meets and a local run does not (issue 30, item 7–8): each is a `validate` warning and
 * a deploy error naming the file, never a crash of `cdk synth`; big definitions get a nested stack of
 * their own; users' own apps split workflows as the default app does; account quotas warn at synth.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
import { templateDefinitionBytes } from '../../engine/validation/deploy-limits.ts';
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
  // ~1,037 KB: under Step Functions' 1 MiB, over what a 1 MB template leaves it once its quotes are
  // escaped (1,155 KB): it deploys from S3. Only the graph counts (node configs are in the node table).
  const hugeFlow = codeChain('huge', 2_000, 10);
  // ~925 KB in its template (its copy entry's rule per node included): used to crash cdk synth with "workflow 0 alone exceeds a stack's budget".
  const bigFlow = codeChain('big', 1_400, 10);
  const inTemplate = (data: unknown) =>
    templateDefinitionBytes(
      JSON.stringify(compileWorkflow(valid(data as Record<string, unknown>)).definition),
    );

  it('the fixtures are the sizes they claim', () => {
    expect(JSON.stringify(patternFlow.triggers![0]!.eventPattern).length).toBeGreaterThan(3_000);
    expect(definitionBytes(hugeFlow)).toBeGreaterThan(1_000_000);
    expect(definitionBytes(hugeFlow)).toBeLessThan(1_048_576);
    expect(inTemplate(hugeFlow)).toBeGreaterThan(1_000_000);
    expect(inTemplate(bigFlow)).toBeGreaterThan(760_000);
    expect(inTemplate(bigFlow)).toBeLessThan(988_000);
  });

  it('validate: an event pattern over 2,048 characters is a warning (it runs locally); a definition too big for a template is not (it deploys from S3)', async () => {
    const dir = folderWith({ 'pattern.json': patternFlow, 'huge.json': hugeFlow });
    const json = await cli('validate', '--json', join(dir, 'pattern.json'));
    expect(json.code).toBe(0);
    const report = JSON.parse(json.out) as { valid: boolean; warnings: { code: string; message: string }[] };
    expect(report.valid).toBe(true);
    expect(report.warnings).toEqual([
      expect.objectContaining({
        code: 'DEPLOY_LIMIT_EXCEEDED',
        message: expect.stringContaining("trigger 1's eventPattern is 3,"),
      }),
    ]);
    const human = await cli('validate', join(dir, 'pattern.json'));
    expect(human.out).toContain('valid locally (it cannot be deployed as it is)');
    expect(human.out).toContain('warning: ');
    const huge = JSON.parse((await cli('validate', '--json', join(dir, 'huge.json'))).out) as {
      valid: boolean;
      warnings?: unknown[];
    };
    expect([huge.valid, huge.warnings ?? []]).toEqual([true, []]);
    const compiled = await cli('compile', join(dir, 'pattern.json'));
    expect(compiled.code).toBe(0);
    expect(compiled.err).toContain('stepthread: warning: ');
    expect(compiled.err).toContain('DEPLOY_LIMIT_EXCEEDED');
  }, 60_000);

  it('a deploy refuses a pattern too long with a coded error naming the file, before synth', () => {
    const dir = folderWith({ 'pattern.json': patternFlow, 'huge.json': hugeFlow });
    let refused: unknown;
    try {
      loadWorkflowsFromDir(dir);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({
      code: 'DEPLOY_CONFIG_INVALID',
      message: expect.stringMatching(/pattern\.json: DEPLOY_LIMIT_EXCEEDED/),
    });
    expect((refused as Error).message).not.toContain('huge.json');
    // The construct a user's app creates directly refuses it too, coded.
    const app = testApp();
    const runtime = new StepthreadRuntime(new Stack(app, 'S'), 'Runtime', { projectRoot: stubProjectRoot() });
    expect(() => new StepthreadWorkflow(runtime, 'W', { runtime, workflow: valid(patternFlow) })).toThrow(
      expect.objectContaining({ code: 'DEPLOY_LIMIT_EXCEEDED' }),
    );
  });

  it('a definition of 925 KB deploys in a nested stack of its own, within the 1 MB template quota', () => {
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

  it('a 2,000-node definition (1 MB) deploys from S3: DefinitionS3Location holds it byte for byte, DefinitionSubstitutions bind each function version, every template stays small', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'stepthread-huge-'));
    const workflows: LoadedWorkflow[] = [
      { file: 'small.json', workflow: valid(codeChain('small', 1, 10)) },
      { file: 'huge.json', workflow: valid(hugeFlow) },
    ];
    const { app } = buildTestStack({ workflows }, testApp(outdir));
    app.synth();
    type Resources = Record<
      string,
      { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] }
    >;
    const templates = readdirSync(outdir)
      .filter((name) => name.endsWith('.template.json'))
      .map((file) => readFileSync(join(outdir, file), 'utf8'));
    for (const text of templates) expect(JSON.stringify(JSON.parse(text)).length).toBeLessThan(300_000);
    const machines = templates.flatMap((text) =>
      Object.values((JSON.parse(text) as { Resources: Resources }).Resources).filter(
        (resource) => resource.Type === 'AWS::StepFunctions::StateMachine',
      ),
    );
    const named = (id: string) =>
      machines.find((machine) => JSON.stringify(machine.Properties.StateMachineName).includes(`-${id}`))!;
    const huge = named('huge').Properties;
    expect(huge.DefinitionString).toBeUndefined();
    const location = huge.DefinitionS3Location as { Bucket: unknown; Key: string };
    const asset = readFileSync(join(outdir, `asset.${location.Key}`), 'utf8');
    expect(asset).toBe(JSON.stringify(compileWorkflow(valid(hugeFlow)).definition));
    expect(Buffer.byteLength(asset)).toBeGreaterThan(700_000); // with placeholders, not ARNs
    // The CODE function's version of this deploy (pinned), as a template reference.
    const bound = huge.DefinitionSubstitutions as Record<string, unknown>;
    expect(Object.keys(bound).sort()).toEqual(['Fn_CODE', 'Fn_END', 'Fn_START']);
    for (const arn of Object.values(bound)) expect(JSON.stringify(arn)).toMatch(/CurrentVersion/);
    // A definition that fits stays in its template, its ARNs joined in.
    expect(named('small').Properties.DefinitionString).toBeDefined();
  }, 240_000);

  it('synthesizing a definition from S3 twice leaves one file of it in the temporary directory, not one per synth', () => {
    const text = JSON.stringify(compileWorkflow(valid(hugeFlow)).definition);
    /** The files holding this definition in the temporary directory's folders, CDK's assemblies' aside. */
    const filesOfIt = () =>
      readdirSync(tmpdir(), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .flatMap((dir) => readdirSync(join(tmpdir(), dir.name)).map((name) => join(tmpdir(), dir.name, name)))
        .filter((file) => !/[\\/]asset\.[0-9a-f]+\.json$/.test(file))
        .filter((file) => statSync(file).isFile() && statSync(file).size === Buffer.byteLength(text))
        .filter((file) => readFileSync(file, 'utf8') === text);
    /** One synth of the workflow alone: its state machine deploys from S3, the staged asset its definition. */
    const synth = () => {
      const outdir = mkdtempSync(join(tmpdir(), 'stepthread-huge-again-'));
      const app = testApp(outdir);
      const stack = new Stack(app, 'S');
      const runtime = new StepthreadRuntime(stack, 'Runtime', { projectRoot: stubProjectRoot() });
      new StepthreadWorkflow(runtime, 'W', { runtime, workflow: valid(hugeFlow) });
      app.synth();
      const template = JSON.parse(readFileSync(join(outdir, 'S.template.json'), 'utf8')) as {
        Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
      };
      const machine = Object.values(template.Resources).find(
        (resource) => resource.Type === 'AWS::StepFunctions::StateMachine',
      )!;
      expect(machine.Properties.DefinitionString).toBeUndefined();
      const location = machine.Properties.DefinitionS3Location as { Key: string };
      expect(readFileSync(join(outdir, `asset.${location.Key}`), 'utf8')).toBe(text);
      return location.Key;
    };
    const first = synth();
    const once = filesOfIt();
    expect(once).toHaveLength(1);
    // The same asset (its hash is the content's), and no other file of it.
    expect(synth()).toBe(first);
    expect(filesOfIt()).toEqual(once);
  }, 240_000);

  it('refuses, coded, a definition from S3 whose ids hold "${" (DefinitionSubstitutions would change them)', () => {
    const text = JSON.stringify(hugeFlow).replaceAll('"step-7"', `"step-\${x}"`);
    const app = testApp();
    const runtime = new StepthreadRuntime(new Stack(app, 'S'), 'Runtime', { projectRoot: stubProjectRoot() });
    expect(
      () => new StepthreadWorkflow(runtime, 'W', { runtime, workflow: valid(JSON.parse(text)) }),
    ).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_LIMIT_EXCEEDED',
        message: expect.stringContaining('rename the node or path whose id holds "${"'),
      }),
    );
  });
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
