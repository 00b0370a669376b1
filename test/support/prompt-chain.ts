/**
 * The workflow of issue 30's "done when": START → `count` LLM nodes, each with its own 2 KB prompt →
 * END, answered by a scripted profile. Plain data (no vitest), so the cloud suite's workflow folder
 * (test/cloud/workflows.ts) and the e2e test (test/e2e/big-definition.test.ts) share it.
 */
export function promptChainData(count: number, id = 'prompt-chain'): Record<string, unknown> {
  const middle = Array.from({ length: count }, (_unused, i) => ({
    id: `s${i}`,
    type: 'LLM',
    config: { prompt: `Step ${i}: ${'p'.repeat(2048)}` },
  }));
  const nodes = [{ id: 'start', type: 'START' }, ...middle, { id: 'end', type: 'END' }];
  return {
    id,
    version: 1,
    maxSteps: count + 10,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}
