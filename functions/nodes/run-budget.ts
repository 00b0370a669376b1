/**
 * A step's side of the run's budget (README "Cost and limits"): before each model call, the run's
 * spend is read and the call refused once a token or cost limit is reached; after it, its tokens and
 * cost are added to the run's counters (atomic, shared by every branch) and the node fails when the
 * call took the run past a limit — the call that crosses it finishes, nothing after it starts. A tool
 * call is counted before it runs and refused once `maxToolCalls` is spent. The step that takes a
 * count past 80% of its limit records BUDGET_WARNING (one step does, for each limit).
 *
 * What is over: a count above its limit. A count equal to it is spent: the next call is refused.
 *
 * A run with no budget (the common case) reads no spend: the start that knows it has none marks its
 * root head `noBudget` (see `budgetMarkOf`), and every step loads that head anyway (a child's step in
 * the same BatchGetItem as its own). A head without the mark (a budget, or a start that did not say)
 * reads, so a missing mark costs a read, never a check. Each model call reads afresh, even in a tool
 * loop: the spend the previous call returned may be stale by the tools run since, and a parallel
 * branch's call counted meanwhile must stop this one before it starts, as the single read does.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent, type EventOf } from '../../engine/events.ts';
import { type Budget, budgetSchema, type Pricing, type Profile } from '../../engine/model/schema.ts';
import type { ModelUsage, ThreadMetadata } from '../../engine/thread/types.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import type { StepContext } from '../handlers/pipeline.ts';
import { callCostNanoUsd, nanoToUsd, pricingOf, usdToNano } from '../llm/prices.ts';
import type { LlmProvider } from '../llm/provider.ts';
import type { ExecuteTool } from '../llm/tool-loop.ts';
import type { RunSpend, SpendStore } from '../stores/spend-store.ts';

export const BUDGET_WARNING_FRACTION = 0.8;

export type BudgetName = keyof Budget;
export type BudgetWarning = EventOf<'BUDGET_WARNING'>;

interface Where {
  readonly rootThreadId: string;
  readonly threadId: string;
  readonly workflowId: string;
  readonly nodeId: string;
  readonly at: string;
}

/** Each limit of a budget with the spend it counts, in one unit (cost in nano-dollars). */
function measures(spend: RunSpend): { name: BudgetName; spent: number; limit: number }[] {
  const budget = spend.budget ?? {};
  const out: { name: BudgetName; spent: number; limit: number }[] = [];
  if (budget.maxTokens !== undefined)
    out.push({ name: 'maxTokens', spent: spend.tokens, limit: budget.maxTokens });
  if (budget.maxCostUsd !== undefined) {
    out.push({ name: 'maxCostUsd', spent: spend.costNanoUsd, limit: usdToNano(budget.maxCostUsd) });
  }
  if (budget.maxToolCalls !== undefined) {
    out.push({ name: 'maxToolCalls', spent: spend.toolCalls, limit: budget.maxToolCalls });
  }
  return out;
}

/** How a limit and its spend read in a message and an event. */
function shown(name: BudgetName, nano: number): number {
  return name === 'maxCostUsd' ? nanoToUsd(nano) : nano;
}

function described(name: BudgetName, spent: number): string {
  if (name === 'maxTokens') return `${spent} tokens`;
  if (name === 'maxToolCalls') return `${spent} tool calls`;
  return `$${nanoToUsd(spent).toFixed(6)}`;
}

export function budgetExceeded(
  nodeId: string,
  name: BudgetName,
  spent: number,
  limit: number,
  when: 'before' | 'after',
  what: 'model call' | 'tool call',
): StepthreadError {
  const budget = `${name} ${shown(name, limit)}`;
  const message =
    when === 'before'
      ? `node ${nodeId}: the run's budget ${budget} is spent (${described(name, spent)} so far); the ${what} was not started`
      : `node ${nodeId}: the run's budget ${budget} was exceeded by this node's ${what}: ${described(name, spent)} spent`;
  return new StepthreadError('BUDGET_EXCEEDED', message, { nodeId });
}

