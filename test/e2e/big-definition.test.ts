/**
 * Definitions that stay small whatever the workflow's text (issue 30, item 9): each Task names its node
 * in the node table, so a long chain of LLM nodes with 2 KB prompts compiles under Step Functions' 1 MiB
 * (inline, its definition was over 4 MB) and runs locally, every prompt read from the table.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileWorkflow, MAX_DEFINITION_BYTES } from '../../engine/asl/index.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('big-definition');
});
afterAll(() => e2e.close());

/**
 * START → `count` LLM nodes, each with its own 2 KB prompt → END. Each Task still costs ~700 bytes of
 * graph (its Retry, Catch and function ARN), so about 1,490 such nodes fit in 1 MiB.
 */
function promptChain(count: number) {
  const middle = Array.from({ length: count }, (_unused, i) => ({
    id: `s${i}`,
    type: 'LLM',
    config: { prompt: `Step ${i}: ${'p'.repeat(2048)}` },
  }));
  const nodes = [{ id: 'start', type: 'START' }, ...middle, { id: 'end', type: 'END' }];
  return valid({
    id: 'prompt-chain',
    version: 1,
    maxSteps: count + 10,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  });
}

describe('a long chain with 2 KB prompts', () => {
  const chain = promptChain(1_400);

  it('compiles under 1 MiB: the prompts are in the node table, not the definition', () => {
    const { definition, definitionBytes, nodeTable } = compileWorkflow(chain);
    expect(definitionBytes).toBeLessThan(MAX_DEFINITION_BYTES);
    expect(Buffer.byteLength(nodeTable.json)).toBeGreaterThan(1_400 * 2048);
    expect(JSON.stringify(definition)).not.toContain('p'.repeat(100));
  });

  it('runs locally, each node given its own prompt', async () => {
    const outcome = await e2e.runtime.prepare(chain).run({}, { noRetryWaits: true });
    expect(outcome.status).toBe('COMPLETED');
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(thread.step).toBe(1_402);
    const messages = await e2e.runtime.conversationOf(thread);
    expect(messages.filter((message) => message.role === 'user').at(-1)?.content).toContain('Step 1399: ppp');
  }, 600_000);
});
