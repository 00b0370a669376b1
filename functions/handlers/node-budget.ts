/**
 * One evaluation budget per node step (engine/expression/budget.ts): everything the step evaluates
 * shares it, across the awaits between its evaluations, and steps running at once in one process (the
 * embedded runtime) each keep their own.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createNodeBudget, findNodeBudgetWith, type NodeBudget } from '../../engine/expression/budget.ts';

const budgets = new AsyncLocalStorage<NodeBudget>();
findNodeBudgetWith(() => budgets.getStore());

/** Runs `step` with a fresh budget for node `nodeId`'s evaluations. */
export function withNodeBudget<T>(nodeId: string, step: () => Promise<T>): Promise<T> {
  return budgets.run(createNodeBudget(nodeId), step);
}