export class RunBudget {
  readonly #spend: SpendStore;
  readonly #where: Where;
  readonly #pricing: Pricing | undefined;
  readonly #warnings: BudgetWarning[] = [];
  #usage: ModelUsage | undefined;
  #costNano = 0;
  #priced = true;

  readonly #noBudget: boolean;

  /** `noBudget`: the run's root head says it has none, so no call is checked before it starts. */
  constructor(spend: SpendStore, where: Where, pricing?: Pricing, noBudget = false) {
    this.#spend = spend;
    this.#where = where;
    this.#pricing = pricing;
    this.#noBudget = noBudget;
  }

  /** This step's model calls so far (set once one was made). */
  get usage(): ModelUsage | undefined {
    return this.#usage;
  }

  /** BUDGET_WARNING events this step raised. */
  get warnings(): readonly BudgetWarning[] {
    return this.#warnings;
  }

  /** Throws BUDGET_EXCEEDED when the run's token or cost budget is spent. */
  async beforeModelCall(): Promise<void> {
    if (this.#noBudget) return;
    const spend = await this.#spend.get(this.#where.rootThreadId);
    if (spend === undefined) return;
    for (const { name, spent, limit } of measures(spend)) {
      if (name !== 'maxToolCalls' && spent >= limit) {
        throw budgetExceeded(this.#where.nodeId, name, spent, limit, 'before', 'model call');
      }
    }
  }

  /**
   * Puts a model call this step made before it waited for a tool call's approval on the step's usage:
   * the run's spend counted it then, so it is not counted again.
   */
  countEarlierCall(tokens: { promptTokens: number; completionTokens: number }): void {
    this.#addToStep(tokens);
  }

  #addToStep(tokens: { promptTokens: number; completionTokens: number }): number | undefined {
    const cost = this.#pricing ? callCostNanoUsd(tokens, this.#pricing) : undefined;
    this.#costNano += cost ?? 0;
    if (cost === undefined) this.#priced = false;
    const before = this.#usage;
    this.#usage = {
      modelCalls: (before?.modelCalls ?? 0) + 1,
      inputTokens: (before?.inputTokens ?? 0) + tokens.promptTokens,
      outputTokens: (before?.outputTokens ?? 0) + tokens.completionTokens,
      ...(this.#priced ? { costUsd: nanoToUsd(this.#costNano) } : {}),
    };
    return cost;
  }

  /** Counts a finished model call; throws BUDGET_EXCEEDED when it took the run past a limit. */
  async afterModelCall(tokens: { promptTokens: number; completionTokens: number }): Promise<void> {
    const cost = this.#addToStep(tokens);
    const after = await this.#spend.addModelCall(this.#where.rootThreadId, {
      inputTokens: tokens.promptTokens,
      outputTokens: tokens.completionTokens,
      costNanoUsd: cost,
    });
    const added = { maxTokens: tokens.promptTokens + tokens.completionTokens, maxCostUsd: cost ?? 0 };
    this.#check(after, added, 'model call');
  }

  /** Counts a tool call before it runs; throws BUDGET_EXCEEDED when `maxToolCalls` is spent. */
  async beforeToolCall(): Promise<void> {
    const after = await this.#spend.reserveToolCall(this.#where.rootThreadId);
    if (after === undefined) {
      const spend = await this.#spend.get(this.#where.rootThreadId);
      const limit = spend?.budget?.maxToolCalls ?? 0;
      throw budgetExceeded(
        this.#where.nodeId,
        'maxToolCalls',
        spend?.toolCalls ?? limit,
        limit,
        'before',
        'tool call',
      );
    }
    this.#check(after, { maxToolCalls: 1 }, 'tool call');
  }

  /** A provider that asks the budget before each call. */
  guardProvider(provider: LlmProvider): LlmProvider {
    return {
      complete: async (request) => {
        await this.beforeModelCall();
        return provider.complete(request);
      },
    };
  }

  /** A tool executor that counts each call first; a refused call fails the request (the node). */
  guardTools(execute: ExecuteTool): ExecuteTool {
    return async (name, args, context) => {
      try {
        await this.beforeToolCall();
      } catch (error) {
        if (!(error instanceof StepthreadError)) throw error;
        return { ok: false, content: `${error.code}: ${error.message}`, failsRequest: error };
      }
      return execute(name, args, context);
    };
  }

  /** Warnings for the limits this addition took past 80%; BUDGET_EXCEEDED for one it took past the limit. */
  #check(
    after: RunSpend,
    added: Partial<Record<BudgetName, number>>,
    what: 'model call' | 'tool call',
  ): void {
    let over: { name: BudgetName; spent: number; limit: number } | undefined;
    for (const measure of measures(after)) {
      const delta = added[measure.name];
      if (delta === undefined || delta === 0) continue;
      const { name, spent, limit } = measure;
      const level = limit * BUDGET_WARNING_FRACTION;
      if (spent - delta < level && spent >= level) {
        const { threadId, workflowId, nodeId, at } = this.#where;
        this.#warnings.push(
          createEvent('BUDGET_WARNING', {
            threadId,
            workflowId,
            at,
            nodeId,
            budget: name,
            spent: shown(name, spent),
            limit: shown(name, limit),
          }),
        );
      }
      if (spent > limit) over ??= measure;
    }
    if (over) throw budgetExceeded(this.#where.nodeId, over.name, over.spent, over.limit, 'after', what);
  }
}

