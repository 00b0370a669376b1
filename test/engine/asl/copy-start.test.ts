/**
 * The entry a copied thread starts through (engine/asl/copy-start.ts): every definition's
 * `stepthread:resume-at` has a rule per top-level node but START and JOIN, and `copyStartInput` builds
 * the execution input that reaches the copy's node Task there, or says why it cannot (a definition
 * that fits Step Functions' quota only without those rules has none, and starts no copy).
 */
import { describe, expect, it } from 'vitest';
import { copyStartInput, NO_COPY_STARTS_COMMENT, nodeAfterLastStep } from '../../../engine/asl/copy-start.ts';
import { type AslDefinition, compileWorkflow } from '../../../engine/asl/index.ts';
import { describedCompiled } from '../../../engine/asl/node-table.ts';
import { buildGraph } from '../../../engine/graph/build.ts';
import { inFlightNodeOf } from '../../../engine/graph/in-flight.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { Thread } from '../../../engine/thread/types.ts';
import { promptChainData } from '../../support/prompt-chain.ts';
import {
  awkwardNames,
  everyNodeType,
  forkInLoop,
  loopInFork,
  routesInFork,
  serialWithTimeout,
} from './workflows.ts';

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

describe('the node after a thread’s last step, read from a deployed definition', () => {
  const corpus = { everyNodeType, forkInLoop, loopInFork, routesInFork, awkwardNames, serialWithTimeout };

  it.each(Object.entries(corpus))(
    'is the node the workflow’s graph goes to next, for each node and choice (%s)',
    (_name, workflow) => {
      const graph = buildGraph(workflow);
      const compiled = describedCompiled(compileWorkflow(workflow));
      const topLevel = topLevelNodes(compiled);
      let compared = 0;
      for (const [nodeId, node] of graph.nodes) {
        // A fork branch's nodes run on the branch's thread, inside the FORK's state.
        if (!topLevel.has(nodeId)) continue;
        const transition = graph.transitions.get(nodeId);
        const routes =
          transition?.kind === 'route' ? transition.routes.map((route) => route.targetNodeId) : [undefined];
        for (const route of routes) {
          for (const exit of [undefined, true, false]) {
            const thread = {
              currentNodeId: nodeId,
              metadata: {},
              lastEnvelope: {
                ...envelopeAt(),
                ...(route === undefined ? {} : { route }),
                ...(exit === undefined ? {} : { loop: { exit } }),
                last: { nodeId, status: 'COMPLETED' as const },
              },
            };
            const expected = inFlightNodeOf(graph, thread);
            if (expected === undefined || node.type === 'START' || 'boundary' in node) continue;
            expect([nodeId, route, exit, nodeAfterLastStep(compiled, thread)]).toEqual([
              nodeId,
              route,
              exit,
              expected,
            ]);
            compared += 1;
          }
        }
      }
      expect(compared).toBeGreaterThan(0);
    },
  );

  it('goes from START to the first node, and from a question on past its answer', () => {
    const at = (nodeId: string, choices: object = {}) => ({
      currentNodeId: nodeId,
      metadata: {},
      lastEnvelope: { ...envelopeAt(), ...choices, last: { nodeId, status: 'COMPLETED' as const } },
    });
    expect(nodeAfterLastStep(definition, at('start'))).toBe('count');
    expect(nodeAfterLastStep(definition, at('confirm'))).toBe('tidy');
  });

  it('is none after a failed step, a FORK, END, on a fork branch, or without a step', () => {
    const at = (nodeId: string, status: 'COMPLETED' | 'FAILED' = 'COMPLETED', metadata = {}) => ({
      currentNodeId: nodeId,
      metadata,
      lastEnvelope: { ...envelopeAt(), last: { nodeId, status } },
    });
    expect(nodeAfterLastStep(definition, at('count', 'FAILED'))).toBeUndefined();
    expect(nodeAfterLastStep(definition, at('split'))).toBeUndefined();
    expect(nodeAfterLastStep(definition, at('end'))).toBeUndefined();
    expect(nodeAfterLastStep(definition, at('count', 'COMPLETED', { forkPathId: 'left' }))).toBeUndefined();
    expect(nodeAfterLastStep(definition, { currentNodeId: 'count', metadata: {} })).toBeUndefined();
  });
});

/** The nodes whose Tasks are top-level states of the definition. */
function topLevelNodes(of: AslDefinition): Set<string> {
  const ids = new Set<string>();
  for (const state of Object.values(of.States)) {
    if (state.Type !== 'Task') continue;
    const parameters = state.Parameters as { Payload?: { node?: { id?: unknown } }; node?: { id?: unknown } };
    const id = (parameters.Payload ?? parameters).node?.id;
    if (typeof id === 'string') ids.add(id);
  }
  return ids;
}

function envelopeAt() {
  return {
    executionId: 'e-1',
    workflowId: 'w',
    workflowVersion: 1,
    rootThreadId: 't-1',
    threadId: 't-1',
    step: 3,
    maxSteps: 100,
  };
}
