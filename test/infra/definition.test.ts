/**
 * What CloudFormation deploys as each state machine's definition: the template's DefinitionString
 * resolved as CloudFormation resolves it (test/support/cfn-resolve.ts) must be the compiled ASL with
 * each function placeholder bound to its function's ARN, and nothing else changed: user text such as
 * a JavaScript template literal in CODE (nested ones included) or a `${name}` in a prompt is deployed
 * as written.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { type AslDefinition, substituteResources } from '../../engine/asl/index.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { nodeTypeOfSubstitutionKey } from '../../infra/handler-registry.ts';
import { type LoadedWorkflow, loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import type { StepthreadStack } from '../../infra/stack.ts';
import { valid } from '../e2e/helpers.ts';
import { cfnResolver } from '../support/cfn-resolve.ts';
import { buildTestStack, testWorkflows } from './helpers.ts';

const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';

/** CODE and a prompt holding nested template literals and `${…}` of every shape CloudFormation parses. */
const NESTED: Workflow = valid({
  id: 'nested-template-literals',
  version: 1,
  profiles: { default: { provider: 'scripted', responses: ['ok'] } },
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'code',
      type: 'CODE',
      config: {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: user code with template literals is the point
        code: "const x = 1; const y = { a: 2 }; return [`a${x ? `b${x}` : 'c'}d`, `${`${y.a}`}`, `${!x}`, '${Fn_LLM}', '$${}', `${'}'}`];",
      },
    },
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a prompt with a literal ${…} is the point
    { id: 'ask', type: 'LLM', config: { prompt: 'Say ${price} and ${!x} and ${a ${b}} and ${AWS::Region}' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'code' },
    { from: 'code', to: 'ask' },
    { from: 'ask', to: 'end' },
  ],
});

/** Every workflow the repository deploys or tests with: examples, fixtures, the cloud suite's, and NESTED. */
function everyWorkflow(): LoadedWorkflow[] {
  const fixtures = loadWorkflowsFromDir('test/fixtures/valid').map(({ workflow, file }) => ({
    file,
    workflow: { ...workflow, id: `fixture-${workflow.id}` },
  }));
  return [
    ...testWorkflows(),
    ...fixtures,
    ...loadWorkflowsFromDir('test/cloud/workflows'),
    { file: 'nested.json', workflow: NESTED },
  ];
}

let stack: StepthreadStack;
let resources: Record<string, { Type: string; Properties: Record<string, unknown>; Metadata?: unknown }>;

beforeAll(() => {
  ({ stack } = buildTestStack({ workflows: everyWorkflow(), env: { account: ACCOUNT, region: REGION } }));
  resources = Template.fromStack(stack).toJSON().Resources;
}, 120_000);

const functionArn = (logicalId: string) => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${logicalId}`;

/** The definition CloudFormation would give Step Functions, every function named by a made-up ARN. */
function deployedDefinition(workflowId: string): AslDefinition {
  const construct = stack.workflows.get(workflowId)!;
  const logicalId = stack.getLogicalId(construct.stateMachine.node.defaultChild as never);
  // A function version's Ref is its qualified ARN (the version each deploy publishes).
  const physical = new Map(
    Object.entries(resources).map(([id, resource]) => {
      if (resource.Type === 'AWS::Lambda::Version') {
        const { FunctionName } = resource.Properties as { FunctionName: { Ref: string } };
        return [id, { ref: `${functionArn(FunctionName.Ref)}:7` }];
      }
      return [
        id,
        {
          ref: id,
          arn: resource.Type === 'AWS::Lambda::Function' ? functionArn(id) : `arn:aws:test:::${id}`,
        },
      ];
    }),
  );
  const properties = resources[logicalId]!.Properties;
  // DefinitionSubstitutions would also replace any `${name}` of the workflow's own text.
  expect(properties.DefinitionSubstitutions).toBeUndefined();
  const text = cfnResolver(physical, { account: ACCOUNT, region: REGION })(properties.DefinitionString);
  return JSON.parse(String(text)) as AslDefinition;
}

describe('the deployed definition', () => {
  it('is the compiled ASL with each placeholder bound to its function version, for every workflow', () => {
    const workflows = everyWorkflow();
    expect(workflows.length).toBeGreaterThan(20);
    for (const { workflow } of workflows) {
      const { compiled } = stack.workflows.get(workflow.id)!;
      const arns = Object.fromEntries(
        compiled.substitutionKeys.map((key) => {
          const type = nodeTypeOfSubstitutionKey(key)!;
          return [
            key,
            `${functionArn(stack.getLogicalId(stack.runtime.functionFor(type).node.defaultChild as never))}:7`,
          ];
        }),
      );
      expect(deployedDefinition(workflow.id), workflow.id).toEqual(
        substituteResources(compiled.definition, arns),
      );
    }
  });

  it('keeps nested template literals and every dollar-brace of CODE and prompts as written, in the node table', () => {
    const text = JSON.stringify(deployedDefinition(NESTED.id));
    const { nodeTable } = stack.workflows.get(NESTED.id)!.compiled;
    const code = NESTED.nodes.find((node) => node.id === 'code')!.config as { code: string };
    const prompt = NESTED.nodes.find((node) => node.id === 'ask')!.config as { prompt: string };
    // The deploy stores the table as an asset, byte for byte: no CloudFormation text processing at all.
    for (const written of [code.code, prompt.prompt]) {
      expect(nodeTable.json).toContain(JSON.stringify(written).slice(1, -1));
      expect(text).not.toContain(JSON.stringify(written).slice(1, -1));
    }
    // So the definition has no `${` of the workflow's for CDK's validation or cfn-lint to guess at (E1029).
    expect(text).not.toContain('${');
    const logicalId = stack.getLogicalId(
      stack.workflows.get(NESTED.id)!.stateMachine.node.defaultChild as never,
    );
    expect(resources[logicalId]!.Metadata).toBeUndefined();
  });
});
