/**
 * What a model call costs: list prices per million input and output tokens, for the models the
 * README and docs name and a few common ones, and the arithmetic. A profile's `pricing` overrides the
 * table (a negotiated rate, a model the table lacks, a price that changed); a model with neither has
 * no price: its tokens are counted, its cost is unknown and counts nothing toward `maxCostUsd`.
 *
 * The scripted provider has no model and costs nothing, unless its profile gives `pricing` (what an
 * example would cost on a real model).
 *
 * Costs are counted in integer nano-dollars (1e-9 USD) per call, so sums over a run (the budget
 * counter, DynamoDB ADD) are exact and equal the sum of the steps' costs.
 */
import type { Pricing, Profile } from '../../engine/model/schema.ts';

/** When the prices below were read from the providers' pages (OpenAI API pricing; Bedrock, us-east-1, on demand). */
export const PRICES_AS_OF = '2025-06-01';

/** US dollars per million tokens, by model id. */
export const LIST_PRICES: Readonly<Record<string, Pricing>> = {
  // OpenAI
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
  'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4 },
  // Amazon Bedrock
  'anthropic.claude-3-5-haiku-20241022-v1:0': { inputPerMTok: 0.8, outputPerMTok: 4 },
  'anthropic.claude-3-5-sonnet-20241022-v2:0': { inputPerMTok: 3, outputPerMTok: 15 },
  'anthropic.claude-3-haiku-20240307-v1:0': { inputPerMTok: 0.25, outputPerMTok: 1.25 },
  'amazon.nova-micro-v1:0': { inputPerMTok: 0.035, outputPerMTok: 0.14 },
  'amazon.nova-lite-v1:0': { inputPerMTok: 0.06, outputPerMTok: 0.24 },
  'amazon.nova-pro-v1:0': { inputPerMTok: 0.8, outputPerMTok: 3.2 },
};

const FREE: Pricing = { inputPerMTok: 0, outputPerMTok: 0 };

/**
 * The table's price of a model id: exact, or with OpenAI's dated suffix (`gpt-4o-mini-2024-07-18`),
 * or behind a Bedrock cross-region inference prefix (`us.anthropic.claude-…`).
 */
export function listPriceOf(model: string): Pricing | undefined {
  const candidates = [model, model.replace(/-\d{4}-\d{2}-\d{2}$/, ''), model.replace(/^(us|eu|apac)\./, '')];
  for (const id of candidates) {
    if (Object.hasOwn(LIST_PRICES, id)) return LIST_PRICES[id];
  }
  return undefined;
}

/** A profile's prices: its `pricing`, else the table's for its model; scripted is free; undefined when unknown. */
export function pricingOf(profile: Profile): Pricing | undefined {
  if (profile.pricing !== undefined) return profile.pricing;
  if (profile.provider === 'scripted') return FREE;
  return listPriceOf(profile.model);
}

/** One call's cost in nano-dollars, rounded to the nearest (a call's error is at most half a nano-dollar). */
export function callCostNanoUsd(
  tokens: { readonly promptTokens: number; readonly completionTokens: number },
  pricing: Pricing,
): number {
  // per-token USD = perMTok / 1e6; in nano-USD that is perMTok * 1e3.
  return Math.round(
    tokens.promptTokens * pricing.inputPerMTok * 1e3 + tokens.completionTokens * pricing.outputPerMTok * 1e3,
  );
}

export function nanoToUsd(nano: number): number {
  return nano / 1e9;
}

export function usdToNano(usd: number): number {
  return Math.round(usd * 1e9);
}
