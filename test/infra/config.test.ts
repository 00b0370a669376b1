import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { describe, expect, it, vi } from 'vitest';
import { resolveStackNames } from '../../cli/stack-names.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { buildApp } from '../../infra/app.ts';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { bedrockResources, collectModelAccess } from '../../infra/model-access.ts';
import { addNagChecks } from '../../infra/nag.ts';
import { StepthreadRuntime } from '../../infra/runtime.ts';
import { expressTimerProblems, StepthreadWorkflow, toCdkEventPattern } from '../../infra/workflow.ts';
import { valid } from '../e2e/helpers.ts';
import { stubProjectRoot, testApp } from './helpers.ts';

const approval = () => loadWorkflowsFromDir('test/localstack/workflows')[0]!.workflow;

function runtimeStack(): { stack: Stack; runtime: StepthreadRuntime } {
  const app = testApp();
  const stack = new Stack(app, 'S');
  const runtime = new StepthreadRuntime(stack, 'Runtime', { projectRoot: stubProjectRoot() });
  return { stack, runtime };
}

describe('cdk-nag', () => {
  it('fails the synth on an unacknowledged AwsSolutions finding', () => {
    const app = testApp(mkdtempSync(join(tmpdir(), 'stepthread-nag-')));
    const stack = new Stack(app, 'Leaky');
    new Bucket(stack, 'NoAccessLogs', { enforceSSL: true });
    addNagChecks(app);
    expect(() => app.synth()).toThrow(/AwsSolutions-S1/);
  });
});

