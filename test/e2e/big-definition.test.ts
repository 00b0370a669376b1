/**
 * Definitions that stay small whatever the workflow's text (issue 30, item 9, done when "a 2,000-node
 * chain with 2 KB prompts compiles under 1 MiB, runs locally and on moto"): each Task names its node in
 * the node table, so the chain's definition holds the graph alone (inline, it was over 5 MB), and each
 * node's Task is 507 bytes of it. It runs locally, every prompt read from the table; on moto in the
 * cloud suite (test/cloud/cloud.suite.ts), its definition deployed from S3.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileWorkflow, MAX_DEFINITION_BYTES } from '../../engine/asl/index.ts';
import { promptChainData } from '../support/prompt-chain.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('big-definition');
});
afterAll(() => e2e.close());

/**
 * START → `count` LLM nodes, each with its own 2 KB prompt → END. Each Task costs 507 bytes of graph
 * (its Retry, Catch and function ARN at its longest), so about 2,060 such nodes fit in 1 MiB.
 */
function promptChain(count: number) {
  return valid(promptChainData(count));
}

describe('a long chain with 2 KB prompts', () => {
  const chain = promptChain(2_000);

  it('compiles under 1 MiB: the prompts are in the node table, not the definition', () => {
    const { definition, definitionBytes, nodeTable } = compileWorkflow(chain);
    expect(definitionBytes).toBeLessThan(MAX_DEFINITION_BYTES);
    // 507 bytes a node: the chain's Tasks are all alike but for their ids.
    const oneNode =
      compileWorkflow(promptChain(1_001)).definitionBytes -
      compileWorkflow(promptChain(1_000)).definitionBytes;
    expect(oneNode).toBeLessThanOrEqual(510);
    expect(Buffer.byteLength(nodeTable.json)).toBeGreaterThan(2_000 * 2048);
    expect(JSON.stringify(definition)).not.toContain('p'.repeat(100));
  });

  it('runs locally, each node given its own prompt', async () => {
    const outcome = await e2e.runtime.prepare(chain).run({}, { noRetryWaits: true });
    expect(outcome.status).toBe('COMPLETED');
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(thread.step).toBe(2_002);
    const messages = await e2e.runtime.conversationOf(thread);
    const prompts = messages.filter((message) => message.role === 'user');
    expect(prompts).toHaveLength(2_000);
    expect(prompts.at(-1)?.content).toContain('Step 1999: ppp');
  }, 600_000);
});
