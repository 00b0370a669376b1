/**
 * Definitions that stay small whatever the workflow's text (issue 30, item 9, done when "a 2,000-node
 * chain with 2 KB prompts compiles under 1 MiB, runs locally and on moto"): each Task names its node in
 * the node table, so the chain's definition holds the graph alone (inline, it was over 5 MB), and each
 * node's Task is 507 bytes of it (and a copy entry's rule 64 more, left out when they do not fit). It runs locally, every prompt read from the table; on moto in the
 * cloud suite (test/cloud/cloud.suite.ts), its definition deployed from S3.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_RESUME_POINT_STATE, RESUME_AT_STATE } from '../../engine/asl/continuation.ts';
import { NO_COPY_STARTS_COMMENT } from '../../engine/asl/copy-start.ts';
import { compileWorkflow, MAX_DEFINITION_BYTES } from '../../engine/asl/index.ts';
import type { AslChoiceState, AslDefinition } from '../../engine/asl/types.ts';
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
function resumeAt(definition: AslDefinition): AslChoiceState {
  return definition.States[RESUME_AT_STATE] as AslChoiceState;
}

function promptChain(count: number) {
  return valid(promptChainData(count));
}

describe('a long chain with 2 KB prompts', () => {
  const chain = promptChain(2_000);

  it('compiles under 1 MiB: the prompts are in the node table, not the definition', () => {
    const { definition, definitionBytes, nodeTable } = compileWorkflow(chain);
    expect(definitionBytes).toBeLessThan(MAX_DEFINITION_BYTES);
    // 507 bytes a node (the chain's Tasks are all alike but for their ids), and 64 more for the copy
    // entry's rule while the rules fit: 1,000 nodes have them, 2,000 do not (1,836 would).
    const smaller = compileWorkflow(promptChain(1_000));
    const oneNode = compileWorkflow(promptChain(1_001)).definitionBytes - smaller.definitionBytes;
    expect(oneNode).toBeLessThanOrEqual(507 + 54 + 2 * 'sNNNN'.length);
    expect(resumeAt(smaller.definition).Choices).toHaveLength(1_001);
    // One rule still (Step Functions refuses an empty Choices), to the no-resume-point Fail.
    expect(resumeAt(definition)).toMatchObject({
      Comment: NO_COPY_STARTS_COMMENT,
      Choices: [{ Variable: '$.resumeAt', IsPresent: true, Next: NO_RESUME_POINT_STATE }],
    });
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
