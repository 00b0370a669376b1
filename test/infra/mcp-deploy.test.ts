/**
 * MCP tools on a deploy: a folder's deploy leaves a workflow with a stdio server out (warning why) or,
 * asked to, refuses it; the constructs refuse it; a url server's secrets reach the tool functions' IAM.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { describe, expect, it, vi } from 'vitest';
import { loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { StepthreadRuntime } from '../../infra/runtime.ts';
import { collectToolAccess } from '../../infra/tool-access.ts';
import { StepthreadWorkflow } from '../../infra/workflow.ts';
import { addStepthreadWorkflows } from '../../infra/workflow-set.ts';
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
  /** A folder with a workflow needing a stdio server (in a subfolder, as a user may keep it) and one that does not. */
  function mixedFolder(): string {
    const dir = mkdtempSync(join(tmpdir(), 'stepthread-mcp-deploy-'));
    mkdirSync(join(dir, 'local'));
    writeFileSync(join(dir, 'local', 'desk.json'), JSON.stringify(withTool('local', STDIO)));
    writeFileSync(
      join(dir, 'remote.json'),
      JSON.stringify(withTool('remote', { url: 'https://mcp.example.com/mcp' })),
    );
    return dir;
  }

  it('leaves a workflow with a stdio server out of a folder deploy, with a warning naming the file and why', () => {
    const warnings: string[] = [];
    const loaded = loadWorkflowsFromDir(mixedFolder(), { warn: (message) => warnings.push(message) });
    expect(loaded.map(({ file, workflow }) => [file, workflow.id])).toEqual([['remote.json', 'remote']]);
    expect(warnings).toEqual([
      `stepthread: warning: ${join('local', 'desk.json')} (workflow local) is left out of the deploy: MCP_STDIO_NOT_DEPLOYABLE tool "shop": a stdio MCP server ("command") runs only locally (run, dev) and cannot be deployed; give it a "url" to deploy`,
    ]);
  });

  it('prints that warning on stderr by default (what `cdk synth` shows)', () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      expect(loadWorkflowsFromDir(mixedFolder()).map(({ workflow }) => workflow.id)).toEqual(['remote']);
    } finally {
      spy.mockRestore();
    }
    expect(written.join('')).toMatch(
      /^stepthread: warning: local\/desk\.json \(workflow local\) is left out of the deploy: MCP_STDIO_NOT_DEPLOYABLE tool "shop"[^\n]*\n$/,
    );
  });

  it("refuses the folder with stdioServers: 'refuse', before anything deploys", () => {
    expect(() => loadWorkflowsFromDir(mixedFolder(), { stdioServers: 'refuse', warn: () => {} })).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringMatching(
          /local\/desk\.json: MCP_STDIO_NOT_DEPLOYABLE tool "shop": a stdio MCP server/,
        ),
      }),
    );
  });

  it('refuses a folder whose every workflow needs a stdio server: nothing is left to deploy', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepthread-mcp-deploy-'));
    writeFileSync(join(dir, 'local.json'), JSON.stringify(withTool('local', STDIO)));
    expect(() => loadWorkflowsFromDir(dir, { warn: () => {} })).toThrow(
      expect.objectContaining({
        code: 'DEPLOY_CONFIG_INVALID',
        message: expect.stringContaining(
          'every workflow needs a stdio MCP server, which runs only locally (local.json)',
        ),
      }),
    );
  });

  it('still refuses a workflow with a stdio server given to addStepthreadWorkflows (a deploy that names it)', () => {
    const stack = new Stack(testApp(), 'S');
    const runtime = new StepthreadRuntime(stack, 'Runtime', { projectRoot: stubProjectRoot() });
    const workflows = [{ file: 'desk.json', workflow: valid(withTool('local', STDIO)) }];
    expect(() => addStepthreadWorkflows(stack, { runtime, workflows })).toThrow(
      expect.objectContaining({ code: 'MCP_STDIO_NOT_DEPLOYABLE' }),
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
