/** MCP tools on a deploy: a stdio server is refused, a url server's secrets reach the tool functions' IAM. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { StepthreadRuntime } from '../../infra/runtime.ts';
import { collectToolAccess } from '../../infra/tool-access.ts';
import { StepthreadWorkflow } from '../../infra/workflow.ts';
import { valid } from '../e2e/helpers.ts';
import { stubProjectRoot, testApp } from './helpers.ts';

function withTool(id: string, handler: Record<string, unknown>) {
  return {
    id,
    version: 1,
    profiles: { default: { provider: 'scripted' } },
    tools: { shop: { handler: { kind: 'mcp', ...handler } } },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'agent', type: 'LLM', config: { prompt: 'hi', tools: ['shop'] } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
  };
}

const STDIO = { command: ['node', 'server.mjs'] };

describe('deploying MCP tools', () => {
  it('refuses a folder with a stdio server before anything deploys', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepthread-mcp-deploy-'));
    writeFileSync(join(dir, 'local.json'), JSON.stringify(withTool('local', STDIO)));
    writeFileSync(
      join(dir, 'remote.json'),
      JSON.stringify(withTool('remote', { url: 'https://mcp.example.com/mcp' })),
    );
    expect(() => loadWorkflowsFromDir(dir)).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringMatching(
          /local\.json: MCP_STDIO_NOT_DEPLOYABLE tool "shop": a stdio MCP server/,
        ),
      }),
    );
  });

  it('refuses a stdio server in the workflow construct (a CDK app of its own)', () => {
    const stack = new Stack(testApp(), 'S');
    const runtime = new StepthreadRuntime(stack, 'Runtime', { projectRoot: stubProjectRoot() });
    expect(
      () => new StepthreadWorkflow(stack, 'W', { runtime, workflow: valid(withTool('local', STDIO)) }),
    ).toThrow(expect.objectContaining({ code: 'MCP_STDIO_NOT_DEPLOYABLE' }));
  });

  it('gives the LLM function the secrets a url server’s url and headers name', () => {
    const workflow = valid(
      withTool('remote', {
        url: 'https://mcp.example.com/mcp?key={{secrets.MCP_KEY}}',
        headers: { Authorization: 'Bearer {{secrets.MCP_TOKEN}}' },
      }),
    );
    expect(collectToolAccess([workflow])).toEqual({
      LLM: { lambdaArns: [], secretNames: ['MCP_KEY', 'MCP_TOKEN'] },
      TOOL: { lambdaArns: [], secretNames: [] },
    });
  });
});
