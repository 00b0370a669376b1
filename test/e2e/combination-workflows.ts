/**
 * Builders for the combination workflows (test/e2e/combinations.test.ts): nodes by kind, edges as
 * chains (`'a>b>c'`), so a workflow that nests forks, loops and subgraphs reads as its graph.
 */

type Config = Record<string, unknown>;
export interface NodeSpec {
  id: string;
  type: string;
  config?: Config;
  hooks?: Config[];
}

export const node = {
  start: (): NodeSpec => ({ id: 'start', type: 'START' }),
  end: (output?: unknown, id = 'end'): NodeSpec => ({
    id,
    type: 'END',
    ...(output === undefined ? {} : { config: { output } }),
  }),
  llm: (id: string, prompt: string, config: Config = {}): NodeSpec => ({
    id,
    type: 'LLM',
    config: { prompt, ...config },
  }),
  set: (id: string, variableName: string, variableType: string, expression: string, config: Config = {}) => ({
    id,
    type: 'VARIABLE',
    config: { variableName, variableType, expression, ...config },
  }),
  fork: (
    id: string,
    forkPathIds: string[],
    childNodeIds: string[],
    forkStrategy: 'parallel' | 'serial' = 'parallel',
    config: Config = {},
  ): NodeSpec => ({ id, type: 'FORK', config: { forkPathIds, forkStrategy, childNodeIds, ...config } }),
  join: (id: string, forkPathIds: string[], joinStrategy: string, config: Config = {}): NodeSpec => ({
    id,
    type: 'JOIN',
    config: { forkPathIds, joinStrategy, ...config },
  }),
  loop: (id: string, loopId: string, config: Config): NodeSpec => ({
    id,
    type: 'LOOP_START',
    config: { loopId, maxIterations: 10, ...config },
  }),
  loopEnd: (id: string, loopId: string, config: Config = {}): NodeSpec => ({
    id,
    type: 'LOOP_END',
    config: { loopId, ...config },
  }),
  route: (id: string, routes: Config[], defaultTargetNodeId?: string): NodeSpec => ({
    id,
    type: 'ROUTE',
    config: { routes, ...(defaultTargetNodeId === undefined ? {} : { defaultTargetNodeId }) },
  }),
  code: (id: string, code: string, config: Config = {}): NodeSpec => ({
    id,
    type: 'CODE',
    config: { code, ...config },
  }),
  context: (id: string, operation: string, options: unknown): NodeSpec => ({
    id,
    type: 'CONTEXT_PROCESSOR',
    config: { operation, [operation]: options },
  }),
  ask: (id: string, userInteractionType: string, config: Config = {}): NodeSpec => ({
    id,
    type: 'USER_INTERACTION',
    config: { userInteractionType, ...config },
  }),
  subgraph: (id: string, workflow: unknown, config: Config = {}): NodeSpec => ({
    id,
    type: 'SUBGRAPH',
    config: { workflow, ...config },
  }),
};

/** `'a>b>c'` chains (several, comma-separated) as edges. */
export function chains(...specs: string[]): { from: string; to: string }[] {
  const edges: { from: string; to: string }[] = [];
  for (const spec of specs) {
    for (const chain of spec.split(',')) {
      const ids = chain.split('>').map((id) => id.trim());
      for (let i = 1; i < ids.length; i++) edges.push({ from: ids[i - 1]!, to: ids[i]! });
    }
  }
  return edges;
}

export interface WorkflowSpec {
  variables?: Config[];
  profiles?: Config;
  /** Replies by node id for the default scripted profile (ignored when `profiles` is given). */
  replies?: Record<string, unknown[]>;
  nodes: NodeSpec[];
  edges: string[];
  [key: string]: unknown;
}

/** A workflow file's data, with a scripted default profile from `replies`. */
export function workflow(id: string, spec: WorkflowSpec): Record<string, unknown> {
  const { replies, nodes, edges, profiles, ...rest } = spec;
  return {
    id,
    version: 1,
    ...rest,
    profiles: profiles ?? { default: { provider: 'scripted', byNode: replies ?? {} } },
    nodes,
    edges: chains(...edges),
  };
}
