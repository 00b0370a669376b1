import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import type { ToolDefinition } from '../../../engine/model/schema.ts';
import {
  callToolForNode,
  toolRequirements,
  toolRuntimeFromEnv,
  WORKFLOW_DIR_VARIABLE,
} from '../../../functions/tools/index.ts';

const echo: ToolDefinition = {
  description: 'Echo',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  handler: 'builtin:echo',
};

describe('callToolForNode', () => {
  it('renders the arguments over the scope and returns the tool’s output', async () => {
    const output = await callToolForNode({
      nodeId: 'lookup',
      config: { toolName: 'echo', arguments: { q: 'id {{ticket.id}}', raw: '{{ticket}}' } },
      tool: echo,
      scope: { ticket: { id: 7 } },
      env: { target: 'local' },
    });
    expect(output).toEqual({ q: 'id 7', raw: { id: 7 } });
  });

  it('throws the tool’s coded failure with the node id', async () => {
    const call = callToolForNode({
      nodeId: 'lookup',
      config: { toolName: 'echo', arguments: { q: '{{n}}' } },
      tool: echo,
      scope: { n: 3 },
      env: { target: 'local' },
    });
    await expect(call).rejects.toBeInstanceOf(StepthreadError);
    await expect(call).rejects.toMatchObject({ code: 'TOOL_ARGUMENTS_INVALID', nodeId: 'lookup' });
  });

  it('throws EXPRESSION_ERROR for an argument template that fails', async () => {
    await expect(
      callToolForNode({
        nodeId: 'lookup',
        config: { toolName: 'echo', arguments: { q: '{{1 - missing}}' } },
        tool: echo,
        scope: {},
        env: { target: 'local' },
      }),
    ).rejects.toMatchObject({ code: 'EXPRESSION_ERROR', nodeId: 'lookup' });
  });
});

describe('toolRequirements', () => {
  it('lists the invoked functions and the named secrets, each once', () => {
    const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:crm';
    expect(
      toolRequirements({
        a: { description: 'a', handler: `lambda:${arn}` },
        b: { description: 'b', handler: { kind: 'lambda', arn, module: './crm.mjs' } },
        c: { description: 'c', handler: 'module:./local.mjs' },
        d: {
          description: 'd',
          handler: {
            kind: 'http',
            url: 'https://x/?k={{secrets.URL_KEY}}',
            headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}', 'X-Also': '{{secrets.CRM_TOKEN}}' },
          },
        },
        e: echo,
      }),
    ).toEqual({ lambdaArns: [arn], secretNames: ['CRM_TOKEN', 'URL_KEY'] });
  });
});

describe('toolRuntimeFromEnv', () => {
  it('runs locally with environment secrets and the workflow folder by default', async () => {
    const runtime = toolRuntimeFromEnv({ [WORKFLOW_DIR_VARIABLE]: '/flows', CRM_TOKEN: 't' });
    expect(runtime.env).toMatchObject({ target: 'local', workflowDir: '/flows' });
    expect(await runtime.secrets.resolve('CRM_TOKEN')).toBe('t');
  });

  it('targets AWS when STEPTHREAD_TARGET=aws, invoking ARNs', async () => {
    const runtime = toolRuntimeFromEnv({ STEPTHREAD_TARGET: 'aws', AWS_REGION: 'eu-west-1' });
    expect(runtime.env.target).toBe('aws');
    expect(runtime.env.workflowDir).toBeUndefined();
    expect(typeof runtime.env.invokeLambda).toBe('function');
  });
});