/** The step's budget guard, or undefined when the handler has no spend store (hand-built test deps). */
export function runBudgetFor(ctx: StepContext, profile?: Profile): RunBudget | undefined {
  const { deps, envelope, thread, node, rootMetadata } = ctx;
  if (deps.spend === undefined) return undefined;
  const where = {
    rootThreadId: envelope.rootThreadId,
    threadId: thread.id,
    workflowId: thread.workflowId,
    nodeId: node.id,
    at: deps.env.now(),
  };
  const pricing = profile ? pricingOf(profile) : undefined;
  return new RunBudget(deps.spend, where, pricing, rootMetadata.noBudget === true);
}

/**
 * What a start writes on the run's root head beside its other metadata: the `noBudget` mark when the
 * run has no budget, nothing when it has one. Only a start that decided the run's budget writes it.
 */
export function budgetMarkOf(budget: Budget | undefined): Pick<ThreadMetadata, 'noBudget'> {
  return budget === undefined ? { noBudget: true } : {};
}

/**
 * A run's budget: the workflow's, each limit the run gives replacing the workflow's (`run --budget`);
 * undefined when neither sets one. A run's budget that is no budget is INVALID_BUDGET.
 */
export function runBudgetOf(workflow: Budget | undefined, run: unknown, nodeId?: string): Budget | undefined {
  const given = run === undefined ? undefined : parseBudget(run, nodeId);
  const budget = { ...workflow, ...given };
  return Object.keys(budget).length > 0 ? budget : undefined;
}

/** Checks a budget given outside the workflow file (`--budget`, an execution's input). */
export function parseBudget(value: unknown, nodeId?: string): Budget {
  const parsed = budgetSchema.strict().safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const at = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    return `${at}${issue.message}`;
  });
  throw new StepthreadError(
    'INVALID_BUDGET',
    `the budget must be an object of maxTokens (a positive integer), maxCostUsd (a positive number of dollars) and maxToolCalls (a positive integer), each optional: ${problems.join('; ')}`,
    nodeId === undefined ? {} : { nodeId },
  );
}

export function requireSpend(deps: Pick<HandlerDeps, 'spend'>): SpendStore {
  if (deps.spend === undefined) throw new Error('a run with a budget needs the spend store (deps.spend)');
  return deps.spend;
}
