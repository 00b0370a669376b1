/**
 * The entry a copied thread starts through (engine/asl/copy-start.ts): every definition's
 * `stepthread:resume-at` has a rule per top-level node but START and JOIN, and `copyStartInput` builds
 * the execution input that reaches the copy's node Task there, or says why it cannot (a definition
 * that fits Step Functions' quota only without those rules has none, and starts no copy).
 */
import { describe, expect, it } from 'vitest';
import { copyStartInput, NO_COPY_STARTS_COMMENT } from '../../../engine/asl/copy-start.ts';
import { type AslDefinition, compileWorkflow } from '../../../engine/asl/index.ts';
import { describedCompiled } from '../../../engine/asl/node-table.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { Thread } from '../../../engine/thread/types.ts';
import { promptChainData } from '../../support/prompt-chain.ts';
import { everyNodeType } from './workflows.ts';

// Its nodes described from its node table, as the deployed readers see it.
const definition = describedCompiled(compileWorkflow({ ...everyNodeType, budget: { maxToolCalls: 5 } }));

function copyAt(
  nodeId: string | undefined,
  step = 7,
): Pick<Thread, 'id' | 'workflowId' | 'workflowVersion' | 'currentNodeId' | 'step'> {
  return {
    id: 't-copy',
    workflowId: 'every-node-type',
    workflowVersion: 1,
    step,
    ...(nodeId ? { currentNodeId: nodeId } : {}),
  };
}

function resumeAtRules(of: AslDefinition): string[] {
  const state = of.States['stepthread:resume-at'];
  if (state?.Type !== 'Choice') throw new Error('no stepthread:resume-at Choice');
  return state.Choices.map((rule) => ('StringEquals' in rule ? String(rule.StringEquals) : '?'));
}

describe('the copy entry in every definition', () => {
  it('has one resume-at rule per top-level node but START and JOIN (fork branches run inside their FORK)', () => {
    const rules = resumeAtRules(definition);
    expect(rules).toEqual(
      expect.arrayContaining(['count', 'calc', 'ask', 'call', 'confirm', 'pick', 'each', 'split', 'end']),
    );
    expect(rules).not.toContain('start');
    expect(rules).not.toContain('merge');
    expect(rules).not.toContain('l1');
    expect(rules).not.toContain('r1');
    // Nodes a subgraph inlines run at the top level: a copy from a step inside one runs from there.
    expect(rules).toContain('nested.bump');
  });

  it('builds the input that claims the copy and jumps to its node, with the workflow’s step limit and budget', () => {
    expect(copyStartInput(definition, copyAt('ask'), { maxTokens: 100 })).toEqual({
      resume: {
        copy: true,
        at: 'ask',
        node: { id: 'ask', type: 'LLM' },
        budget: { maxToolCalls: 5, maxTokens: 100 },
        envelope: {
          executionId: '',
          workflowId: 'every-node-type',
          workflowVersion: 1,
          rootThreadId: 't-copy',
          threadId: 't-copy',
          step: 7,
          maxSteps: expect.any(Number),
        },
      },
    });
    // A waiting USER_INTERACTION starts at its waitForTaskToken Task, named after the node.
    expect(copyStartInput(definition, copyAt('confirm')).resume).toMatchObject({
      at: 'confirm',
      node: { id: 'confirm', type: 'USER_INTERACTION' },
    });
  });

  it.each([
    ['start', 'NODE_NOT_FOUND', /START makes a new run/],
    ['merge', 'NODE_NOT_FOUND', /copy from the FORK/],
    ['l1', 'NODE_NOT_FOUND', /no top-level node/],
    [undefined, 'NODE_NOT_FOUND', /stands at no node/],
  ])('refuses a copy at %s with %s', (nodeId, code, message) => {
    expect(() => copyStartInput(definition, copyAt(nodeId))).toThrow(
      expect.objectContaining({ code, message: expect.stringMatching(message) }),
    );
  });

  it('refuses another workflow’s thread, and a definition deployed before copies could start on it', () => {
    expect(() => copyStartInput(definition, { ...copyAt('ask'), workflowId: 'other' })).toThrow(
      expect.objectContaining({ code: 'INVALID_TASK_INPUT' }),
    );
    const before = structuredClone(definition);
    const resumeAt = before.States['stepthread:resume-at'];
    if (resumeAt?.Type !== 'Choice') throw new Error('no resume-at');
    resumeAt.Choices = [];
    expect(() => copyStartInput(before, copyAt('ask'))).toThrow(
      expect.objectContaining({
        code: 'INVALID_STATE_MACHINE',
        message: expect.stringMatching(/deploy the workflow again/),
      }),
    );
  });
});

describe('a definition that fits the quota only without the copy entry’s rules', () => {
  // A 20-node chain given a quota between its size without the rules and its size with them.
  const chain = promptChainData(20) as unknown as Workflow;
  const withRules = compileWorkflow(chain).definitionBytes;
  const compiled = compileWorkflow(chain, { maxDefinitionBytes: withRules - 1 });
  const small = describedCompiled(compiled);

  it('compiles without them and says so in resume-at', () => {
    // 20 rules of about 62 bytes out; the Comment and the one rule left in.
    expect(compiled.definitionBytes).toBeLessThan(withRules - 1_000);
    // One rule still (Step Functions refuses an empty Choices), to the no-resume-point Fail.
    const resumeAt = small.States['stepthread:resume-at'];
    expect(resumeAt).toEqual({
      Type: 'Choice',
      Comment: NO_COPY_STARTS_COMMENT,
      Choices: [{ Variable: '$.resumeAt', IsPresent: true, Next: 'stepthread:no-resume-point' }],
      Default: 'stepthread:no-resume-point',
    });
  });

  it('refuses to start a copy on it with DEFINITION_TOO_LARGE, naming the local run', () => {
    expect(() => copyStartInput(small, { ...copyAt('s3'), workflowId: 'prompt-chain' })).toThrow(
      expect.objectContaining({
        code: 'DEFINITION_TOO_LARGE',
        message: expect.stringMatching(
          /starts no copies: .*1,048,576 bytes.*run <workflow file> --thread t-copy/,
        ),
      }),
    );
  });

  it('is refused whole when it does not fit even without them', () => {
    expect(() => compileWorkflow(chain, { maxDefinitionBytes: compiled.definitionBytes - 1 })).toThrow(
      expect.objectContaining({ code: 'DEFINITION_TOO_LARGE' }),
    );
  });
});