describe('workflow construct', () => {
  it('refuses EXPRESS for a workflow that waits for a person', () => {
    const { runtime } = runtimeStack();
    expect(
      () => new StepthreadWorkflow(runtime, 'W', { runtime, workflow: approval(), executionType: 'EXPRESS' }),
    ).toThrow(expect.objectContaining({ code: 'DEPLOY_CONFIG_INVALID' }));
  });

  it('refuses EXPRESS for a workflow whose LLM node offers a tool that requires approval', () => {
    const { runtime } = runtimeStack();
    const example = JSON.parse(readFileSync('examples/refund-approval.json', 'utf8')) as Workflow;
    expect(
      () => new StepthreadWorkflow(runtime, 'R', { runtime, workflow: example, executionType: 'EXPRESS' }),
    ).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringContaining('LLM node agent offers a tool that requires approval'),
      }),
    );
  });

  it('refuses EXPRESS for a workflow whose timers can outlast its five minutes', () => {
    const { runtime } = runtimeStack();
    const flow = (nodes: unknown[]) =>
      valid({
        id: 'slow',
        version: 1,
        nodes: [{ id: 'start', type: 'START' }, ...nodes, { id: 'end', type: 'END' }],
        edges: [
          { from: 'start', to: 'work' },
          { from: 'work', to: 'end' },
        ],
      });
    const slowCode = flow([{ id: 'work', type: 'CODE', config: { code: 'return 1', timeoutMs: 600_000 } }]);
    expect(
      () => new StepthreadWorkflow(runtime, 'A', { runtime, workflow: slowCode, executionType: 'EXPRESS' }),
    ).toThrow(/cannot run as EXPRESS.*CODE work may run for 600000 ms/);
    const quickCode = flow([{ id: 'work', type: 'CODE', config: { code: 'return 1', timeoutMs: 30_000 } }]);
    expect(expressTimerProblems(quickCode)).toEqual([]);
    const longJoin = valid({
      ...JSON.parse(readFileSync('examples/fork-join-research.json', 'utf8')),
      nodes: (
        JSON.parse(readFileSync('examples/fork-join-research.json', 'utf8')).nodes as {
          type: string;
          config: Record<string, unknown>;
        }[]
      ).map((node) => (node.type === 'JOIN' ? { ...node, config: { ...node.config, timeout: 301 } } : node)),
    });
    expect(expressTimerProblems(longJoin)).toEqual([expect.stringMatching(/^JOIN .* waits up to 301 s$/)]);
    // STANDARD runs up to a year: the same workflows deploy there.
    expect(() => new StepthreadWorkflow(runtime, 'B', { runtime, workflow: slowCode })).not.toThrow();
  });

  it('deploys EXPRESS for a workflow without interactions', () => {
    const { stack, runtime } = runtimeStack();
    const workflow = loadWorkflowsFromDir('examples').find((w) => w.workflow.id === 'route-loop')!.workflow;
    new StepthreadWorkflow(stack, 'W', { runtime, workflow, executionType: 'EXPRESS' });
    addNagChecks(stack.node.root as never);
    Template.fromStack(stack).hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'EXPRESS',
      StateMachineName: 'stepthread-route-loop',
    });
  });

  it('continues STANDARD runs at the threshold it is given, and never EXPRESS ones (no history limit)', () => {
    const { stack, runtime } = runtimeStack();
    const workflow = loadWorkflowsFromDir('examples').find((w) => w.workflow.id === 'route-loop')!.workflow;
    const standard = new StepthreadWorkflow(stack, 'S', {
      runtime,
      workflow,
      stateMachineName: 'standard-loop',
      continueAfterEvents: 5_000,
    });
    const express = new StepthreadWorkflow(stack, 'E', {
      runtime,
      workflow,
      stateMachineName: 'express-loop',
      executionType: 'EXPRESS',
    });
    expect(JSON.stringify(standard.compiled.definition)).toContain('"NumericGreaterThanEquals":5000');
    expect(JSON.stringify(express.compiled.definition)).not.toMatch(/startExecution|historyEvents/);
    addNagChecks(stack.node.root as never);
    const policies = Object.values(Template.fromStack(stack).findResources('AWS::IAM::Policy'));
    const continueStatements = policies.flatMap((policy) =>
      (policy.Properties.PolicyDocument.Statement as { Sid?: string; Resource: unknown }[]).filter(
        (statement) => statement.Sid === 'ContinueAsNew',
      ),
    );
    expect(continueStatements).toHaveLength(1);
    expect(JSON.stringify(continueStatements[0]!.Resource)).toContain(':stateMachine:standard-loop');
  });

  it('covers a state machine named outside the prefix by statements and a pattern entry of its own', () => {
    const { stack, runtime } = runtimeStack();
    const workflow = loadWorkflowsFromDir('examples').find((w) => w.workflow.id === 'route-loop')!.workflow;
    const own = new StepthreadWorkflow(stack, 'Own', { runtime, workflow, stateMachineName: 'team-triage' });
    new StepthreadWorkflow(stack, 'Prefixed', { runtime, workflow });
    addNagChecks(stack.node.root as never);
    const template = Template.fromStack(stack);
    const ownArn = { Ref: stack.getLogicalId(own.stateMachine.node.defaultChild as never) };
    const policy = Object.values(template.findResources('AWS::IAM::ManagedPolicy'))[0]!;
    const statements = policy.Properties.PolicyDocument.Statement as { Sid: string; Resource: unknown }[];
    expect(statements.find((s) => s.Sid === 'StartOther1')?.Resource).toEqual(ownArn);
    expect(statements.find((s) => s.Sid === 'RespondOther1')?.Resource).toEqual(ownArn);
    expect(JSON.stringify(statements.find((s) => s.Sid === 'ExecutionsOther1')?.Resource)).toContain(
      ':execution:team-triage:*',
    );
    const forwarding = Object.values(template.findResources('AWS::Events::Rule'))[0]!;
    expect(forwarding.Properties.EventPattern.detail.stateMachineArn).toEqual([
      { prefix: expect.anything() },
      ownArn,
    ]);
  });

  it('names the missing function when the runtime lacks a node type the workflow needs', () => {
    const app = testApp();
    const stack = new Stack(app, 'S');
    const runtime = new StepthreadRuntime(stack, 'R', {
      projectRoot: stubProjectRoot(),
      nodeTypes: ['START', 'END', 'LLM'],
    });
    expect(() => new StepthreadWorkflow(stack, 'W', { runtime, workflow: approval() })).toThrow(
      /no function for node type USER_INTERACTION/,
    );
  });

  it('keeps raw EventBridge field names and rejects unknown or empty patterns', () => {
    expect(toCdkEventPattern({ 'detail-type': ['X'], source: ['s'] })).toEqual({
      detailType: ['X'],
      source: ['s'],
    });
    expect(() => toCdkEventPattern({ sauce: ['s'] })).toThrow(/unknown top-level field "sauce"/);
    expect(() => toCdkEventPattern({})).toThrow(/empty/);
  });
});

