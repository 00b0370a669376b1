/**
 * One evaluation budget per node step (issue 31 item 3): each expression had its own, so a ROUTE with
 * 100 conditions, a CODE node with 100 inputs or 100 hooks ran for 30 s and more — past a ROUTE or
 * VARIABLE Lambda's timeout. Now everything a node step evaluates (conditions, a VARIABLE's
 * expression, CODE inputs, hooks, templates, END output) shares MAX_NODE_WORK units, and the step
 * that spends them fails with EXPRESSION_BUDGET_EXCEEDED naming its node. Counts and codes only:
 * the time it takes is measured in bench/expressions.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EVALUATION_WORK, MAX_NODE_WORK } from '../../engine/expression/limits.ts';
import type { WorkflowNode } from '../../engine/model/schema.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('node-budget');
});
afterAll(() => e2e.close());

const TEXT_LENGTH = 100_000;
const input = { s: 'a'.repeat(TEXT_LENGTH) };
/** Fifteen replaces of `input.s` (each reads and builds its length): 3M units, inside one evaluation's 10M. */
const REPLACES = 15;
const HEAVY = `len(json([${Array.from({ length: REPLACES }, () => "len(replace(input.s, 'a', 'b'))").join(', ')}]))`;
/** Enough heavy evaluations to pass the node's budget, none of them past its own. */
const COUNT = 12;

const heavyHooks = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    hookType: 'BEFORE_EXECUTE' as const,
    eventName: `seen-${i}`,
    eventPayload: { size: `{{ ${HEAVY} }}` },
  }));

/** START → the node → END (the node may route to it). */
function around(node: WorkflowNode) {
  return valid({
    id: `budget-${node.id}`,
    version: 1,
    variables: [{ name: 'v', type: 'number', scope: 'thread', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      node,
      ...(node.type === 'END' ? [] : [{ id: 'end', type: 'END' }]),
    ],
    edges: [
      { from: 'start', to: node.id },
      ...(node.type === 'END' || node.type === 'ROUTE' ? [] : [{ from: node.id, to: 'end' }]),
    ],
  });
}

/** Each node type that evaluates, with `count` heavy evaluations in one step. */
const NODES: Record<string, (count: number) => WorkflowNode> = {
  'ROUTE conditions': (count) => ({
    id: 'pick',
    type: 'ROUTE',
    config: {
      routes: Array.from({ length: count }, () => ({ condition: `${HEAVY} < 0`, targetNodeId: 'end' })),
      defaultTargetNodeId: 'end',
    },
  }),
  'CODE inputs': (count) => ({
    id: 'compute',
    type: 'CODE',
    config: {
      code: 'return Object.keys(input).length',
      inputs: Object.fromEntries(Array.from({ length: count }, (_, i) => [`n${i}`, HEAVY])),
    },
  }),
  // The hooks spend the budget; the VARIABLE's own expression is what ends the step.
  'hooks, then a VARIABLE': (count) => ({
    id: 'set',
    type: 'VARIABLE',
    config: { variableName: 'v', variableType: 'number', expression: HEAVY },
    hooks: heavyHooks(count - 1),
  }),
  'hook templates, then END output': (count) => ({
    id: 'end',
    type: 'END',
    config: { output: { size: `{{ ${HEAVY} }}` } },
    hooks: heavyHooks(count - 1),
  }),
};

describe('one evaluation budget per node step', () => {
  it('spends what one heavy evaluation costs well inside one evaluation, and the node budget in a few', () => {
    const units = REPLACES * 2 * TEXT_LENGTH;
    expect(units).toBeLessThan(MAX_EVALUATION_WORK / 2);
    expect(units * COUNT).toBeGreaterThan(MAX_NODE_WORK);
    expect(units * 2).toBeLessThan(MAX_NODE_WORK);
  });

  for (const [name, node] of Object.entries(NODES)) {
    it(`${name}: ${COUNT} heavy evaluations in one step fail the node with EXPRESSION_BUDGET_EXCEEDED; 2 pass`, async () => {
      const failed = await e2e.runtime.prepare(around(node(COUNT))).run(input);
      const nodeId = node(COUNT).id;
      expect({ status: failed.status, error: failed.error }).toMatchObject({
        status: 'FAILED',
        error: { code: 'EXPRESSION_BUDGET_EXCEEDED', nodeId },
      });
      expect(failed.error?.message).toContain(`node ${nodeId}`);
      const passed = await e2e.runtime.prepare(around(node(2))).run(input);
      expect({ status: passed.status, error: passed.error }).toEqual({
        status: 'COMPLETED',
        error: undefined,
      });
    }, 120_000);
  }
});
