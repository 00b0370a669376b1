/**
 * The work budgets of evaluation: one unit per syntax node evaluated, plus the characters and
 * elements each built-in, concatenation, array literal and interpolation reads or builds.
 *
 * - One evaluation, or one template render with all its `{{ }}`, may do MAX_EVALUATION_WORK units.
 * - Everything one node step evaluates — ROUTE conditions, a VARIABLE's expression, CODE inputs, hooks,
 *   prompts and tool arguments, END output — shares its node's budget of MAX_NODE_WORK units, so a node
 *   with a hundred expressions cannot hold its Lambda for a hundred times as long as one.
 *
 * Past either, the evaluation ends with EXPRESSION_BUDGET_EXCEEDED (naming the node for the node's).
 * Evaluation is synchronous, so the active evaluation's budget is module state; a node step spans
 * awaits, so the handler keeps its node's budget per asynchronous context and says where to find it
 * (`findNodeBudgetWith`), keeping this module free of Node's APIs.
 */
import { StepthreadError } from '../errors.ts';
import { MAX_EVALUATION_WORK, MAX_NODE_WORK } from './limits.ts';

/** What one node step may still spend on evaluation. */
export interface NodeBudget {
  readonly nodeId: string;
  readonly limit: number;
  used: number;
}

export function createNodeBudget(nodeId: string, limit = MAX_NODE_WORK): NodeBudget {
  return { nodeId, limit, used: 0 };
}

let nodeBudgetNow: () => NodeBudget | undefined = () => undefined;

/** Where evaluations find the budget of the node step they run in (none: only their own). */
export function findNodeBudgetWith(find: () => NodeBudget | undefined): void {
  nodeBudgetNow = find;
}

let active: { used: number; node: NodeBudget | undefined } | undefined;

/** Runs `fn` within the active budget, or a fresh one (charged to the node's too) when none is active. */
export function withBudget<T>(fn: () => T): T {
  if (active !== undefined) return fn();
  active = { used: 0, node: nodeBudgetNow() };
  try {
    return fn();
  } finally {
    active = undefined;
  }
}

/** Spends `units` of the active budget and its node's (none outside an evaluation). */
export function charge(units: number): void {
  if (active === undefined) return;
  active.used += units;
  if (active.used > MAX_EVALUATION_WORK) {
    throw new StepthreadError(
      'EXPRESSION_BUDGET_EXCEEDED',
      `the expression or template did more than ${MAX_EVALUATION_WORK.toLocaleString('en-US')} units of work (syntax nodes evaluated plus characters and elements read and built); simplify it or do the work in a CODE node`,
    );
  }
  const { node } = active;
  if (node === undefined) return;
  node.used += units;
  if (node.used > node.limit) {
    throw new StepthreadError(
      'EXPRESSION_BUDGET_EXCEEDED',
      `node ${node.nodeId}: its expressions and templates together did more than ${node.limit.toLocaleString('en-US')} units of work in one step (conditions, inputs, hooks, prompts, arguments and output share one budget); evaluate less in this node, or do the work in a CODE node`,
      { nodeId: node.nodeId },
    );
  }
}

/** An element or key costs more than a character to copy and compare (measured: bench/expressions.ts). */
const ELEMENT_UNITS = 8;

/** Units for reading or building `value`: its characters, or its elements or keys (shallow). */
export function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.length * ELEMENT_UNITS;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length * ELEMENT_UNITS;
  return 1;
}
