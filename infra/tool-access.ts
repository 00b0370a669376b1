/**
 * What the tools of the deployed workflows need from AWS, per handler: the LLM function runs the tools
 * its LLM nodes offer the model, the TOOL function those its TOOL nodes call. Each gets exactly the
 * Lambda functions those tools invoke and the Secrets Manager secrets their http templates name.
 */
import { buildGraph } from '../engine/graph/build.ts';
import type { ToolDefinition, Workflow } from '../engine/model/schema.ts';
import { type ToolRequirements, toolRequirements } from '../functions/tools/requirements.ts';

/** Node types whose handlers call tools. */
export type ToolCallingType = 'LLM' | 'TOOL';

export type ToolAccess = Readonly<Record<ToolCallingType, ToolRequirements>>;

export const NO_TOOL_ACCESS: ToolAccess = {
  LLM: { lambdaArns: [], secretNames: [] },
  TOOL: { lambdaArns: [], secretNames: [] },
};

/** Expects validated workflows (subgraphs included: the graph build inlines them). */
export function collectToolAccess(workflows: readonly Workflow[]): ToolAccess {
  const used: Record<ToolCallingType, Record<string, ToolDefinition>> = { LLM: {}, TOOL: {} };
  workflows.forEach((workflow, w) => {
    const graph = buildGraph(workflow);
    const take = (type: ToolCallingType, name: string) => {
      const definition = Object.hasOwn(graph.tools, name) ? graph.tools[name] : undefined;
      // Keyed per workflow: two workflows may declare different tools under one name.
      if (definition) used[type][`${w}/${name}`] = definition;
    };
    for (const node of graph.nodes.values()) {
      if (node.type === 'LLM') for (const name of node.config.tools ?? []) take('LLM', name);
      if (node.type === 'TOOL') take('TOOL', node.config.toolName);
    }
  });
  return { LLM: toolRequirements(used.LLM), TOOL: toolRequirements(used.TOOL) };
}