describe('a runtime in a user’s own stack', () => {
  it('outputs the table and bucket `--stack` finds them by', async () => {
    const { stack, runtime } = runtimeStack();
    const outputs = Template.fromStack(stack).toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs).toMatchObject({
      TableName: { Value: { Ref: logicalIdOf(stack, runtime.table) } },
      BucketName: { Value: { Ref: logicalIdOf(stack, runtime.bucket) } },
      EventBusName: { Value: { Ref: logicalIdOf(stack, runtime.eventBus) } },
      OperatorPolicyArn: { Value: { Ref: logicalIdOf(stack, runtime.operatorPolicy) } },
    });
    // What CloudFormation's DescribeStacks returns for them: each Ref resolved to a physical name.
    const described = Object.fromEntries(
      Object.entries(outputs).map(([key, { Value }]) => [key, `physical-${(Value as { Ref: string }).Ref}`]),
    );
    const { names } = await resolveStackNames(
      {},
      { kind: 'aws' },
      { stack: 'S', describe: async () => ({ outputs: described }) },
    );
    expect(names).toEqual({
      tableName: `physical-${logicalIdOf(stack, runtime.table)}`,
      bucketName: `physical-${logicalIdOf(stack, runtime.bucket)}`,
      eventBusName: `physical-${logicalIdOf(stack, runtime.eventBus)}`,
    });
  });

  it('refuses a second runtime with outputs in the same stack, and takes one without', () => {
    const { stack } = runtimeStack();
    expect(() => new StepthreadRuntime(stack, 'Second', { projectRoot: stubProjectRoot() })).toThrow(
      'stack S already has TableName, BucketName, EventBusName, OperatorPolicyArn: a second StepthreadRuntime in it? Give the others stackOutputs: false',
    );
    const { stack: other } = runtimeStack();
    new StepthreadRuntime(other, 'Second', { projectRoot: stubProjectRoot(), stackOutputs: false });
    expect(Object.keys(Template.fromStack(other).toJSON().Outputs as object)).toEqual([
      'TableName',
      'BucketName',
      'EventBusName',
      'OperatorPolicyArn',
    ]);
  });
});

/** The logical id CloudFormation knows a construct's resource by. */
function logicalIdOf(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

describe('loading a workflow folder', () => {
  function folder(files: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), 'stepthread-wf-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  }
  const minimal = (id: string) =>
    JSON.stringify({
      id,
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'end', type: 'END' },
      ],
      edges: [{ from: 'start', to: 'end' }],
    });

  it('loads JSON and YAML files in a stable order', () => {
    const dir = folder({
      'b.json': minimal('b'),
      'a.yaml':
        'id: a\nversion: 1\nnodes: [{id: s, type: START}, {id: e, type: END}]\nedges: [{from: s, to: e}]\n',
      'notes.txt': 'x',
    });
    expect(loadWorkflowsFromDir(dir).map((w) => [w.file, w.workflow.id])).toEqual([
      ['a.yaml', 'a'],
      ['b.json', 'b'],
    ]);
  });

  it('stops with every file’s coded errors before anything deploys', () => {
    const dir = folder({
      'ok.json': minimal('ok'),
      'bad.json': '{"id": "bad", "version": 1, "nodes": []}',
      'broken.json': '{',
    });
    expect(() => loadWorkflowsFromDir(dir)).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringMatching(/bad\.json: START_NODE_COUNT[\s\S]*broken\.json: .*not valid JSON/),
      }),
    );
  });

  it('rejects two files with the same workflow id', () => {
    const dir = folder({ 'one.json': minimal('same'), 'two.json': minimal('same') });
    expect(() => loadWorkflowsFromDir(dir)).toThrow(
      /two\.json: workflow id "same" is also used by one\.json/,
    );
  });
});

describe('model access from profiles', () => {
  it('collects secrets and Bedrock models, subgraphs included', () => {
    const child: Workflow = {
      id: 'child',
      version: 1,
      profiles: {
        p: { provider: 'bedrock', model: 'amazon.titan' },
        q: { provider: 'bedrock', model: 'amazon.titan', region: 'us-west-2' },
      },
      nodes: [],
    };
    const parent: Workflow = {
      id: 'parent',
      version: 1,
      profiles: {
        a: { provider: 'openai', model: 'm', apiKeySecret: 'k1' },
        b: { provider: 'openai', model: 'm', apiKeyEnv: 'LOCAL_ONLY' },
        c: { provider: 'scripted' },
      },
      nodes: [{ id: 'sub', type: 'SUBGRAPH', config: { workflow: child } }],
    };
    expect(collectModelAccess([parent, parent])).toEqual({
      secretNames: ['k1'],
      bedrockModels: [{ model: 'amazon.titan' }, { model: 'amazon.titan', region: 'us-west-2' }],
    });
  });

  it('maps model ids, inference profiles and ARNs to the resources Converse needs', () => {
    const env = { partition: 'aws', region: 'eu-west-1', account: '123' };
    expect(
      bedrockResources(
        [
          { model: 'amazon.nova' },
          { model: 'amazon.nova', region: 'us-west-2' },
          { model: 'eu.meta.llama' },
          { model: 'arn:aws:bedrock:eu-west-1:123:custom-model/x' },
        ],
        env,
      ),
    ).toEqual({
      exact: [
        'arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova',
        'arn:aws:bedrock:us-west-2::foundation-model/amazon.nova',
        'arn:aws:bedrock:eu-west-1:123:inference-profile/eu.meta.llama',
        'arn:aws:bedrock:eu-west-1:123:custom-model/x',
      ],
      anyRegion: ['arn:aws:bedrock:*::foundation-model/meta.llama'],
    });
  });
});

