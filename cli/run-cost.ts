/**
 * What a run cost, as `inspect`, `runs --json` and dev's API report it: its model calls' tokens and
 * dollars and its tool calls, counted over the whole run (functions/stores/spend-store.ts), beside
 * its budget and how much of each limit is spent; and how a step's or a node's usage reads.
 */
import type { Budget } from '../engine/model/schema.ts';
import type { ModelUsage } from '../engine/thread/types.ts';
import type { RunSpend } from '../functions/stores/spend-store.ts';

export interface RunCost {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  tokens: number;
  /** The priced calls' cost in US dollars. */
  costUsd: number;
  /** Model calls whose model has no price: their cost is not in `costUsd`. */
  unpricedCalls: number;
  toolCalls: number;
  /** The run's budget and, per limit, what is spent of it. */
  budget?: Budget;
  spent?: { [K in keyof Budget]?: { spent: number; limit: number; fraction: number } };
}

const NOTHING: RunSpend = {
  inputTokens: 0,
  outputTokens: 0,
  tokens: 0,
  costNanoUsd: 0,
  modelCalls: 0,
  unpricedCalls: 0,
  toolCalls: 0,
};

/** A run's cost from its spend item (none yet: nothing spent). */
export function runCostOf(spend: RunSpend | undefined): RunCost {
  const s = spend ?? NOTHING;
  const costUsd = s.costNanoUsd / 1e9;
  const budget = s.budget;
  const spent: NonNullable<RunCost['spent']> = {};
  const put = (name: keyof Budget, used: number, limit: number | undefined) => {
    if (limit !== undefined) spent[name] = { spent: used, limit, fraction: used / limit };
  };
  put('maxTokens', s.tokens, budget?.maxTokens);
  put('maxCostUsd', costUsd, budget?.maxCostUsd);
  put('maxToolCalls', s.toolCalls, budget?.maxToolCalls);
  return {
    modelCalls: s.modelCalls,
    inputTokens: s.inputTokens,
    outputTokens: s.outputTokens,
    tokens: s.tokens,
    costUsd,
    unpricedCalls: s.unpricedCalls,
    toolCalls: s.toolCalls,
    ...(budget ? { budget, spent } : {}),
  };
}

/** Dollars to the micro-dollar: model calls cost fractions of a cent. */
export function formatUsd(usd: number): string {
  return `$${usd.toFixed(6)}`;
}

/** `120 tokens (100 in, 20 out), $0.000027`, or `…, no price` for a model without one. */
export function usageText(usage: ModelUsage): string {
  const tokens = `${usage.inputTokens + usage.outputTokens} tokens (${usage.inputTokens} in, ${usage.outputTokens} out)`;
  const calls = usage.modelCalls > 1 ? ` in ${usage.modelCalls} model calls` : '';
  return `${tokens}${calls}, ${usage.costUsd === undefined ? 'no price' : formatUsd(usage.costUsd)}`;
}

/**
 * The lines `inspect` prints for a run's cost and budget; `aws`, the run's AWS side deployed
 * (cli/aws-cost.ts), closes the cost line as ` · aws ≈ $…`.
 */
export function costLines(cost: RunCost, aws?: { usd: number }): string[] {
  const unpriced =
    cost.unpricedCalls > 0 ? ` (${cost.unpricedCalls} call(s) of a model with no price not counted)` : '';
  const deployed = aws === undefined ? '' : ` · aws ≈ ${formatUsd(aws.usd)}`;
  const lines = [
    `cost      ${formatUsd(cost.costUsd)}${unpriced}: ${cost.tokens} tokens (${cost.inputTokens} in, ${cost.outputTokens} out) in ${counted(cost.modelCalls, 'model call')}, ${counted(cost.toolCalls, 'tool call')}${deployed}`,
  ];
  for (const [name, entry] of Object.entries(cost.spent ?? {})) {
    const shown = (n: number) => (name === 'maxCostUsd' ? formatUsd(n) : String(n));
    lines.push(
      `budget    ${name} ${shown(entry.limit)}: ${shown(entry.spent)} spent (${Math.round(entry.fraction * 100)}%)`,
    );
  }
  return lines;
}

function counted(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** Two usages added (a node's runs); cost only while every part has one. */
export function addUsage(a: ModelUsage | undefined, b: ModelUsage): ModelUsage {
  if (a === undefined) return { ...b };
  const costUsd =
    a.costUsd === undefined || b.costUsd === undefined
      ? undefined
      : (Math.round(a.costUsd * 1e9) + Math.round(b.costUsd * 1e9)) / 1e9;
  return {
    modelCalls: a.modelCalls + b.modelCalls,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(costUsd === undefined ? {} : { costUsd }),
  };
}
