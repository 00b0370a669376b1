/**
 * Only the top-level workflow's `maxSteps` and `budget` count: a SUBGRAPH's steps count on the
 * thread that runs it, its spend toward the run. A child workflow's own would be silently ignored,
 * so `validate` refuses them (UNKNOWN_KEY, as a key put where it is not taken), saying where they go.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function child(id: string, extra: Record<string, unknown> = {}, inner?: Record<string, unknown>) {
  return {
    id,
    version: 1,
    ...extra,
    nodes: [
      { id: 'begin', type: 'START' },
      ...(inner === undefined ? [] : [{ id: 'deeper', type: 'SUBGRAPH', config: { workflow: inner } }]),
      { id: 'finish', type: 'END' },
    ],
    edges:
      inner === undefined
        ? [{ from: 'begin', to: 'finish' }]
        : [
            { from: 'begin', to: 'deeper' },
            { from: 'deeper', to: 'finish' },
          ],
  };
}

/** start → SUBGRAPH `review` running `workflow` → end, with a top-level maxSteps and budget. */
function around(workflow: Record<string, unknown>) {
  return {
    id: 'outer',
    version: 1,
    maxSteps: 50,
    budget: { maxTokens: 1000 },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'review', type: 'SUBGRAPH', config: { workflow } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'review' },
      { from: 'review', to: 'end' },
    ],
  };
}

const MAX_STEPS_MESSAGE =
  "a SUBGRAPH's child workflow takes no \"maxSteps\" (it would be ignored: the child's steps count toward the top-level workflow's maxSteps, on the thread that runs the SUBGRAPH): set maxSteps on the top-level workflow";
const BUDGET_MESSAGE =
  "a SUBGRAPH's child workflow takes no \"budget\" (it would be ignored: the child's model and tool calls count toward the top-level workflow's budget, over the whole run): set budget on the top-level workflow";

describe("a SUBGRAPH's child workflow setting maxSteps or budget", () => {
  it('is refused as UNKNOWN_KEY at the key, naming it and saying it is set on the top-level workflow', () => {
    const workflow = around(child('inner', { maxSteps: 5, budget: { maxCostUsd: 0.1 } }));
    expect(validateWorkflow(workflow).errors).toEqual([
      {
        code: 'UNKNOWN_KEY',
        message: `nodes[1].config.workflow.maxSteps: ${MAX_STEPS_MESSAGE}`,
        path: 'nodes[1].config.workflow.maxSteps',
        nodeId: 'review',
      },
      {
        code: 'UNKNOWN_KEY',
        message: `nodes[1].config.workflow.budget: ${BUDGET_MESSAGE}`,
        path: 'nodes[1].config.workflow.budget',
        nodeId: 'review',
      },
    ]);
  });

  it('is refused in a nested SUBGRAPH, and beside the errors of a child workflow that does not parse', () => {
    const nested = around(child('inner', {}, child('innermost', { maxSteps: 5 })));
    expect(validateWorkflow(nested).errors.map(({ code, path }) => `${code} ${path}`)).toEqual([
      'UNKNOWN_KEY nodes[1].config.workflow.nodes[1].config.workflow.maxSteps',
    ]);
    const broken = around({ ...child('inner', { budget: { maxTokens: 10 } }), version: 'one' });
    expect(validateWorkflow(broken).errors.map(({ code, path }) => `${code} ${path}`)).toEqual([
      'SCHEMA_INVALID nodes[1].config.workflow.version',
      'UNKNOWN_KEY nodes[1].config.workflow.budget',
    ]);
  });

  it('leaves the top-level maxSteps and budget, and a child without them, valid', () => {
    expect(validateWorkflow(around(child('inner'))).errors).toEqual([]);
  });
});