describe('the CDK app', () => {
  const appWith = (context: Record<string, string>) =>
    new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });

  it('reads folder, express list, name prefix and removal policy from context', () => {
    const stack = buildApp(
      appWith({
        'stepthread:workflowsDir': 'examples',
        'stepthread:express': 'route-loop',
        'stepthread:namePrefix': 'demo',
        'stepthread:removalPolicy': 'destroy',
        'stepthread:stackName': 'Demo',
      }),
      {},
    );
    expect(stack.stackName).toBe('Demo');
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineName: 'demo-route-loop',
      StateMachineType: 'EXPRESS',
    });
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineName: 'demo-fork-join-research',
      StateMachineType: 'STANDARD',
    });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
    template.allResources('AWS::S3::Bucket', { DeletionPolicy: 'Delete' });
    // The bus and the prefix-wide statements follow the prefix.
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'demo-events' });
    expect(JSON.stringify(template.findResources('AWS::IAM::ManagedPolicy'))).toContain(
      ':stateMachine:demo-*',
    );
  });

  it('deploys the examples without refund-approval, whose MCP server runs only locally, and says so', () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    let stack: ReturnType<typeof buildApp>;
    try {
      stack = buildApp(appWith({ 'stepthread:workflowsDir': 'examples' }), {});
    } finally {
      spy.mockRestore();
    }
    const examples = readdirSync('examples')
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.replace(/\.json$/, ''));
    expect([...stack.workflows.keys()].sort()).toEqual(examples.filter((id) => id !== 'refund-approval'));
    expect(written.join('')).toContain(
      'stepthread: warning: refund-approval.json (workflow refund-approval) is left out of the deploy: MCP_STDIO_NOT_DEPLOYABLE tool "lookup_order"',
    );
    expect(() =>
      buildApp(appWith({ 'stepthread:workflowsDir': 'examples', 'stepthread:stdioServers': 'refuse' }), {}),
    ).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringContaining('refund-approval.json: MCP_STDIO_NOT_DEPLOYABLE'),
      }),
    );
    expect(() => buildApp(appWith({ 'stepthread:stdioServers': 'ignore' }), {})).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: 'stepthread:stdioServers must be skip or refuse, not ignore',
      }),
    );
  });

  it('reads the folder and the stack name from the environment when the context has none', () => {
    const stack = buildApp(appWith({}), {
      STEPTHREAD_WORKFLOWS_DIR: 'test/localstack/workflows',
      STEPTHREAD_STACK_NAME: 'FromEnv',
    });
    expect(stack.stackName).toBe('FromEnv');
    expect([...stack.workflows.keys()]).toEqual(['approval']);
  });

  it('reads the continue-as-new threshold from context or the environment', () => {
    const definitionOf = (stack: ReturnType<typeof buildApp>) =>
      Object.values(Template.fromStack(stack).findResources('AWS::StepFunctions::StateMachine'))
        .map((sm) => JSON.stringify(sm.Properties.DefinitionString))
        .find((text) => text.includes('startExecution'))!;
    const fromContext = buildApp(appWith({ 'stepthread:continueAfterEvents': '3000' }), {});
    expect(definitionOf(fromContext)).toContain(String.raw`\"NumericGreaterThanEquals\":3000`);
    const fromEnv = buildApp(appWith({}), { STEPTHREAD_CONTINUE_AFTER_EVENTS: '4000' });
    expect(definitionOf(fromEnv)).toContain(String.raw`\"NumericGreaterThanEquals\":4000`);
    expect(() => buildApp(appWith({ 'stepthread:continueAfterEvents': '30000' }), {})).toThrow(
      /from 100 to 24000/,
    );
  });

  it('reserves concurrency for the function types the context names, and refuses a bad entry with a code', () => {
    const stack = buildApp(appWith({ 'stepthread:reservedConcurrency': 'LLM=50, TOOL=20' }), {});
    const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
    const reserved = Object.fromEntries(
      functions
        .filter((fn) => fn.Properties.ReservedConcurrentExecutions !== undefined)
        .map((fn) => [fn.Properties.Description, fn.Properties.ReservedConcurrentExecutions]),
    );
    expect(reserved).toEqual({ 'stepthread LLM node handler': 50, 'stepthread TOOL node handler': 20 });
    for (const bad of ['LMM=5', 'LLM=0', 'LLM=2.5', 'LLM']) {
      expect(() => buildApp(appWith({ 'stepthread:reservedConcurrency': bad }), {}), bad).toThrow(
        expect.objectContaining({ code: 'DEPLOY_CONFIG_INVALID' }),
      );
    }
  });

  it('rejects an unknown removal policy and express ids that are not deployed', () => {
    expect(() => buildApp(appWith({ 'stepthread:removalPolicy': 'keep' }), {})).toThrow(/retain or destroy/);
    expect(() => buildApp(appWith({ 'stepthread:express': 'nope' }), {})).toThrow(
      /"nope", which is not deployed/,
    );
  });
});
